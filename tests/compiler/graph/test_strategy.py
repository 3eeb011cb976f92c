"""The graph strategies on every code-generating target: each operator the topi strategy maps
(activations, concat, transpose), alone and fused after an anchor, built for llvm (run
natively) and for cuda (PTX assembled by ptxas when present, the loop IR run on the CPU with
the threads as loops), against the numpy semantics of the graph's own operators."""

from __future__ import annotations

import numpy as np
import pytest
from support.strategy import SEED
from support.strategy import check_on_every_target as _check_on_every_target
from support.strategy import data as _data

from vdla.compiler.graph.executor import compile_model
from vdla.compiler.graph.ir import Graph
from vdla.compiler.graph.reference import run as reference_run
from vdla.compiler.graph.strategy import STRATEGIES, lower
from vdla.compiler.topi.activation import ACTIVATIONS

#: (id, op, attrs): every activation of the table, with non-default attributes where ONNX has them
UNARY = [(op, op, {}) for op in ACTIVATIONS] + [
    ("gelu-tanh", "gelu", {"approximate": "tanh"}),
    ("elu-0.5", "elu", {"alpha": 0.5}),
    ("hard_sigmoid-onnx", "hard_sigmoid", {"alpha": 0.25, "beta": 0.4}),
    ("leaky_relu", "leaky_relu", {"alpha": 0.1}),
    ("shrink-bias", "shrink", {"lambd": 0.3, "bias": 0.1}),
]


def _unary_graph(op: str, attrs: dict, fused: bool) -> Graph:
    rng = np.random.default_rng(SEED)
    g = Graph(f"{op}_graph")
    g.add_input("x", (2, 3, 5, 7))
    x = "x"
    if fused:  # after a conv: the anchor's schedule inlines the activation as its tail
        x = g.add_node("conv2d", ["x", g.add_const("w", rng.standard_normal((4, 3, 3, 3)).astype("float32"))],
                       name="conv", strides=1, padding=1)
        if op == "reciprocal":  # away from 0, where the sum's rounding (its order is the schedule's) blows up
            x = g.add_node("add", [g.add_node("abs", [x], name="abs"), g.add_const("one", np.float32(1))], name="off")
    g.set_outputs(g.add_node(op, [x], name="act", **attrs))
    return g.infer_types()


#: activations built fused after a conv in the default run: the anchor's schedule inlines any
#: element-wise tail the same way, so these stand for the rest (a guarded one, one with a
#: transcendental, a piecewise-linear one and one with attributes); every one in nox -s slow
_AFTER_CONV_DEFAULT = {"reciprocal", "gelu", "hard_swish", "shrink-bias"}


@pytest.mark.parametrize(("case", "op", "attrs", "fused"), [
    pytest.param(*c, False, id=f"{c[0]}-alone") for c in UNARY] + [
    pytest.param(*c, True, id=f"{c[0]}-after-conv",
                 marks=() if c[0] in _AFTER_CONV_DEFAULT else pytest.mark.slow) for c in UNARY])
def test_activation(case: str, op: str, attrs: dict, fused: bool) -> None:
    _check_on_every_target(_unary_graph(op, attrs, fused))


@pytest.mark.parametrize(("shapes", "axis"), [
    ([(1, 3, 4, 4), (1, 5, 4, 4)], 1),          # channels (GoogLeNet, DenseNet, SqueezeNet)
    ([(2, 3), (2, 1), (2, 4)], -1),             # the last axis (an LSTM's [x, h])
    ([(3, 2, 2), (1, 2, 2), (2, 2, 2)], 0),
])
def test_concat(shapes: list, axis: int) -> None:
    g = Graph("concat")
    names = [g.add_input(f"x{k}", s) for k, s in enumerate(shapes)]
    y = g.add_node("concat", names, name="cat", axis=axis)
    g.set_outputs(g.add_node("relu", [y], name="act"))
    _check_on_every_target(g.infer_types())


@pytest.mark.parametrize("perm", [(0, 2, 3, 1), (3, 2, 1, 0), (1, 0, 2, 3)])
def test_transpose(perm: tuple) -> None:
    g = Graph("transpose")
    g.add_input("x", (2, 3, 4, 5))
    g.set_outputs(g.add_node("transpose", ["x"], name="t", perm=list(perm)))
    _check_on_every_target(g.infer_types())


def test_gelu_erf_builds() -> None:
    """GELU's erf form (ONNX's default, torch's nn.GELU()) builds: erf is topi's rational
    approximation (the loop IR has no erf intrinsic); its accuracy: test_strategy_norm.py."""
    g = _unary_graph("gelu", {}, fused=False)
    assert not isinstance(lower(g.node("act"), g, "llvm"), str)
    for target in ("llvm", "cuda"):
        assert compile_model(g, target=target).host_steps() == []


def test_strategy_table_has_a_row_per_kind() -> None:
    assert set(STRATEGIES) == {"llvm", "cuda"}  # vdla's kernels come through its own entry points (module doc)
    assert all("*" in row for row in STRATEGIES.values())


@pytest.mark.parametrize("op", ["reduce_mean", "reduce_sum", "reduce_max", "reduce_min"])
@pytest.mark.parametrize(("axes", "keepdims"), [
    ([2, 3], 1),      # global average pooling as torch.onnx writes it (ReduceMean over H, W)
    ([1], 0),
    ([-1], 1),
    (None, 1),        # every axis
    ([0, 2], 1),
])
def test_reduce(op: str, axes: list | None, keepdims: int) -> None:
    g = Graph("reduce")
    g.add_input("x", (2, 6, 5, 7))
    y = g.add_node(op, ["x"], name="r", axes=axes, keepdims=keepdims)
    g.set_outputs(g.add_node("relu", [y], name="act"))  # fused after the reduction: computed in its loop
    _check_on_every_target(g.infer_types())


def test_reduce_to_a_scalar() -> None:
    """Every axis without keepdims: a rank-0 output. llvm builds it; a GPU kernel needs an output axis
    to spread over threads, so cuda leaves it on the host and says why."""
    g = Graph("scalar")
    g.add_input("x", (3, 4))
    g.set_outputs(g.add_node("reduce_sum", ["x"], name="r", axes=None, keepdims=0))
    g.infer_types()
    x = _data(g, SEED)
    m = compile_model(g, target="llvm")
    assert m.host_steps() == []
    np.testing.assert_allclose(m.run(x).outputs[0], reference_run(g, x)[0], rtol=1e-5)
    c = compile_model(g, target="cuda")
    assert c.host_steps() == ["r"] and "cuda build failed" in c.kernels["r"].host_reason


@pytest.mark.parametrize("node, symbol", [
    ("block1.conv", "block1_conv"),  # the spelling kernels always had
    ("/layer1/conv/Conv_output_0", "_layer1_conv_Conv_output_0"),  # PyTorch's dynamo exporter
    ("onnx::Conv_5", "onnx__Conv_5"),  # the TorchScript exporter
    ("5", "k_5"),
    ("relu-1 out", "relu_1_out"),
])
def test_kernel_names_are_symbols(node: str, symbol: str) -> None:
    from vdla.compiler.graph.strategy.kernel import kernel_name

    assert kernel_name(node) == symbol


def test_onnx_named_nodes_build_for_cuda() -> None:
    """Values named as ONNX exporters name them (a ``/`` aborted LLVM's NVPTX back end, a leading
    digit failed in ptxas): each node builds, and its PTX assembles where ptxas is installed."""
    from vdla.compiler.graph.strategy import kernel_cache
    from vdla.compiler.targets.cuda.ptxas import assemble, find_ptxas

    rng = np.random.default_rng(SEED)
    g = Graph("onnx_names")
    g.add_input("input", (1, 4, 6, 6))
    w = g.add_const("/conv/weight", rng.standard_normal((8, 4, 3, 3)).astype("float32"))
    c = g.add_node("conv2d", ["input", w], name="/conv/Conv_output_0", strides=1, padding=1)
    r = g.add_node("relu", [c], name="0")
    g.set_outputs(r)
    cache = kernel_cache("cuda")
    for n in g.nodes:
        k = cache.get(n, g)
        assert not isinstance(k, str), k
        if find_ptxas() is not None:
            assemble(k.func.ptx, "sm_90")
