"""Depthwise convs in CFG's window mode (:mod:`vdla.compiler.targets.vdla.top.depthwise_window`,
lowered by :mod:`vdla.compiler.targets.vdla.window`).

Table-driven against the int8 numpy reference on the golden simulator: K = 3, 5, 7; odd
widths, widths a tile does not cover (column tiles, forced and picked), heights a tile does
not cover, one, two and several channel blocks (whole planes of several blocks per tile, a
partial last group, weight loads of several blocks), two batch blocks, one and two threads;
a pass per kernel row and 3x3 kernels with 5 or 6 rows interleaved per pass (whole groups,
a last group recomputed, several tiles); with and without a bias, shifts
and clips as the requantisation and ReLU6 tails make them. The kernels run no ALU
instruction. A one-layer graph with the window on (the default Config) and off
(``gemm_window=False``: the grouped template, as before) gives the same output, bit-exact
with the reference both ways, and survives a model file. The strategy's choice and the
weight packing are checked on their own.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.graph import int8

from vdla import Device
from vdla.compiler.graph import Graph
from vdla.compiler.graph.executor import CompiledModel, compile_model
from vdla.compiler.graph.partition import PartitionPolicy
from vdla.compiler.graph.passes import prepare
from vdla.compiler.targets.vdla.packing import (
    pack_bias,
    pack_data,
    pack_weight,
    pack_window_weight,
    unpack_data,
    window_weight_of,
)
from vdla.compiler.targets.vdla.top import Tail, group_conv2d_reference
from vdla.compiler.targets.vdla.top.depthwise_window import build_depthwise_window, window_layer
from vdla.compiler.targets.vdla.window import WindowConv, WindowTiles
from vdla.config import preset
from vdla.isa import Op

DEFAULT = preset("default")
OFF = DEFAULT.replace(gemm_window=False)
REQ = Tail(bias=True, shift=7, clip=(0, 96))  # requantisation + ReLU6 (6 in the output scale)

#: (id, N, channels, H, W, K, tail, tiles (None: picked))
CASES = [
    ("k3-1blk-odd", 1, 16, 7, 9, 3, REQ, None),
    ("k3-2blk-nobias", 1, 32, 6, 5, 3, Tail(shift=3, clip=(-128, 127)), None),
    ("k3-rows", 1, 16, 11, 6, 3, REQ, WindowTiles(4, 6, 2)),
    ("k3-cols", 1, 16, 12, 13, 3, Tail(bias=True, shift=6, clip=(-7, 50)), WindowTiles(5, 4, 2)),
    ("k3-planes", 1, 48, 5, 5, 3, REQ, WindowTiles(5, 5, 2, 2)),
    ("k3-batch2", 2, 32, 4, 7, 3, Tail(bias=True, clip=(-128, 127)), None),
    ("k3-wide-picked", 1, 16, 3, 350, 3, REQ, None),
    ("k5-5blk", 1, 80, 9, 11, 5, Tail(bias=True, shift=8, clip=(-5, 20)), None),
    ("k5-cols-1thread", 1, 32, 7, 10, 5, REQ, WindowTiles(3, 6, 1)),
    ("k7-2blk", 1, 32, 8, 7, 7, Tail(bias=True, shift=9, clip=(0, 127)), None),
    ("k7-short", 1, 16, 2, 5, 7, REQ, None),
    ("k3-rows5", 1, 32, 9, 7, 3, REQ, WindowTiles(9, 7, 2, rows=5)),  # two groups of 3 rows, the last recomputed
    ("k3-rows5-tiles", 1, 16, 12, 5, 3, Tail(shift=4, clip=(-128, 127)), WindowTiles(3, 5, 2, rows=5)),
    ("k3-rows6-rest", 2, 16, 11, 6, 3, REQ, WindowTiles(7, 6, 2, rows=6, wgroup=1)),
    ("k3-rows6-1thread", 1, 48, 4, 9, 3, Tail(bias=True, shift=5, clip=(-20, 20)), WindowTiles(4, 9, 1, rows=6)),
    ("k3-k-passes-wgroups", 1, 80, 5, 5, 3, REQ, WindowTiles(5, 5, 2, 1, 0, 2)),
    ("k3-rows5-planes", 1, 48, 7, 7, 3, REQ, WindowTiles(7, 7, 2, 2, rows=5)),  # edge groups read the zero row
    ("k3-rows6-planes", 1, 64, 12, 5, 3, Tail(bias=True, shift=7, clip=(-128, 127)), WindowTiles(12, 5, 1, 4, 6, 2)),
    ("k3-rows6-planes-nobias", 1, 80, 5, 6, 3, Tail(shift=2, clip=(0, 127)), WindowTiles(5, 6, 2, 3, rows=6)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_window_depthwise_bit_exact(case: tuple) -> None:
    _, n, c, h, w, k, tail, tiles = case
    rng = np.random.default_rng(c + h * w + k)
    x, wt = int8(rng, (n, c, h, w)), int8(rng, (c, 1, k, k))
    bias = rng.integers(-6000, 6000, c).astype(np.int32) if tail.bias else None
    conv = WindowConv(n, c // 16, h, w, k, tail.bias, tail.shift, tail.clip)
    f = build_depthwise_window(conv, DEFAULT, "dw", tiles)
    arrays = [pack_data(x, 1, 16), window_weight_of(wt, 16, 16, f.info["window_rows"])]
    if tail.bias:
        arrays.append(pack_bias(bias, 1, 16))
    out = np.zeros_like(arrays[0])
    f(Device("fsim", config=DEFAULT), *arrays, out)
    np.testing.assert_array_equal(unpack_data(out), group_conv2d_reference(x, wt, c, 1, (k - 1) // 2, tail, bias))
    insns = f.program.instructions()
    assert not any(i.opcode == Op.ALU for i in insns)
    assert any(i.opcode == Op.CFG and i.window and i.warmup for i in insns)
    assert f.check_tokens().ok


def test_weight_packing() -> None:
    rng = np.random.default_rng(3)
    wt = int8(rng, (32, 1, 5, 5))
    win = window_weight_of(wt, 16, 16)
    assert win.shape == (2, 5, 16, 16)
    cb, ky, r = 1, 3, 7
    np.testing.assert_array_equal(win[cb, ky, r, :5], wt[16 * cb + r, 0, ky, ::-1])
    assert not win[:, :, :, 5:].any()
    w3 = int8(rng, (16, 1, 3, 3))
    rows = window_weight_of(w3, 16, 16, rows=6)  # tap m*6 + d: w[2-d, 2-m]
    assert rows.shape == (1, 1, 16, 16)
    np.testing.assert_array_equal(rows[0, 0, r, [0, 1, 2, 6, 7, 8, 12, 13, 14]], w3[r, 0, ::-1, ::-1].T.reshape(-1))
    assert np.count_nonzero(rows) == np.count_nonzero(w3)
    with pytest.raises(ValueError, match="interleaved"):
        window_weight_of(wt, 16, 16, rows=6)
    full = np.zeros((32, 16, 5, 5), np.int8)
    full[0, 3] = 1  # channel 0 reads input channel 3: not depthwise
    with pytest.raises(ValueError, match="block-diagonal"):
        pack_window_weight(pack_weight(full, 16, 16), 16)


@pytest.mark.parametrize("args,why", [
    (dict(strides=(2, 2)), "strides"),
    (dict(padding=(0, 0, 0, 0)), "padding"),
    (dict(weight=(2, 1, 4, 4, 16, 16)), "kernel 4x4"),
    (dict(tail=Tail(bias=True, residual=True)), "residual"),
    (dict(tail=Tail(bias=True, clip=None)), "tail"),
    (dict(tail=Tail(bias=True, clip=(0, 300))), "tail"),
    (dict(config=OFF), "no GEMM window"),
    (dict(groups=1), "depthwise"),
])
def test_which_layers_take_the_window(args: dict, why: str) -> None:
    kw = dict(config=DEFAULT, data=(1, 2, 8, 8, 1, 16), weight=(2, 1, 3, 3, 16, 16), groups=2, strides=(1, 1),
              padding=(1, 1, 1, 1), tail=REQ)
    assert isinstance(window_layer(*kw.values()), WindowConv)
    kw.update(args)
    got = window_layer(*kw.values())
    assert isinstance(got, str) and why in got


def _graph(c: int, k: int, size: int) -> Graph:
    """A depthwise conv + bias + ReLU6 + requantisation, as MobileNetV2's."""
    rng = np.random.default_rng(11)
    g = Graph("dw")
    g.add_input("x", (1, c, size, size + 1), "int8")
    y = g.add_node("conv2d", ["x", g.add_const("w", int8(rng, (c, 1, k, k), -127))], name="conv",
                   padding=(k // 2,) * 4, strides=(1, 1), groups=c)
    y = g.add_node("add", [y, g.add_const("b", rng.integers(-3000, 3001, (1, c, 1, 1)).astype(np.int32))], name="bias")
    y = g.add_node("clip", [y], name="act", min=0, max=6 << 8)
    g.set_outputs(g.add_node("requantize", [y], name="out", shift=8))
    return g.infer_types()


@pytest.mark.parametrize("c,k", [(2, 3), (16, 5), (40, 3)])
def test_graph_layer_window_on_and_off(c: int, k: int, tmp_path) -> None:  # type: ignore[no-untyped-def]
    g = _graph(c, k, 9)
    x = {"x": int8(np.random.default_rng(2), g.inputs["x"].shape)}
    outs, cycles = [], []
    for cfg in (DEFAULT, OFF):
        m = compile_model(prepare(g, None, cfg, policy=PartitionPolicy(skip_first_conv=False)), cfg)
        window = [f for f in m.functions if f.info.get("weight_layout") == "window"]
        assert len(window) == (cfg is DEFAULT)
        res = m.run(x, Device("fsim", config=cfg), reference=True)
        vd = [r for r in res.layers if r.target == "vdla"]
        assert vd and all(r.exact and r.max_err == 0 for r in vd)
        outs.append(res.outputs[0])
        cycles.append(sum(r.cycles for r in vd))
        if cfg is DEFAULT:  # the window weight travels in the model file
            m2 = CompiledModel.load(m.save(tmp_path / "dw.vdla"))
            np.testing.assert_array_equal(m2.run(x, Device("fsim", config=cfg)).outputs[0], res.outputs[0])
    np.testing.assert_array_equal(outs[0], outs[1])
    assert len(np.unique(outs[0])) > 4
    assert cycles[0] < cycles[1]


@pytest.mark.parametrize("name,k", [("batch2", 3), ("batch2", 5), ("small", 3)])
def test_other_configs(name: str, k: int) -> None:
    """Two batch rows per INP element (each lane (b, o) its own window), narrower blocks (no room
    for interleaved rows: a pass per kernel row)."""
    cfg = preset(name)
    b, c = cfg.batch, cfg.block_out
    rng = np.random.default_rng(k)
    x, wt = int8(rng, (2 * b, 3 * c, 6, 7)), int8(rng, (3 * c, 1, k, k))
    bias = rng.integers(-4000, 4000, 3 * c).astype(np.int32)
    f = build_depthwise_window(WindowConv(2, 3, 6, 7, k, True, REQ.shift, REQ.clip), cfg, "dw")
    arrays = [pack_data(x, b, c), window_weight_of(wt, c, cfg.block_in, f.info["window_rows"]), pack_bias(bias, b, c)]
    out = np.zeros_like(arrays[0])
    f(Device("fsim", config=cfg), *arrays, out)
    np.testing.assert_array_equal(unpack_data(out), group_conv2d_reference(x, wt, 3 * c, 1, k // 2, REQ, bias))
