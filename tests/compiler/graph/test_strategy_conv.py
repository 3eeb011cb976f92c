"""The topi strategy's grouped convolutions, transposed convolutions and batched matrix products
(ResNeXt / RegNet / ShuffleNet groups, DCGAN's generator, attention's ``Q @ Kᵀ`` and ``P @ V``):
each case compiles for llvm (run natively) and cuda (PTX assembled by ptxas when present, the
loop IR run on the CPU with threads as loops) with no host step, and matches the numpy semantics
of the graph's own operators (``reference_run``); the seed is printed by the shared checker."""

from __future__ import annotations

import numpy as np
import pytest
from support.strategy import SEED, check_on_every_target

from vdla.compiler.graph.executor import compile_model
from vdla.compiler.graph.ir import Graph
from vdla.compiler.graph.strategy import topi_ops


def _w(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    fan_in = int(np.prod(shape[1:])) or 1
    return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype("float32")


# ---------------------------------------------------------------------------- grouped conv2d

#: (id, batch, in channels, out channels, size, kernel, stride, padding, dilation, groups, bias, tail)
GROUPED = [
    ("g2-bias-relu", 1, 8, 8, 7, 3, 1, 1, 1, 2, True, "relu"),
    ("resnext-32x4d", 1, 128, 128, 8, 3, 1, 1, 1, 32, False, "relu"),  # 4 channels per group
    ("regnety-gw8-s2", 2, 48, 48, 9, 3, 2, 1, 1, 6, True, "relu"),  # RegNetY's group width 8, stride 2
    ("regnety-gw16", 1, 64, 64, 6, 3, 1, 1, 1, 4, True, None),
    ("shufflenet-g4-1x1", 1, 16, 32, 5, 1, 1, 0, 1, 4, False, None),  # ShuffleNet v1's grouped 1x1
    ("g3-dilated-asym", 1, 12, 6, 9, 3, 1, (0, 1, 2, 1), 2, 3, True, "relu"),
    ("g2-wide-groups", 1, 160, 160, 5, 3, 1, 1, 1, 2, True, None),  # 80 channels a group: blocks inside one
    ("dw-multiplier-3", 1, 4, 12, 7, 3, 1, 1, 1, 4, True, "relu"),  # depthwise, channel multiplier 3
    ("dw-multiplier-2-s2", 2, 8, 16, 9, 3, 2, 1, 1, 8, False, None),
]


def _conv_graph(batch: int, cin: int, cout: int, size: int, k: int, stride: int, pad: object, dil: int,
                groups: int, bias: bool, tail: str | None) -> Graph:  # fmt: skip
    rng = np.random.default_rng(SEED)
    g = Graph("grouped")
    g.add_input("x", (batch, cin, size, size))
    ins = ["x", g.add_const("w", _w(rng, (cout, cin // groups, k, k)))]
    if bias:
        ins.append(g.add_const("b", rng.standard_normal(cout).astype("float32")))
    y = g.add_node("conv2d", ins, name="conv", strides=stride, padding=pad, dilation=dil, groups=groups)
    if tail:
        y = g.add_node(tail, [y], name="act")
    g.set_outputs(y)
    return g.infer_types()


@pytest.mark.parametrize("case", GROUPED, ids=[c[0] for c in GROUPED])
def test_grouped_conv2d(case: tuple) -> None:  # type: ignore[type-arg]
    check_on_every_target(_conv_graph(*case[1:]))


@pytest.mark.parametrize(("case", "key"), [
    (GROUPED[0], "group_conv2d"),
    (GROUPED[7], "depthwise_conv2d"),  # groups = input channels, one weight channel each
    (("plain", 1, 4, 4, 5, 3, 1, 1, 1, 1, False, None), "conv2d"),
], ids=["grouped", "depthwise", "groups-1"])
def test_conv2d_schedule_key(case: tuple, key: str) -> None:  # type: ignore[type-arg]
    """Which schedule a conv2d node gets: every grouping maps (check() says nothing)."""
    g = _conv_graph(*case[1:])
    node = g.node("conv")
    assert topi_ops.check(node, g) is None
    assert topi_ops.schedule_key(node, g) == key


# ---------------------------------------------------------------------------- conv2d_transpose

#: (id, batch, in channels, out channels, size, kernel, stride, padding, output padding, bias, tail)
TRANSPOSED = [
    ("dcgan-project", 2, 16, 8, 1, 4, 1, 0, 0, False, "bn-relu"),  # z [N, nz, 1, 1] -> 4x4
    ("dcgan-up", 1, 8, 4, 4, 4, 2, 1, 0, False, "bn-relu"),  # 4x4 -> 8x8
    ("dcgan-rgb-tanh", 1, 4, 3, 8, 4, 2, 1, 0, False, "tanh"),  # the last layer: 3 channels, tanh
    ("s2-output-padding-bias", 1, 6, 5, 5, 3, 2, 1, 1, True, "relu"),
    ("asym-padding", 1, 3, 4, 6, 3, 2, (0, 1, 1, 0), 0, True, None),
    ("s3-output-padding-2", 1, 2, 3, 4, 3, 3, 1, 2, False, None),
    ("padding-beyond-kernel", 1, 3, 2, 6, 2, 2, (2, 1, 2, 1), 0, True, None),  # crops the stride-dilated input
]


def _convt_graph(batch: int, cin: int, cout: int, size: int, k: int, stride: int, pad: object, opad: int,
                 bias: bool, tail: str | None) -> Graph:  # fmt: skip
    rng = np.random.default_rng(SEED)
    g = Graph("transposed")
    g.add_input("x", (batch, cin, size, size))
    ins = ["x", g.add_const("w", _w(rng, (cin, cout, k, k)))]
    if bias:
        ins.append(g.add_const("b", rng.standard_normal(cout).astype("float32")))
    y = g.add_node("conv2d_transpose", ins, name="convt", strides=stride, padding=pad, output_padding=opad)
    if tail == "bn-relu":
        bn = [g.add_const(f"bn{i}", v) for i, v in enumerate((
            rng.uniform(0.5, 1.5, cout), rng.standard_normal(cout), rng.standard_normal(cout) * 0.1,
            rng.uniform(0.5, 2.0, cout)))]  # fmt: skip
        for c in bn:
            g.consts[c] = g.consts[c].astype("float32")
        y = g.add_node("relu", [g.add_node("batch_norm", [y, *bn], name="bn", epsilon=1e-5)], name="act")
    elif tail:
        y = g.add_node(tail, [y], name="act")
    g.set_outputs(y)
    return g.infer_types()


@pytest.mark.parametrize("case", TRANSPOSED, ids=[c[0] for c in TRANSPOSED])
def test_conv2d_transpose(case: tuple) -> None:  # type: ignore[type-arg]
    check_on_every_target(_convt_graph(*case[1:]))


def test_dcgan_generator_has_no_host_step() -> None:
    """A small DCGAN generator (ConvTranspose + BatchNorm + ReLU x 3, ConvTranspose + Tanh) end to end."""
    rng = np.random.default_rng(SEED)
    g = Graph("dcgan")
    y = g.add_input("z", (2, 8, 1, 1))
    chans = [8, 16, 8, 4, 3]
    for i, (ci, co) in enumerate(zip(chans, chans[1:])):
        first, last = i == 0, i == len(chans) - 2
        w = g.add_const(f"w{i}", _w(rng, (ci, co, 4, 4)))
        y = g.add_node("conv2d_transpose", [y, w], name=f"up{i}", strides=1 if first else 2,
                       padding=0 if first else 1)
        if last:
            y = g.add_node("tanh", [y], name="out")
        else:
            bn = [g.add_const(f"bn{i}_{j}", v.astype("float32")) for j, v in enumerate((
                rng.uniform(0.5, 1.5, co), rng.standard_normal(co), rng.standard_normal(co) * 0.1,
                rng.uniform(0.5, 2.0, co)))]  # fmt: skip
            y = g.add_node("relu", [g.add_node("batch_norm", [y, *bn], name=f"bn{i}", epsilon=1e-5)], name=f"act{i}")
    g.set_outputs(y)
    check_on_every_target(g.infer_types())


# ---------------------------------------------------------------------------- matmul

#: (id, a shape, b shape, tail): numpy's matmul, batch dimensions broadcast
MATMUL = [
    ("2d", (5, 6), (6, 7), None),
    ("attention-qk", (2, 3, 5, 4), (2, 3, 4, 5), "scale"),  # [B, H, S, D] x [B, H, D, S], then the scale
    ("attention-pv", (2, 3, 5, 5), (2, 3, 5, 4), None),
    ("projection-bsd-de", (2, 5, 6), (6, 7), "relu"),  # [B, S, D] x [D, E] with a computed right side
    ("broadcast-both", (3, 1, 4, 5), (2, 5, 6), None),
    ("matrix-vector", (4, 9), (9, 1), None),
    ("vit-like-197", (1, 2, 197, 8), (1, 2, 8, 197), "scale"),  # columns padded to whole vectors
    ("swin-window-49", (4, 49, 16), (4, 16, 49), None),
]


def _matmul_graph(ash: tuple[int, ...], bsh: tuple[int, ...], tail: str | None) -> Graph:
    g = Graph("matmul")
    g.add_input("a", ash)
    g.add_input("b", bsh)
    y = g.add_node("matmul", ["a", "b"], name="mm")
    if tail == "scale":
        y = g.add_node("mul", [y, g.add_const("scale", np.array(0.125, "float32"))], name="scaled")
    elif tail:
        y = g.add_node(tail, [y], name="act")
    g.set_outputs(y)
    return g.infer_types()


@pytest.mark.parametrize("case", MATMUL, ids=[c[0] for c in MATMUL])
def test_matmul(case: tuple) -> None:  # type: ignore[type-arg]
    check_on_every_target(_matmul_graph(*case[1:]))


def test_attention_block_has_no_host_step() -> None:
    """Scaled dot-product attention as exporters write it: Q @ Kᵀ (a transpose of K), the scale,
    an additive mask, softmax, then @ V; every node a kernel (or a view) on both targets."""
    rng = np.random.default_rng(SEED)
    b, h, s, d = 2, 2, 7, 8
    g = Graph("attention")
    for n in "qkv":
        g.add_input(n, (b, h, s, d))
    kt = g.add_node("transpose", ["k"], name="kt", perm=[0, 1, 3, 2])
    y = g.add_node("matmul", ["q", kt], name="qk")
    y = g.add_node("mul", [y, g.add_const("scale", np.array(d ** -0.5, "float32"))], name="scaled")
    mask = g.add_const("mask", np.where(rng.random((1, 1, s, s)) < 0.2, -1e4, 0.0).astype("float32"))
    y = g.add_node("add", [y, mask], name="masked")
    y = g.add_node("softmax", [y], name="attn", axis=-1)
    g.set_outputs(g.add_node("matmul", [y, "v"], name="out"))
    g = g.infer_types()
    check_on_every_target(g)
    m = compile_model(g, target="llvm")
    assert {k.target for k in m.kernels.values()} <= {"llvm", "view"}, m.table()
