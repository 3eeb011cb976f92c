"""ScatterND as exporters write it (``x[:, 1] = v``, masks built in place): ``reduction="none"``
spelled out from opset 16, int64 index tuples that are constants, computed from constants or
from an input's shape (folded at import), or run-time inputs; checked on the numpy reference and
on llvm against onnxruntime at opsets 13-21, and in a model compiled for VDLA (a CPU node there)
through ``vdla run``. Reductions and constant indices out of range are refused naming the node."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import helper, numpy_helper  # noqa: E402
from support.onnx_models import model, reference  # noqa: E402

from vdla.compiler.graph import GraphError, run  # noqa: E402
from vdla.compiler.graph.executor import compile_model  # noqa: E402
from vdla.compiler.graph.onnx_import import from_onnx  # noqa: E402

N = helper.make_node
I64, F32 = np.int64, np.float32
OPSETS = (13, 16, 18, 21)


def _i(*v: Any) -> np.ndarray:
    return np.array(v, I64)


def _c(name: str, value: np.ndarray) -> Any:
    return N("Constant", [], [name], value=numpy_helper.from_array(value))


def _f(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(F32)


@dataclass
class Case:
    name: str
    nodes: list[Any]  # the last one is the ScatterND; it gets reduction="none" from opset 16
    inputs: dict[str, np.ndarray]
    inits: dict[str, np.ndarray] = field(default_factory=dict)
    ops: tuple[str, ...] = ("scatter_nd",)  # the graph ops left after import

    def build(self, opset: int) -> Any:
        nodes = list(self.nodes)
        if opset >= 16:
            last = nodes[-1]
            nodes[-1] = N(last.op_type, list(last.input), list(last.output), reduction="none")
        return model(nodes, self.inputs, opset, ("y",), self.inits, name=self.name)


CASES = [
    # whole rows at constant index tuples built by Constant -> Unsqueeze
    Case("rows_from_constants", [_c("i0", _i(2, 0)), N("Unsqueeze", ["i0", "ax"], ["i"]),
                                 N("ScatterND", ["x", "i", "u"], ["y"])],
         {"x": _f(4, 5, 3), "u": _f(2, 5, 3, seed=1)}, {"ax": _i(1)}),
    # single elements, tuples concatenated from two constant columns, one negative
    Case("elements_from_concat", [_c("r", _i([0], [3], [-1])), _c("c", _i([4], [0], [2])),
                                  N("Concat", ["r", "c"], ["i"], axis=1), N("ScatterND", ["x", "i", "u"], ["y"])],
         {"x": _f(4, 5), "u": _f(3, seed=2)}),
    # torch's ``x[:, 1] = u``: the index tuples (b, 1) for every batch row, from x's shape
    Case("torch_setitem", [N("Shape", ["x"], ["s"]), N("Gather", ["s", "z"], ["n"]),
                           N("Range", ["zero", "n", "one"], ["r"]), N("Unsqueeze", ["r", "ax1"], ["ru"]),
                           N("Shape", ["ru"], ["rs"]), N("Expand", ["col", "rs"], ["ce"]),
                           N("Concat", ["ru", "ce"], ["i"], axis=1), N("ScatterND", ["x", "i", "u"], ["y"])],
         {"x": _f(3, 4, 2), "u": _f(3, 2, seed=3)},
         {"z": np.array(0, I64), "zero": np.array(0, I64), "one": np.array(1, I64), "ax1": _i(1), "col": _i([1])}),
    # run-time int64 index tuples (a batch of them: indices of rank 3), fed as int64
    Case("runtime_indices", [N("ScatterND", ["x", "i", "u"], ["y"])],
         {"x": _f(4, 5), "i": _i([[0, 1], [3, 4]], [[2, 2], [-1, 0]]), "u": _f(2, 2, seed=4)}),
    # constant data (a mask being built), run-time updates
    Case("constant_data", [N("ScatterND", ["d", "i", "u"], ["y"])], {"u": _f(2, 3, seed=5)},
         {"d": np.zeros((4, 3), F32), "i": _i([3], [1])}),
    # int64 data: computed in int32 (a host step on llvm)
    Case("int64_data", [N("ScatterND", ["x", "i", "u"], ["y"])],
         {"x": _i([1, 2, 3], [4, 5, 6]), "u": _i(-7, 2**20)}, {"i": _i([1, 2], [0, 0])}),
]


def _params():
    for c in CASES:
        for opset in OPSETS:
            yield pytest.param(c, opset, id=f"{c.name}-opset{opset}")


@pytest.mark.parametrize("case, opset", list(_params()))
def test_scatter_nd_matches_onnxruntime(case: Case, opset: int) -> None:
    m = case.build(opset)
    want, source = reference(m, case.inputs)
    assert source == "onnxruntime"
    g = from_onnx(m)
    assert tuple(n.op for n in g.nodes) == case.ops, str(g)  # index arithmetic folded at import
    runs = [run(g, case.inputs)]
    if opset == OPSETS[-1]:
        runs.append(compile_model(g, target="llvm").run(case.inputs).outputs)
    for got in runs:
        np.testing.assert_array_equal(got[0], np.asarray(want[0]))


def test_scatter_nd_in_a_vdla_model_through_vdla_run(tmp_path, capsys) -> None:
    """Two convs on VDLA, then a ScatterND on the CPU overwriting two channels with the first two of
    the result: bit-exact against the int8 reference, the fp32 path against onnxruntime."""
    from vdla.cli import main

    rng = np.random.default_rng(6)
    nodes = [N("Conv", ["x", "w1"], ["c1"], pads=[1] * 4), N("Relu", ["c1"], ["r1"]),
             N("Conv", ["r1", "w2"], ["c2"], pads=[1] * 4), N("Relu", ["c2"], ["a"]),
             N("Slice", ["a", "st", "en", "axs"], ["head"]), N("Reshape", ["head", "hs"], ["u"]),
             _c("i", _i([0, 3], [0, 7])), N("ScatterND", ["a", "i", "u"], ["y"], reduction="none")]
    inits = {"w1": (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(F32),
             "w2": (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(F32),
             "st": _i(0), "en": _i(2), "axs": _i(1), "hs": _i(2, 8, 8)}
    p = tmp_path / "scatter.onnx"
    onnx.save(model(nodes, {"x": (1, 16, 8, 8)}, 18, ("y",), inits), str(p))
    assert main(["run", str(p), "-q"]) == 0
    out = capsys.readouterr().out
    assert "int8 output vs numpy int8 reference: PASS" in out and "fp32 CPU path vs onnxruntime: PASS" in out, out
    assert any(" scatter_nd " in line and " llvm " in line for line in out.splitlines()), out


@pytest.mark.parametrize("nodes, inits, msg", [
    ([N("ScatterND", ["x", "i", "u"], ["y"], name="sc", reduction="add")], {"i": _i([1], [2])},
     r"ONNX ScatterND \(opset 18\) at node 'sc': unsupported attribute reduction='add' \(none only\)"),
    ([N("ScatterND", ["x", "i", "u"], ["y"], name="sc")], {"i": _i([1], [4])},
     r"ONNX ScatterND \(opset 18\) at node 'sc': index tuple \[4\] \(indices\[1\]\) is out of range for data of "
     r"shape \[4, 5\] \(1 such tuple\)"),
    ([N("ScatterND", ["x", "i", "u"], ["y"], name="sc")], {"i": _i([-5], [-6])},
     r"at node 'sc': index tuple \[-5\] \(indices\[0\]\) is out of range .* \(2 such tuples\)"),
])
def test_refusals_name_the_node(nodes: list, inits: dict, msg: str) -> None:
    with pytest.raises(GraphError, match=msg):
        from_onnx(model(nodes, {"x": (4, 5), "u": (2, 5)}, 18, ("y",), inits))


def test_a_runtime_index_out_of_range_is_named_by_the_reference() -> None:
    g = from_onnx(CASES[3].build(18))
    bad = {**CASES[3].inputs, "i": _i([[0, 1], [3, 5]], [[2, 2], [-1, 0]])}
    with pytest.raises(GraphError, match=r"scatter_nd: an index is out of range for the first 2 axes of \(4, 5\)"):
        run(g, bad)
