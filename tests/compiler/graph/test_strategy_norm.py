"""The normalisations (layer, instance and group norm, log-softmax, LRN), erf/GELU's erf form,
pow and prelu through the topi strategy: no host step on llvm nor on cuda, and outputs equal
to the graph's numpy semantics (:func:`support.strategy.check_on_every_target`), alone and after
a conv (fused into it where the op is element-wise); GroupNormalization imported from ONNX
(opsets 18 and 21) against onnxruntime."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from support.strategy import SEED, check_on_every_target

from vdla.compiler.graph.executor import compile_model
from vdla.compiler.graph.fuse import fuse
from vdla.compiler.graph.ir import Graph

#: (graph, input value, its shape, rng) -> the output value
Build = Callable[[Graph, str, tuple, np.random.Generator], str]


def _w(g: Graph, rng: np.random.Generator, name: str, shape: tuple) -> str:
    return g.add_const(name, rng.standard_normal(shape).astype("float32"))


def _ln(axis: int, bias: bool = True) -> Build:
    def build(g: Graph, x: str, shape: tuple, rng: np.random.Generator) -> str:
        tail = shape[axis:]
        ins = [x, _w(g, rng, "scale", tail)] + ([_w(g, rng, "bias", tail[-1:])] if bias else [])
        return g.add_node("layer_norm", ins, name="norm", axis=axis, epsilon=1e-5)
    return build


def _gn(groups: int | None) -> Build:  # None: instance_norm
    def build(g: Graph, x: str, shape: tuple, rng: np.random.Generator) -> str:
        c = shape[1]
        ins = [x, _w(g, rng, "scale", (c,)), _w(g, rng, "bias", (c,))]
        if groups is None:
            return g.add_node("instance_norm", ins, name="norm", epsilon=1e-3)
        return g.add_node("group_norm", ins, name="norm", num_groups=groups, epsilon=1e-5)
    return build


def _op(op: str, **attrs: object) -> Build:
    return lambda g, x, shape, rng: g.add_node(op, [x], name="norm", **attrs)


def _decomposed_ln(g: Graph, x: str, shape: tuple, rng: np.random.Generator) -> str:
    """LayerNorm as torch.onnx writes it below opset 17: ReduceMean, Sub, Pow 2, ReduceMean, Add, Sqrt, Div."""
    m = g.add_node("reduce_mean", [x], name="mean", axes=[-1], keepdims=1)
    d = g.add_node("sub", [x, m], name="d")
    sq = g.add_node("pow", [d, g.add_const("two", np.float32(2.0))], name="sq")
    v = g.add_node("reduce_mean", [sq], name="var", axes=[-1], keepdims=1)
    s = g.add_node("sqrt", [g.add_node("add", [v, g.add_const("eps", np.float32(1e-5))], name="ve")], name="sd")
    return g.add_node("div", [d, s], name="norm")


#: (id, input shape, build): the anchors, alone (the 4-D ones after a conv too, as their own node)
NORMS = [
    ("layer_norm-last", (2, 5, 48), _ln(-1)),
    ("layer_norm-no_bias", (3, 40), _ln(-1, bias=False)),
    ("layer_norm-2_axes", (2, 5, 7), _ln(-2)),
    ("layer_norm-long_row", (2, 300), _ln(-1)),  # 300 elements: 256 partials, the last ones guarded
    ("layer_norm-whole", (3, 20), _ln(0)),       # one row: one block
    ("layer_norm-nchw", (2, 3, 5, 7), _ln(1)),
    ("instance_norm", (2, 3, 5, 7), _gn(None)),
    ("group_norm-2", (2, 6, 5, 7), _gn(2)),
    ("group_norm-1", (2, 6, 5, 7), _gn(1)),
    ("group_norm-C", (2, 6, 5, 7), _gn(6)),
    ("group_norm-3d", (2, 6, 10), _gn(3)),
    ("log_softmax-last", (4, 1000), _op("log_softmax", axis=-1)),
    ("log_softmax-channels", (2, 5, 3, 4), _op("log_softmax", axis=1)),
    ("lrn-3", (2, 6, 5, 7), _op("lrn", size=3, alpha=1e-2, beta=0.75, bias=1.0)),
    ("lrn-4", (2, 6, 5, 7), _op("lrn", size=4, alpha=2e-2, beta=0.5, bias=2.0)),
    ("layer_norm-decomposed", (2, 5, 48), _decomposed_ln),
]


def _graph(shape: tuple, build: Build, after_conv: bool) -> Graph:
    rng = np.random.default_rng(SEED)
    g = Graph("norm")
    g.add_input("x", shape)
    x = "x"
    if after_conv:  # (2, 3, H, W) -> (2, 4, H, W)
        x = g.add_node("conv2d", ["x", _w(g, rng, "w", (4, shape[1], 3, 3))], name="conv", strides=1, padding=1)
        shape = (shape[0], 4, *shape[2:])
    g.set_outputs(build(g, x, shape, rng))
    return g.infer_types()


@pytest.mark.parametrize(("case", "shape", "build"), NORMS, ids=[c[0] for c in NORMS])
def test_norm(case: str, shape: tuple, build: Build) -> None:
    check_on_every_target(_graph(shape, build, after_conv=False))


AFTER_CONV = [c for c in NORMS if c[0] in ("layer_norm-nchw", "instance_norm", "group_norm-2", "lrn-3", "lrn-4")]


@pytest.mark.parametrize(("case", "shape", "build"), AFTER_CONV, ids=[c[0] for c in AFTER_CONV])
def test_norm_after_conv(case: str, shape: tuple, build: Build) -> None:
    check_on_every_target(_graph((2, 3, *shape[2:]), build, after_conv=True))


def _binary(op: str, other: Callable[[tuple], np.ndarray], pre: str | None = None) -> Build:
    def build(g: Graph, x: str, shape: tuple, rng: np.random.Generator) -> str:
        if pre is not None:
            x = g.add_node(pre, [x], name="pre")
        return g.add_node(op, [x, g.add_const("y", other(shape))], name="norm")
    return build


def _f(v: float) -> Callable[[tuple], np.ndarray]:
    return lambda shape: np.full((1,), v, np.float32)


#: (id, build): element-wise ops, alone and fused as a conv's tail
ELEMWISE = [
    ("erf", _op("erf")),
    ("gelu-erf", _op("gelu", approximate="none")),
    ("pow-2", _binary("pow", _f(2.0))),
    ("pow-3", _binary("pow", _f(3.0))),  # an integer exponent: negative bases too
    ("pow-0.5", _binary("pow", _f(0.5), pre="abs")),
    ("pow-scalar", _binary("pow", lambda shape: np.float32(2.0))),
    ("pow-per_channel", _binary("pow", lambda shape: np.arange(1, shape[1] + 1, dtype=np.float32).reshape(-1, 1, 1),
                                pre="abs")),
    ("prelu-channel", _binary("prelu", lambda shape: np.linspace(0.1, 0.5, shape[1], dtype=np.float32).reshape(-1, 1, 1))),
    ("prelu-scalar", _binary("prelu", _f(0.25))),
]


#: the cases whose fused form after a conv the default run builds (each takes seconds on llvm and
#: cuda); the other variants' after-conv builds run in ``nox -s slow``
AFTER_CONV_DEFAULT = ("erf", "gelu-erf", "pow-per_channel", "prelu-channel")
ELEMWISE_RUNS = [(c, b, False) for c, b in ELEMWISE] + [
    (c, b, True) if c in AFTER_CONV_DEFAULT else pytest.param(c, b, True, marks=pytest.mark.slow) for c, b in ELEMWISE]


@pytest.mark.parametrize(("case", "build", "after_conv"), ELEMWISE_RUNS,
                         ids=[f"{c[0]}-{'after-conv' if c[2] else 'alone'}" if isinstance(c, tuple)
                              else f"{c.values[0]}-after-conv" for c in ELEMWISE_RUNS])
def test_elemwise(case: str, build: Build, after_conv: bool) -> None:
    g = _graph((2, 3, 5, 7), build, after_conv)
    if after_conv:  # the op is the conv's fused tail (the pre-op too)
        assert [n.op for n in fuse(g).nodes] == ["fused"]
    check_on_every_target(g)


def test_erf_accuracy() -> None:
    """topi's erf within 2e-6 of math.erf over [-6, 6] (past +-4 it is +-1), on llvm and cuda."""
    print(f"seed {SEED} (a grid, no random data)")
    g = Graph("erf")
    g.add_input("x", (1, 24001))
    g.set_outputs(g.add_node("erf", ["x"], name="e"))
    g.infer_types()
    x = np.linspace(-6, 6, 24001, dtype=np.float32).reshape(1, -1)
    want = np.vectorize(math.erf)(x.astype(np.float64))
    np.testing.assert_allclose(compile_model(g, target="llvm").run({"x": x}).outputs[0], want, rtol=0, atol=2e-6)
    np.testing.assert_allclose(compile_model(g, target="cuda").run_on_cpu({"x": x})[0], want, rtol=0, atol=2e-6)


# -- ONNX GroupNormalization -------------------------------------------------------------------


def _group_norm_model(opset: int, params: str, groups: int = 2, c: int = 6):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(SEED)
    per = c if opset >= 21 else groups
    s, b = rng.standard_normal(per).astype("float32"), rng.standard_normal(per).astype("float32")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, c, 5, 7])
    inputs, inits = [x], []
    if params == "const":
        inits = [numpy_helper.from_array(s, "s"), numpy_helper.from_array(b, "b")]
    else:
        inputs += [helper.make_tensor_value_info(k, TensorProto.FLOAT, [per]) for k in ("s", "b")]
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups, epsilon=1e-4)
    graph = helper.make_graph([node], "gn", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)
    feeds = {"x": rng.uniform(-4, 4, (2, c, 5, 7)).astype("float32")}
    if params != "const":
        feeds.update(s=s, b=b)
    return onnx, model, feeds


@pytest.mark.parametrize("params", ["const", "input"])
@pytest.mark.parametrize("opset", [18, 21])
def test_onnx_group_normalization(opset: int, params: str) -> None:
    """Opset 18 takes scale/bias per group, 21 per channel: both against onnxruntime, and the
    imported graph with no host step on llvm and cuda."""
    print(f"seed {SEED}")
    ort = pytest.importorskip("onnxruntime")
    from vdla.compiler.graph.onnx_import import from_onnx
    from vdla.compiler.graph.reference import run as reference_run

    _, model, feeds = _group_norm_model(opset, params)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)[0]
    g = from_onnx(model)
    assert "group_norm" in [n.op for n in g.nodes]
    np.testing.assert_allclose(reference_run(g, feeds)[0], want, rtol=1e-4, atol=1e-4)
    for target in ("llvm", "cuda"):
        m = compile_model(g, target=target)
        assert m.host_steps() == [], m.table()
        got = m.run(feeds).outputs[0] if target == "llvm" else m.run_on_cpu(feeds)[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_onnx_group_normalization_wrong_scale() -> None:
    """A per-channel scale in an opset-18 model (per group there) is refused, naming the opset rule."""
    onnx, model, _ = _group_norm_model(21, "const")
    model.opset_import[0].version = 18
    from vdla.compiler.graph.ir import GraphError
    from vdla.compiler.graph.onnx_import import from_onnx

    with pytest.raises(GraphError, match="one per group"):
        from_onnx(model)
