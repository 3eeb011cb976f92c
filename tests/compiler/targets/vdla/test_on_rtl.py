"""A compiled VDLA layer on the RTL: bit-exact on Verilator, and faster with virtual threads.

A reduced ResNet-18 conv layer (C6's channels and kernel at 8x8) is compiled with
`vdla.build(..., target="vdla")`, with one and with two virtual threads, and run on
Device("verilator") and Device("fsim"): both must equal the numpy int8 reference, and on
the RTL two threads must take strictly fewer cycles than one (load of one thread's tile
overlapping the other's compute), as on the golden simulator. A layer whose tail its GEMMs
compute (fuse_tail) and depthwise convs in CFG's window mode (the window template) are
bit-exact there too.
"""

from __future__ import annotations

import numpy as np
import pytest

from vdla import Device
from vdla.compiler import te
from vdla.compiler.accelerator import build
from vdla.compiler.targets.vdla.packing import window_weight_of
from vdla.compiler.targets.vdla.top import (
    Knobs,
    Tail,
    conv2d_packed,
    conv2d_reference,
    group_conv2d_reference,
    pack_bias,
    pack_data,
    pack_weight,
    schedule_conv2d_packed,
    unpack_data,
)
from vdla.compiler.targets.vdla.top.depthwise_window import build_depthwise_window
from vdla.compiler.targets.vdla.window import WindowConv, WindowTiles
from vdla.compiler.topi.workloads import OFFLOADED
from vdla.config import PRESETS
from vdla.isa import Mem, Op
from vdla.runtime.device import BUILTIN_BACKENDS

CFG = PRESETS["default"]
LAYER = next(lay for lay in OFFLOADED if lay.name == "C6")
SIZE = 8
TAIL = Tail(bias=True, shift=8)

pytestmark = pytest.mark.skipif("verilator" not in BUILTIN_BACKENDS, reason="Device('verilator') is not registered")


def _build(knobs: Knobs):
    b, ci, co = CFG.batch, CFG.block_in, CFG.block_out
    ic, oc, k, s, p = LAYER.ic, LAYER.oc, LAYER.k, LAYER.stride, LAYER.pad
    D = te.placeholder((1, ic // ci, SIZE, SIZE, b, ci), "int8", name="data")
    K = te.placeholder((oc // co, ic // ci, k, k, co, ci), "int8", name="kernel")
    B = te.placeholder((oc // co, b, co), "int32", name="bias")
    out = conv2d_packed(D, K, s, p, TAIL, bias=B, config=CFG)
    f = build(schedule_conv2d_packed(out, knobs, config=CFG), [D, K, B, out], config=CFG)
    return f, tuple(int(v.value) for v in out.shape)


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(6)
    x = rng.integers(-128, 128, (CFG.batch, LAYER.ic, SIZE, SIZE), dtype=np.int8)
    w = rng.integers(-128, 128, (LAYER.oc, LAYER.ic, LAYER.k, LAYER.k), dtype=np.int8)
    bias = rng.integers(-4000, 4000, (LAYER.oc,), dtype=np.int32)
    arrays = [pack_data(x, CFG.batch, CFG.block_in), pack_weight(w, CFG.block_out, CFG.block_in),
              pack_bias(bias, CFG.batch, CFG.block_out)]
    ref = conv2d_reference(x, w, LAYER.stride, LAYER.pad, TAIL, bias=bias)
    return arrays, ref


@pytest.mark.parametrize("threads", [1, 2])
def test_layer_is_bit_exact_on_verilator_and_fsim(case, threads):
    arrays, ref = case
    f, shape = _build(Knobs(vthreads=threads))
    for backend in ("fsim", "verilator"):
        out = np.zeros(shape, np.int8)
        f(Device(backend, config=CFG), *arrays, out)
        np.testing.assert_array_equal(unpack_data(out), ref, err_msg=f"{backend}, {threads} thread(s)")


def test_two_virtual_threads_take_fewer_rtl_cycles(case):
    arrays, _ = case
    cycles = {}
    for threads in (1, 2):
        f, shape = _build(Knobs(vthreads=threads))
        cycles[threads] = f(Device("verilator", config=CFG), *arrays, np.zeros(shape, np.int8)).cycles
    assert cycles[2] < cycles[1], f"RTL cycles: 2 threads {cycles[2]}, 1 thread {cycles[1]}"


@pytest.mark.parametrize("tile_ci, pads", [(1, (0, 8)), (2, (2, 15))], ids=["step9", "step18"])
def test_padded_bias_load_and_split_gemm_on_verilator(tile_ci: int, pads: tuple[int, int]) -> None:
    """A 3x3 layer whose tail the GEMMs do (fuse_tail): the first GEMM of a tile split into an
    init GEMM and the rest, the bias loaded with each row padded to the init GEMM's WGT step
    (9 or 18 rows: zeros after each row, or before and after), no reset, no ALU: the same output
    on the RTL as on fsim and numpy."""
    tail = Tail(bias=True, shift=9, clip=(0, 96))
    rng = np.random.default_rng(5)
    b, ci, co = CFG.batch, CFG.block_in, CFG.block_out
    x = rng.integers(-128, 128, (b, 32, 8, 8), dtype=np.int8)
    w = rng.integers(-128, 128, (64, 32, 3, 3), dtype=np.int8)
    bias = rng.integers(-4000, 4000, (64,), dtype=np.int32)
    D = te.placeholder((1, 32 // ci, 8, 8, b, ci), "int8", name="data")
    K = te.placeholder((64 // co, 32 // ci, 3, 3, co, ci), "int8", name="kernel")
    B = te.placeholder((64 // co, b, co), "int32", name="bias")
    out = conv2d_packed(D, K, 1, 1, tail, bias=B, config=CFG)
    knobs = Knobs(tile_co=2, tile_h=4, tile_w=8, tile_ci=tile_ci, oc_nthread=2)
    f = build(schedule_conv2d_packed(out, knobs, config=CFG), [D, K, B, out], config=CFG)
    insns = f.program.instructions()
    assert {(i.x_pad_0, i.x_pad_1) for i in insns if i.opcode == Op.LOAD and i.memory_type == Mem.ACC} == {pads}
    assert not any(i.opcode == Op.GEMM and i.reset for i in insns) and not any(i.opcode == Op.ALU for i in insns)
    ref = conv2d_reference(x, w, 1, 1, tail, bias=bias)
    arrays = [pack_data(x, b, ci), pack_weight(w, co, ci), pack_bias(bias, b, co)]
    for backend in ("fsim", "verilator"):
        got = np.zeros(tuple(int(v.value) for v in out.shape), np.int8)
        f(Device(backend, config=CFG), *arrays, got)
        np.testing.assert_array_equal(unpack_data(got), ref, err_msg=backend)


@pytest.mark.parametrize("k, tiles", [(3, WindowTiles(3, 7, 2)), (5, WindowTiles(7, 7, 2, 2)), (3, WindowTiles(4, 4, 1)),
                                     (3, WindowTiles(7, 7, 2, 2, rows=6))],
                         ids=["k3-rows", "k5-planes", "k3-cols", "k3-interleaved"])
def test_window_depthwise_on_verilator(k: int, tiles: WindowTiles) -> None:
    """A depthwise conv in CFG's window mode (the window template: one GEMM per kernel row and
    tile, warm-up, GEMM init from the bias, the epilogue; row tiles, whole planes of two channel
    blocks, column tiles with a warm-up of 2P; six input rows interleaved per pass, rows written
    three micro-ops apart): the same output on the RTL as on fsim and numpy."""
    tail = Tail(bias=True, shift=8, clip=(0, 96))
    rng = np.random.default_rng(k)
    c, h, w = 32, 7, 7
    x = rng.integers(-128, 128, (1, c, h, w), dtype=np.int8)
    wt = rng.integers(-128, 128, (c, 1, k, k), dtype=np.int8)
    bias = rng.integers(-4000, 4000, (c,), dtype=np.int32)
    conv = WindowConv(1, c // CFG.block_out, h, w, k, True, tail.shift, tail.clip)
    f = build_depthwise_window(conv, CFG, "dw", tiles)
    arrays = [pack_data(x, 1, CFG.block_in), window_weight_of(wt, CFG.block_out, CFG.block_in, tiles.rows),
              pack_bias(bias, 1, CFG.block_out)]
    ref = group_conv2d_reference(x, wt, c, 1, k // 2, tail, bias)
    for backend in ("fsim", "verilator"):
        got = np.zeros_like(arrays[0])
        f(Device(backend, config=CFG), *arrays, got)
        np.testing.assert_array_equal(unpack_data(got), ref, err_msg=backend)
