"""The CPU's packed layout at graph level (:func:`vdla.compiler.graph.cpu_layout.to_nchwc`).

Every case is checked three ways against the numpy semantics of the *original* graph's ops
(``reference_run``, NCHW throughout): the rewritten graph's own reference (the pass keeps the
meaning), the llvm build of the model (the packed kernels compute it) and the structure (which
ops went packed, how many layout transforms, where). Blocks are chosen for 8 lanes (AVX2) so
the structure does not depend on the machine running the test."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vdla.compiler.autotvm.dispatch import ApplyConfig
from vdla.compiler.autotvm.task import create
from vdla.compiler.graph import models
from vdla.compiler.graph.cpu_layout import conv_workload, to_nchwc
from vdla.compiler.graph.executor import compile_model
from vdla.compiler.graph.ir import Graph, GraphError
from vdla.compiler.graph.passes import simplify
from vdla.compiler.graph.reference import run as reference_run

SEED = 2034


def _w(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return (rng.standard_normal(shape) / np.sqrt(int(np.prod(shape[1:])) or 1)).astype("float32")


def _conv(g: Graph, rng: np.random.Generator, x: str, cout: int, k: int = 3, stride: int = 1, groups: int = 1,
          bias: bool = True, name: str = "conv") -> str:
    cin = g.type_of(x).shape[1]
    ins = [x, g.add_const(f"{name}.w", _w(rng, (cout, cin // groups, k, k)))]
    if bias:
        ins.append(g.add_const(f"{name}.b", rng.standard_normal(cout).astype("float32")))
    return g.add_node("conv2d", ins, name=name, strides=stride, padding=k // 2, groups=groups)


def residual(rng: np.random.Generator) -> Graph:
    """An image's 3 channels, a residual block, a max pool, the head: transforms at the input and the flatten only."""
    g = Graph("residual")
    x = g.add_input("x", (1, 3, 16, 16))
    a = g.add_node("relu", [_conv(g, rng, x, 16, name="c1")], name="r1")
    b = g.add_node("relu", [_conv(g, rng, a, 16, name="c2")], name="r2")
    b = g.add_node("add", [_conv(g, rng, b, 16, name="c3"), a], name="sum")
    b = g.add_node("max_pool2d", [g.add_node("relu", [b], name="r3")], name="pool", kernel=3, strides=2, padding=1)
    b = g.add_node("global_avg_pool2d", [_conv(g, rng, b, 24, stride=2, name="c4")], name="gap")
    b = g.add_node("flatten", [b], name="flat")
    fc = g.add_node("dense", [b, g.add_const("fc.w", _w(rng, (24, 24))), g.add_const("fc.b", _w(rng, (24,)))],
                    name="fc")  # 24 outputs: the weight blocked by 8 at compile time
    g.set_outputs(g.add_node("dense", [fc, g.add_const("head.w", _w(rng, (10, 24)))], name="head"))  # 10: as is
    return g.infer_types()


def mobile(rng: np.random.Generator) -> Graph:
    """Depthwise + ReLU6, a per-channel PReLU slope, an avg pool, concat on channels, an NCHW output."""
    g = Graph("mobile")
    x = g.add_input("x", (1, 8, 12, 12))
    a = g.add_node("clip", [_conv(g, rng, x, 24, k=1, name="expand")], name="relu6", min=0.0, max=6.0)
    d = _conv(g, rng, a, 24, stride=2, groups=24, name="dw")
    d = g.add_node("prelu", [d, g.add_const("slope", rng.uniform(0, 0.5, (24, 1, 1)).astype("float32"))], name="pr")
    p = g.add_node("avg_pool2d", [_conv(g, rng, d, 16, k=1, bias=False, name="project")], name="avg", kernel=3,
                   strides=1, padding=1)
    q = _conv(g, rng, d, 8, k=3, name="side")
    g.set_outputs(g.add_node("concat", [p, q], name="cat", axis=1))
    return g.infer_types()


def odd_channels(rng: np.random.Generator) -> Graph:
    """Channel counts no block divides (10, 5) stay NCHW next to packed neighbours; a transpose needs NCHW."""
    g = Graph("odd")
    x = g.add_input("x", (2, 4, 9, 9))
    a = g.add_node("relu", [_conv(g, rng, x, 16, name="c1")], name="r1")
    b = _conv(g, rng, a, 10, name="c2")  # 10 output channels: NCHW
    c = g.add_node("relu", [_conv(g, rng, b, 8, k=1, name="c3")], name="r3")  # 10 inputs: one block of 10
    t = g.add_node("transpose", [c], name="t", perm=(0, 2, 3, 1))
    g.set_outputs(t, c)
    return g.infer_types()


#: (builder, {op: count in the rewritten graph}, layout transforms)
CASES = [
    # c2 and c3 (3x3, stride 1, 16 channels each side) by Winograd's F(4x4, 3x3), c1 (3 input
    # channels) and c4 (stride 2) direct
    (residual, {"conv2d_nchwc": 2, "conv2d_winograd_nchwc": 2, "conv2d": 0, "max_pool2d": 1, "dense_blocked": 1,
                "dense": 1}, 2),
    # the projection's 6 columns take 16-channel blocks, the side conv's 8 channels one of 8: the
    # concat re-blocks the projection to 8
    (mobile, {"conv2d_nchwc": 3, "depthwise_conv2d_nchwc": 1, "conv2d": 0, "concat": 1}, 3),
    (odd_channels, {"conv2d_nchwc": 2, "conv2d": 1}, 4),
]


@pytest.mark.parametrize(("build", "ops", "transforms"), CASES, ids=[c[0].__name__ for c in CASES])
def test_packed_graph_keeps_the_meaning_and_runs_on_llvm(build, ops, transforms) -> None:
    print(f"seed {SEED}")
    rng = np.random.default_rng(SEED)
    g = build(rng)
    x = {k: rng.uniform(-2, 2, t.shape).astype(t.dtype) for k, t in g.inputs.items()}
    want = reference_run(g, x, check=False)
    p = to_nchwc(simplify(g), lanes=8)
    counts = {op: sum(n.op == op for n in p.nodes) for op in [*ops, "layout_transform"]}
    assert counts == {**ops, "layout_transform": transforms}, str(p)
    assert p.outputs == g.outputs and [p.type_of(o) for o in p.outputs] == [g.type_of(o) for o in g.outputs]
    tol = dict(rtol=1e-5, atol=1e-5 * max(float(np.abs(w).max()) for w in want))
    for got, w in zip(reference_run(p, x, check=False), want, strict=True):
        np.testing.assert_allclose(got, w, **tol)
    m = compile_model(g, target="llvm")
    assert m.host_steps() == [], m.table()
    for got, w in zip(m.run(x).outputs, want, strict=True):
        np.testing.assert_allclose(got, w, **tol)


def test_resnet_block_needs_transforms_only_at_its_ends() -> None:
    g = models.get("resnet_block", input_size=8, channels=16, downsample=True)
    p = to_nchwc(simplify(g), lanes=8)
    convs = [n.op for n in p.nodes if "conv2d" in n.op]
    # all direct: the 3x3 stride-1 conv's 4x4 output is too small for Winograd
    assert convs == ["conv2d_nchwc"] * 3, str(p)
    lts = [n for n in p.nodes if n.op == "layout_transform"]
    # the input in, the output out (16-channel blocks: the 8 columns fit 4 x 2 vectors)
    assert [(n.attrs["src"], n.attrs["dst"]) for n in lts] == [(0, 8), (16, 0)]


@settings(max_examples=5, deadline=None)
@given(cin=st.sampled_from([3, 8, 12, 16, 24, 32]), mid=st.sampled_from([8, 16, 20, 24, 48]),
       cout=st.sampled_from([4, 7, 8, 16, 40]), stride=st.sampled_from([1, 2]), size=st.integers(5, 11),
       seed=st.integers(0, 2**16))
def test_conv_depthwise_conv_chains_match_numpy(cin: int, mid: int, cout: int, stride: int, size: int,
                                                seed: int) -> None:
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    g = Graph("chain")
    x = g.add_input("x", (1, cin, size, size))
    a = g.add_node("relu", [_conv(g, rng, x, mid, k=1, name="pw1")], name="r1")
    a = g.add_node("clip", [_conv(g, rng, a, mid, stride=stride, groups=mid, name="dw")], name="r2", min=0.0, max=6.0)
    g.set_outputs(_conv(g, rng, a, cout, k=1, bias=False, name="pw2"))
    g.infer_types()
    xin = {"x": rng.uniform(-2, 2, (1, cin, size, size)).astype("float32")}
    (want,) = reference_run(g, xin, check=False)
    m = compile_model(g, target="llvm")
    (got,) = m.run(xin).outputs
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


def test_a_tuned_record_picks_the_blocks() -> None:
    """Under a tuned record of a conv's ``conv2d_NCHWc.x86`` workload the conv takes the record's
    blocks (a transform re-blocks its input), and the rest keeps the cost rule."""
    rng = np.random.default_rng(SEED)
    g = residual(rng)
    c2 = g.node("c2")
    wl = conv_workload(c2, g.type_of(c2.inputs[0]).shape, g.type_of(c2.inputs[1]).shape)
    assert wl == ["conv2d_NCHWc.x86", [1, 16, 16, 16, 16, 3, 1, 1]]
    task = create(wl[0], wl[1], "llvm")
    cfg = next(c for c in (task.config_space.get(i) for i in range(len(task.config_space)))
               if c["tile_ic"].size[-1] == 4 and c["tile_oc"].size[-1] == 16)
    with ApplyConfig(cfg, wl):
        p = to_nchwc(simplify(g), lanes=8)
        m = compile_model(g, target="llvm")
    assert m.host_steps() == [], m.table()  # the tuned point builds (its knobs reach the schedule)
    conv = next(n for n in p.nodes if n.name == "c2")
    assert p.type_of(conv.inputs[1]).shape == (1, 4, 3, 3, 4, 16)  # (OC/ob, IC/cb, KH, KW, cb, ob)
    assert any(n.op == "layout_transform" and n.attrs["dst"] == 4 for n in p.nodes)  # c1's blocks -> the record's
    x = {"x": rng.uniform(-2, 2, (1, 3, 16, 16)).astype("float32")}
    (want,) = reference_run(g, x, check=False)
    np.testing.assert_allclose(m.run(x).outputs[0], want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


@pytest.mark.parametrize(("attrs", "shape", "match"), [
    ({"src": 0, "dst": 0}, (1, 8, 4, 4), "must be >= 0 and differ"),
    ({"src": 0, "dst": 3}, (1, 8, 4, 4), "8 channels are not a multiple of the block 3"),
    ({"src": 4, "dst": 0}, (1, 2, 4, 4, 8), "src=4 needs NCHW4c data"),
    ({"src": 0, "dst": 8}, (1, 8, 4), "src=0 needs NCHW data"),
])
def test_bad_layout_transforms_name_the_problem(attrs: dict, shape: tuple, match: str) -> None:
    g = Graph("bad")
    g.add_input("x", shape)
    with pytest.raises(GraphError, match=match):
        g.add_node("layout_transform", ["x"], name="lt", **attrs)


def test_packed_conv_checks_its_weight() -> None:
    g = Graph("bad")
    g.add_input("x", (1, 2, 6, 6, 8))
    g.add_const("w", np.zeros((2, 3, 3, 3, 8, 8), np.float32))
    with pytest.raises(GraphError, match=r"weight must be \(OC/ob, 2, KH, KW, 8, ob\)"):
        g.add_node("conv2d_nchwc", ["x", "w"], name="c")


def test_the_pass_leaves_integer_graphs_alone() -> None:
    g = Graph("int")
    g.add_input("x", (1, 8, 4, 4), "int8")
    g.set_outputs(g.add_node("relu", ["x"], name="r"))
    g.infer_types()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = to_nchwc(g, lanes=8)
    assert [n.op for n in p.nodes] == ["relu"]


def shuffle_unit(rng: np.random.Generator) -> Graph:
    """A ShuffleNet v2 unit: split the channels, a branch, concat, shuffle (reshape-transpose-reshape)."""
    g = Graph("shuffle")
    x = g.add_input("x", (1, 8, 10, 10))
    x = g.add_node("relu", [_conv(g, rng, x, 32, k=1, name="stem")], name="s")
    left = g.add_node("slice", [x], name="left", begin=[0, 0, 0, 0], end=[1, 16, 10, 10], step=[1, 1, 1, 1])
    right = g.add_node("slice", [x], name="right", begin=[0, 16, 0, 0], end=[1, 32, 10, 10], step=[1, 1, 1, 1])
    r = _conv(g, rng, g.add_node("relu", [_conv(g, rng, right, 16, k=1, name="pw")], name="pr"), 16, groups=16,
              name="dw")
    y = g.add_node("concat", [left, r], name="cat", axis=1)
    y = g.add_node("reshape", [y], name="r1", shape=(1, 2, 16, 10, 10))
    y = g.add_node("transpose", [y], name="tr", perm=(0, 2, 1, 3, 4))
    y = g.add_node("reshape", [y], name="r2", shape=(1, 32, 10, 10))
    g.set_outputs(g.add_node("relu", [_conv(g, rng, y, 8, k=1, name="head")], name="out"))
    return g.infer_types()


def test_a_shuffle_unit_stays_packed() -> None:
    """Channel split, concat and shuffle keep the blocks: the only transforms are the model's ends,
    a split half is a view of the stem's output, the shuffle one gather."""
    print(f"seed {SEED}")
    rng = np.random.default_rng(SEED)
    g = shuffle_unit(rng)
    p = to_nchwc(simplify(g), lanes=8)
    ops = [n.op for n in p.nodes]
    assert ops.count("layout_transform") == 2 and ops.count("channel_shuffle") == 1, str(p)
    assert "transpose" not in ops and "reshape" not in ops
    x = {"x": rng.uniform(-2, 2, (1, 8, 10, 10)).astype("float32")}
    (want,) = reference_run(g, x, check=False)
    np.testing.assert_allclose(reference_run(p, x, check=False)[0], want, rtol=1e-5, atol=1e-5)
    m = compile_model(g, target="llvm")
    # the half a conv reads is a view of the stem's output (the other fuses with the concat and the shuffle)
    assert m.host_steps() == [] and m.kernels["right"].target == "view", m.table()
    np.testing.assert_allclose(m.run(x).outputs[0], want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


def test_winograd_can_be_turned_off_and_a_tuned_record_keeps_the_direct_form() -> None:
    rng = np.random.default_rng(SEED)
    g = simplify(residual(rng))
    ops = lambda p: sorted(n.op for n in p.nodes if "conv2d" in n.op)  # noqa: E731
    assert ops(to_nchwc(g, lanes=8)).count("conv2d_winograd_nchwc") == 2
    assert ops(to_nchwc(g, lanes=8, winograd=False)) == ["conv2d_nchwc"] * 4
    c2 = g.node("c2")
    wl = conv_workload(c2, g.type_of(c2.inputs[0]).shape, g.type_of(c2.inputs[1]).shape)
    task = create(wl[0], wl[1], "llvm")
    with ApplyConfig(task.config_space.get(0), wl):
        p = to_nchwc(g, lanes=8)
    # c3 has c2's workload: both direct, under the record
    assert [n.op for n in p.nodes if n.name in ("c2", "c3")] == ["conv2d_nchwc"] * 2


def test_winograd_conv_checks_its_weight() -> None:
    g = Graph("bad")
    g.add_input("x", (1, 2, 6, 6, 8))
    g.add_const("w", np.zeros((16, 1, 2, 8, 8), np.float32))
    with pytest.raises(GraphError, match=r"weight must be \(36, OC/ob, 2, 8, ob\) for m=4"):
        g.add_node("conv2d_winograd_nchwc", ["x", "w"], name="c", m=4)
    with pytest.raises(GraphError, match="m=3 has no transform"):
        g.add_node("conv2d_winograd_nchwc", ["x", "w"], name="c", m=3)
