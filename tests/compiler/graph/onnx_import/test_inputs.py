"""Model inputs declared double or int64 (as old PyTorch exports write them): every runner (the
numpy reference, a model built for llvm, one built for VDLA, a compiled-model file) takes arrays
of the declared type, as onnxruntime does, and casts them at the boundary; float32 / int32
arrays still work; a value the narrower type cannot hold is an error naming the input, the
value and its index. Results are compared with onnxruntime, fed the declared types."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from support.onnx_models import model, reference  # noqa: E402

from vdla.compiler.graph import GraphError, run  # noqa: E402
from vdla.compiler.graph.executor import CompiledModel, compile_model  # noqa: E402
from vdla.compiler.graph.onnx_import import from_onnx  # noqa: E402

N = helper.make_node
F64, I64, F32 = np.float64, np.int64, np.float32
OPSETS = (13, 17, 21)


def _w(*shape: int, seed: int = 0, dtype: Any = F32) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 0.5).astype(dtype)


@dataclass
class Case:
    name: str
    nodes: list[Any]
    inputs: dict[str, np.ndarray]  # the arrays fed (their dtype is the declared one)
    inits: dict[str, np.ndarray] = field(default_factory=dict)
    boundary: dict[str, str] = field(default_factory=dict)  # input -> the declared dtype kept on its type

    def build(self, opset: int) -> Any:
        return model(self.nodes, self.inputs, opset, ("y",), self.inits, name=self.name)


_rng = np.random.default_rng(7)
CASES = [
    # an all-double model (model.double() before the export): double weights are read as float32
    Case("double_elementwise", [N("Mul", ["x", "s"], ["m"]), N("Add", ["m", "b"], ["a"]), N("Relu", ["a"], ["y"])],
         {"x": _rng.standard_normal((2, 3, 4))}, {"s": _w(3, 1, dtype=F64), "b": _w(4, seed=1, dtype=F64)},
         {"x": "float64"}),
    # a double input cast to float before the network
    Case("double_cast_conv", [N("Cast", ["x"], ["xf"], to=TensorProto.FLOAT), N("Conv", ["xf", "w"], ["c"], pads=[1] * 4),
                              N("Relu", ["c"], ["y"])],
         {"x": _rng.standard_normal((1, 3, 6, 6))}, {"w": _w(4, 3, 3, 3)}, {"x": "float64"}),
    # int64 token ids into an embedding
    Case("int64_embedding", [N("Gather", ["emb", "tok"], ["y"])], {"tok": _rng.integers(-10, 10, (2, 5))},
         {"emb": _w(10, 4)}, {"tok": "int64"}),
    # int64 arithmetic on the input (int64 out: compared by value)
    Case("int64_arith", [N("Add", ["x", "k"], ["a"]), N("Mul", ["a", "x"], ["y"])],
         {"x": _rng.integers(-1000, 1000, (3, 4))}, {"k": np.array([1, -2, 3, 40000], I64)}, {"x": "int64"}),
    # a padding mask from int64 ids (an attention mask's build) beside a float input
    Case("int64_mask", [N("Equal", ["ids", "pad"], ["c"]), N("Where", ["c", "neg", "x"], ["y"])],
         {"ids": _rng.integers(0, 3, (2, 6)), "x": _rng.standard_normal((2, 6)).astype(F32)},
         {"pad": np.array(0, I64), "neg": np.array(-1e4, F32)}, {"ids": "int64"}),
    # run-time int64 index tuples of a ScatterND
    Case("int64_scatter_indices", [N("ScatterND", ["x", "i", "u"], ["y"])],
         {"x": _rng.standard_normal((4, 5)).astype(F32), "i": np.array([[3, 1], [0, -1], [2, 2]], I64),
          "u": _rng.standard_normal(3).astype(F32)}, {}, {"i": "int64"}),
]


def _params():
    for c in CASES:
        for opset in OPSETS:
            yield pytest.param(c, opset, id=f"{c.name}-opset{opset}")


def _same(got: list[np.ndarray], want: list[Any]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        b = np.asarray(b)
        assert a.shape == b.shape
        if b.dtype.kind in "iu":
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b.astype(F32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case, opset", list(_params()))
def test_declared_types_are_taken_and_cast_at_the_boundary(case: Case, opset: int) -> None:
    m = case.build(opset)
    want, source = reference(m, case.inputs)
    assert source == "onnxruntime"
    g = from_onnx(m)
    assert {k: t.boundary for k, t in g.inputs.items() if t.boundary} == case.boundary
    for k, wide in case.boundary.items():
        assert f"%{k}: {g.inputs[k]} (declared {wide})" in str(g)
    _same(run(g, case.inputs), want)  # the numpy reference, fed the declared types
    narrowed = {k: v.astype(g.inputs[k].dtype) for k, v in case.inputs.items()}
    _same(run(g, narrowed), want)  # the computed types are still taken
    if opset == OPSETS[-1]:  # a build per case: the cast is the same at every opset
        cm = compile_model(g, target="llvm")
        _same(cm.run(case.inputs).outputs, want)
        _same(cm.run(case.inputs, native=False).outputs, want)  # step by step too


BAD = [
    ("int64_embedding", {"tok": np.array([[1, 2, 2**31, 3, 4], [0] * 5], I64)},
     r"input 'tok' of graph 'int64_embedding' is declared int64 and computed in int32: its value 2147483648 at index "
     r"\[0, 2\] is outside int32's range \[-2147483648, 2147483647\] \(1 such value\)"),
    ("int64_arith", {"x": np.full((3, 4), -2**40, I64)},
     r"input 'x' .* its value -1099511627776 at index \[0, 0\] is outside int32's range .* \(12 such values\)"),
    ("double_elementwise", {"x": np.array([[[0.0, 1.0, np.nan, np.inf]] * 3, [[1e39, 0.0, 0.0, -1e300]] * 3])},
     r"input 'x' of graph 'double_elementwise' is declared float64 and computed in float32: its value 1e\+39 at index "
     r"\[1, 0, 0\] is outside float32's range \[-3.40282347e\+38, 3.40282347e\+38\] \(6 such values\)"),
    ("int64_embedding", {"tok": np.zeros((2, 5), F32)},
     r"input 'tok' of graph 'int64_embedding' expects dtype int32 \(or int64, as the model declares it\), got float32"),
    ("double_cast_conv", {"x": np.zeros((1, 3, 6, 6), np.float16)},
     r"input 'x' .* expects dtype float32 \(or float64, as the model declares it\), got float16"),
]


@pytest.mark.parametrize("name, feeds, msg", BAD, ids=[f"{b[0]}-{k}" for k, b in enumerate(BAD)])
def test_values_the_computed_type_cannot_hold_are_named(name: str, feeds: dict, msg: str) -> None:
    case = next(c for c in CASES if c.name == name)
    g = from_onnx(case.build(OPSETS[-1]))
    with pytest.raises(GraphError, match=msg):
        run(g, feeds)
    cm = compile_model(g, target="llvm")
    for native in (True, False):
        with pytest.raises(GraphError, match=msg):
            cm.run(feeds, native=native)


def test_a_float32_model_still_refuses_double_arrays() -> None:
    """onnxruntime refuses a double array for a float input; so does every runner here."""
    m = model([N("Relu", ["x"], ["y"])], {"x": (2, 3)}, 17)
    g = from_onnx(m)
    assert g.inputs["x"].boundary is None
    with pytest.raises(GraphError, match=r"input 'x' of graph 't' expects dtype float32, got float64$"):
        run(g, {"x": np.zeros((2, 3))})


def test_vdla_model_and_its_file_take_the_declared_type(tmp_path) -> None:
    """A double-input conv model built for VDLA: the float64 array runs bit-exactly against the int8
    reference; the compiled-model file keeps the declared type, and out-of-range values are named."""
    from vdla.compiler.graph.build import build_model
    from vdla.compiler.graph.zoo import load_model
    from vdla.config import Config
    from vdla.runtime import Device

    rng = np.random.default_rng(3)
    nodes = [N("Cast", ["x"], ["xf"], to=TensorProto.FLOAT), N("Conv", ["xf", "w1"], ["c1"], pads=[1] * 4),
             N("Relu", ["c1"], ["r1"]), N("Conv", ["r1", "w2"], ["c2"], pads=[1] * 4), N("Relu", ["c2"], ["y"])]
    inits = {"w1": (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(F32),
             "w2": (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(F32)}
    p = tmp_path / "double.onnx"
    onnx.save(model(nodes, {"x": np.zeros((1, 16, 8, 8), F64)}, 17, ("y",), inits), str(p))
    m = build_model(load_model(str(p)), Config())
    assert any(k.target == "vdla" for k in m.kernels.values())
    assert m.graph.inputs["x"].boundary == "float64"  # kept through quantise, partition, pack and fuse
    x = rng.standard_normal((1, 16, 8, 8))
    dev = Device("fsim", config=m.config)
    res = m.run({"x": x}, dev, reference=True)
    assert all(r.exact for r in res.layers)
    np.testing.assert_array_equal(res.outputs[0], m.run({"x": x.astype(F32)}, dev).outputs[0])
    f = m.save(tmp_path / "double.vdla")
    back = CompiledModel.load(f)
    assert back.graph.inputs["x"].boundary == "float64"
    np.testing.assert_array_equal(back.run({"x": x}, dev).outputs[0], res.outputs[0])
    x[0, 5, 1, 2] = -1e40
    with pytest.raises(GraphError, match=r"input 'x' .* its value -1e\+40 at index \[0, 5, 1, 2\] is outside float32"):
        back.run({"x": x}, dev)
