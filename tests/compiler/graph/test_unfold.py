"""Shallow convolutions as an unfold on the CPU and a 1x1 convolution on VDLA
(:mod:`vdla.compiler.graph.unfold`): the ``unfold`` op against the reference conv (a k x k conv
of x equals the 1x1 conv of unfold(x) with the weight reshaped), the rule that picks the convs,
and stems end to end on the golden simulator, bit-exact against the int8 reference of the
original graph, with fewer cycles than the same conv with its channels padded per tap.

The property test runs with a fixed hypothesis seed (``@seed(35)``), so a failure reproduces.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st
from support.graph import int8

from vdla.compiler.graph import Graph, GraphError, run
from vdla.compiler.graph.executor import compile_model
from vdla.compiler.graph.ops.nn import conv2d_nchw
from vdla.compiler.graph.ops.registry import get_op, normalize_attrs
from vdla.compiler.graph.partition import PartitionPolicy
from vdla.compiler.graph.passes import prepare
from vdla.compiler.graph.unfold import saves_gemm_work, unfold_shallow_convs
from vdla.config import preset


def _unfold(x: np.ndarray, k: tuple[int, int], s: tuple[int, int], p: tuple[int, int, int, int]) -> np.ndarray:
    op = get_op("unfold")
    return op.compute(normalize_attrs("unfold", {"kernel": k, "strides": s, "padding": p}), [x])


@seed(35)
@settings(max_examples=25, deadline=None)
@given(c=st.integers(1, 5), o=st.integers(1, 6), h=st.integers(3, 9), w=st.integers(3, 9), kh=st.integers(1, 4),
       kw=st.integers(1, 4), sh=st.integers(1, 3), sw=st.integers(1, 3), pads=st.tuples(*[st.integers(0, 2)] * 4),
       data=st.data())
def test_unfold_then_1x1_equals_the_conv(c, o, h, w, kh, kw, sh, sw, pads, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="rng seed"))
    x = int8(rng, (2, c, h, w), -127, 127)
    wt = int8(rng, (o, c, kh, kw), -127, 127)
    if h + pads[0] + pads[2] < kh or w + pads[1] + pads[3] < kw:
        with pytest.raises(GraphError, match="smaller than the kernel"):
            get_op("unfold").infer(normalize_attrs("unfold", {"kernel": (kh, kw), "strides": (sh, sw),
                                                              "padding": pads}), [_type(x)])
        return
    cols = _unfold(x, (kh, kw), (sh, sw), pads)
    assert cols.shape[1] == c * kh * kw and cols.dtype == np.int8
    want = conv2d_nchw(x, wt, (sh, sw), pads)
    got = conv2d_nchw(cols, wt.reshape(o, c * kh * kw, 1, 1), (1, 1), (0, 0, 0, 0))
    np.testing.assert_array_equal(got, want)


def _type(x: np.ndarray):
    from vdla.compiler.graph.types import TensorType

    return TensorType(x.shape, str(x.dtype))


def test_unfold_rejects_bad_input():
    g = Graph("bad")
    g.add_input("x", (1, 3, 8), "int8")
    with pytest.raises(GraphError, match=r"node 'u' \(unfold\): unfold needs 4-D NCHW data"):
        g.add_node("unfold", ["x"], name="u", kernel=3)


# channels, kernel, block -> does unfolding save GEMM blocks?
RULE = [
    (3, 3, 16, True),    # 9 blocks of 16 -> 2 (27 values)
    (3, 7, 16, True),    # 49 -> 10 (147)
    (4, 8, 16, True),    # DQN's 8x8 stem on 4 frames: 64 -> 16
    (1, 3, 16, True),    # 9 -> 1
    (8, 3, 16, True),    # 9 -> 5 (72)
    (15, 3, 16, False),  # 135 values need 9 blocks, as 9 taps of one padded block do: no saving
    (16, 3, 16, False),  # whole blocks already
    (3, 1, 16, False),   # a 1x1 has no taps to move
    (12, 3, 16, True),   # 9 -> 7 (108)
]


@pytest.mark.parametrize("c, k, block, saves", RULE)
def test_which_convs_are_unfolded(c, k, block, saves):
    assert saves_gemm_work(c, k, k, block) is saves


def stem(c: int = 3, k: int = 3, stride: int = 2, size: int = 16, out: int = 24) -> Graph:
    """An int8 stem: conv (k x k, stride) with bias and ReLU, requantised, as the quantiser writes it."""
    g = Graph(f"stem{c}x{k}")
    rng = np.random.default_rng(7)
    g.add_input("x", (1, c, size, size), "int8")
    w = g.add_const("w", int8(rng, (out, c, k, k), -60, 60))
    b = g.add_const("b", rng.integers(-500, 500, (1, out, 1, 1)).astype(np.int32))
    y = g.add_node("conv2d", ["x", w], name="conv", strides=stride, padding=k // 2)
    y = g.add_node("add", [y, b], name="bias")
    y = g.add_node("relu", [y], name="act")
    g.set_outputs(g.add_node("requantize", [y], name="out", shift=8))
    return g.infer_types()


@pytest.mark.parametrize("c, k, stride", [(3, 3, 2), (3, 7, 2), (1, 3, 1)])
def test_stem_runs_unfolded_on_vdla_bit_exact_in_fewer_cycles(c, k, stride):
    g = stem(c, k, stride)
    cfg = preset("default")
    policy = PartitionPolicy(skip_first_conv=False)
    p = prepare(g, None, cfg, policy=policy, fusion=False, pack=False)
    conv, col = p.node("conv"), next(n for n in p.nodes if n.op == "unfold")
    assert col.target == "cpu" and f"{c}-channel input" in col.notes["reason"]
    assert conv.target == "vdla" and g.type_of("w").shape[1:] == (c, k, k)
    assert p.type_of(conv.inputs[1]).shape == (24, c * k * k, 1, 1) and "unfolded" in conv.notes["reason"]
    x = {"x": int8(np.random.default_rng(3), g.inputs["x"].shape, -100, 100)}
    want = run(g, x)[0]  # the original graph's k x k conv
    m = compile_model(prepare(g, None, cfg, policy=policy), cfg)
    res = m.run(x, reference=True)
    np.testing.assert_array_equal(res.outputs[0], want)
    assert all(r.exact is not False for r in res.layers)
    vd = [r for r in res.layers if r.target == "vdla"]
    assert sum(r.macs for r in vd) == int(np.prod(want.shape)) * c * k * k  # the real MACs, all on VDLA
    # the same conv with its channels padded to a block at every tap: more cycles
    padded = compile_model(_prepare_without_unfold(g, cfg, policy), cfg).run(x, reference=True)
    np.testing.assert_array_equal(padded.outputs[0], want)
    assert sum(r.cycles for r in vd) < sum(r.cycles for r in padded.layers if r.target == "vdla")


def _prepare_without_unfold(g: Graph, cfg, policy) -> Graph:
    from vdla.compiler.graph.fuse import fuse
    from vdla.compiler.graph.layout import to_packed_layout
    from vdla.compiler.graph.partition import partition
    from vdla.compiler.graph.passes import simplify

    return fuse(to_packed_layout(partition(simplify(g), policy, cfg), cfg))


def test_deep_and_cpu_convs_are_left_alone():
    g = stem(16, 3, 1)
    p = partition_only(g, PartitionPolicy(skip_first_conv=False))
    assert unfold_shallow_convs(p, preset("default")) is p  # 16 channels fill the block
    p = partition_only(stem(), PartitionPolicy(cpu_nodes=frozenset({"conv"})))
    assert unfold_shallow_convs(p, preset("default")) is p  # kept on the CPU by the policy


def partition_only(g: Graph, policy: PartitionPolicy) -> Graph:
    from vdla.compiler.graph.partition import partition

    return partition(g, policy, preset("default"))
