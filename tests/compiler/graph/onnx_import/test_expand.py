"""Expand whose target shape is computed in the graph from an input's shape (Shape -> Gather /
Slice / arithmetic -> Unsqueeze -> Concat -> Expand, as exporters write ``x.expand(...)`` and
``expand_as``): the shape subgraph folds at import (the input shapes are static, or bound with
``shapes=``), leaving one ``expand`` node or none, checked on the numpy reference and on llvm
against onnxruntime at opsets 13-21. A shape computed from an input's values stays refused."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from support.onnx_models import feeds_for, model, reference  # noqa: E402

from vdla.compiler.graph import GraphError, run  # noqa: E402
from vdla.compiler.graph.executor import compile_model  # noqa: E402
from vdla.compiler.graph.onnx_import import from_onnx  # noqa: E402

N = helper.make_node
I64, F32 = np.int64, np.float32
SHAPE_OPS = {"Shape", "Gather", "Unsqueeze", "Concat", "Slice", "Mul", "Equal", "Where", "ConstantOfShape", "Constant"}


def _i(*v: int) -> np.ndarray:
    return np.array(v, I64)


def _c(name: str, value: np.ndarray) -> Any:
    return N("Constant", [], [name], value=numpy_helper.from_array(value))


@dataclass
class Case:
    name: str
    nodes: list[Any]
    inputs: dict[str, Any]
    inits: dict[str, np.ndarray] = field(default_factory=dict)
    ops: tuple[str, ...] = ("expand",)  # the graph ops left after import
    opsets: tuple[int, ...] = (13, 16, 18, 21)

    def build(self, opset: int) -> Any:
        return model(self.nodes, self.inputs, opset, ("y",), self.inits, name=self.name)


CASES = [
    # a learned (1, C, W) table expanded to x's batch: torch's ``p.expand(x.size(0), -1, -1)``
    Case("batch_from_shape", [N("Shape", ["x"], ["s"]), N("Gather", ["s", "i0"], ["b"], axis=0),
                              N("Unsqueeze", ["b", "ax0"], ["bu"]), N("Concat", ["bu", "tail"], ["shp"], axis=0),
                              N("Expand", ["p", "shp"], ["e"]), N("Add", ["e", "x"], ["y"])],
         {"x": (2, 3, 4)}, {"i0": np.array(0, I64), "ax0": _i(0), "tail": _i(3, 4),
                            "p": np.random.default_rng(0).standard_normal((1, 3, 4)).astype(F32)},
         ops=("add",)),  # the expanded constant folds too; the add broadcasts
    # x expanded to another input's shape: ``x.expand_as(z)``
    Case("expand_as", [N("Shape", ["z"], ["s"]), N("Expand", ["x", "s"], ["y"])], {"x": (3, 1), "z": (2, 3, 4)}),
    # the shape of a computed value, sliced, with a new leading axis of the product of two extents
    Case("computed_value", [N("Relu", ["x"], ["r"]), N("Shape", ["r"], ["s"]),
                            N("Slice", ["s", "st", "en"], ["s01"]), N("ReduceProd", ["s01"], ["n"], keepdims=1),
                            N("Concat", ["n", "s01"], ["shp"], axis=0), N("Expand", ["r", "shp"], ["y"])],
         {"x": (3, 1)}, {"st": _i(0), "en": _i(2)}, ops=("relu", "expand"), opsets=(13, 18, 21)),
    # torch's ``x.expand(-1, 4, -1)``: -1 (keep) replaced through Equal / Where on constants
    Case("torch_keep_dims", [_c("want", _i(-1, 4, -1)), N("Equal", ["want", "m1"], ["keep"]),
                             N("Where", ["keep", "ones", "want"], ["shp"]), N("Expand", ["x", "shp"], ["y"])],
         {"x": (2, 1, 3)}, {"m1": np.array(-1, I64), "ones": _i(1, 1, 1)}),
    # Shape's start/end (opset 15) and arithmetic on an extent: (2 * W,) halves broadcast against x
    # (the Expand to x's own shape is no node)
    Case("shape_start_end_arith", [N("Shape", ["x"], ["s"], start=-1), N("Mul", ["s", "two"], ["w2"]),
                                   N("ConstantOfShape", ["w2"], ["z"],
                                     value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5])),
                                   N("Shape", ["x"], ["lead"], start=0, end=-1), N("Concat", ["lead", "one"], ["sx"], axis=0),
                                   N("Expand", ["x", "sx"], ["xe"]), N("Tile", ["xe", "reps"], ["xt"]),
                                   N("Add", ["xt", "z"], ["y"])],
         {"x": (2, 3)}, {"two": np.array(2, I64), "one": _i(1), "reps": _i(1, 2)}, ops=("concat", "add"),
         opsets=(16, 18, 21)),
    # a shape of ones against a larger input (bidirectional broadcast) and fewer dims than the input
    Case("ones_and_fewer_dims", [N("Expand", ["x", "s"], ["y"])], {"x": (2, 3, 1)}, {"s": _i(1, 5)}),
]


def _params():
    for c in CASES:
        for opset in c.opsets:
            yield pytest.param(c, opset, id=f"{c.name}-opset{opset}")


def _check(g: Any, feeds: dict[str, np.ndarray], want: list[Any], llvm: bool) -> None:
    runs = [run(g, feeds)] + ([compile_model(g, target="llvm").run(feeds).outputs] if llvm else [])
    for got in runs:
        for a, b in zip(got, want, strict=True):
            assert a.shape == np.asarray(b).shape
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case, opset", list(_params()))
def test_expand_to_a_shape_computed_from_shapes_matches_onnxruntime(case: Case, opset: int) -> None:
    m = case.build(opset)
    feeds = feeds_for(case.inputs, opset)
    want, source = reference(m, feeds)
    assert source == "onnxruntime"
    g = from_onnx(m)
    assert tuple(n.op for n in g.nodes) == case.ops, str(g)  # the shape subgraph folded at import
    _check(g, feeds, want, llvm=opset == case.opsets[-1])


def test_a_bound_dynamic_dimension_folds_too() -> None:
    """A batch declared 'N' and bound with ``shapes=`` (the CLI's ``--shape``) folds like a static one."""
    nodes = CASES[0].nodes
    m = model(nodes, {}, 17, ("y",), CASES[0].inits)
    m.graph.input.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4]))
    feeds = feeds_for({"x": (5, 3, 4)}, 0)
    want, _ = reference(m, feeds)
    g = from_onnx(m, shapes={"x": (5, 3, 4)})
    _check(g, feeds, want, llvm=True)


@pytest.mark.parametrize("inputs, nodes, inits, msg", [
    # the target shape is data: the output's shape would depend on an input's values
    ({"x": (3, 1), "s": np.zeros(2, I64)}, [N("Expand", ["x", "s"], ["y"], name="ex")], {},
     r"ONNX Expand \(opset 17\) at node 'ex': the shape \(input 1\) must be a constant \(or computable at import\)"),
    ({"x": (3, 1), "v": (2,)}, [N("Cast", ["v"], ["vi"], to=TensorProto.INT64), N("Expand", ["x", "vi"], ["y"], name="ex")],
     {}, r"ONNX Expand \(opset 17\) at node 'ex': the shape \(input 1\) must be a constant"),
    # a shape that does not broadcast with the input's
    ({"x": (3, 2)}, [N("Expand", ["x", "s"], ["y"], name="ex")], {"s": _i(4, 3)},
     r"ONNX Expand \(opset 17\) at node 'ex': .*float32\[3,2\] does not broadcast to \(4, 3\)"),
])
def test_refusals_name_the_node(inputs: dict, nodes: list, inits: dict, msg: str) -> None:
    with pytest.raises(GraphError, match=msg):
        from_onnx(model(nodes, inputs, 17, ("y",), inits))
