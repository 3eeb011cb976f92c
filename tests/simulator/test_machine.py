"""The golden simulator's instruction semantics (vdla.simulator.machine): LOAD (2D strides and
padding, every memory type), STORE and GEMM, each against the independent reference model
`support.simref.Ref`."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from support.sim import Geometry, pack_uops
from support.simref import (
    DEFAULT,
    PRESET_NAMES,
    SMALL,
    Prog,
    assert_same_state,
    depth_of,
    rng_acc,
    rng_fill,
    rng_inp,
    rng_wgt,
    set_out_rows,
    sync_load_to_compute,
)

from vdla import isa
from vdla.config import PRESETS
from vdla.isa import Mem

# (name, y_size, x_size, x_stride, y_pad_0, y_pad_1, x_pad_0, x_pad_1)
LOAD_SHAPES = [
    ("plain", 3, 2, 2, 0, 0, 0, 0),
    ("strided", 3, 2, 5, 0, 0, 0, 0),
    ("all-pads", 2, 3, 4, 1, 2, 3, 1),
    ("y1-pads", 1, 4, 4, 2, 1, 1, 2),
    ("stride>size", 4, 1, 7, 0, 1, 1, 0),
    ("overlap", 3, 4, 2, 1, 0, 0, 1),
    ("stride0", 3, 2, 0, 0, 0, 1, 0),
    ("pads15-y", 1, 2, 2, 15, 15, 0, 0),
    ("pads15-x", 2, 1, 1, 0, 0, 15, 15),
    ("pads15-all", 1, 1, 1, 15, 15, 15, 15),
]


LOAD_MEMS = [Mem.INP, Mem.WGT, Mem.ACC, Mem.ACC_8BIT, Mem.UOP]


def _load_cases():
    cases = []
    for name in PRESET_NAMES:
        c = PRESETS[name]
        for mem in LOAD_MEMS:
            for shape in LOAD_SHAPES:
                _, y, x, _, yp0, yp1, xp0, xp1 = shape
                if mem == Mem.UOP and (yp0 or yp1 or xp0 or xp1):
                    continue  # UOP loads take no padding (tested as an error below)
                span = (yp0 + y + yp1) * (xp0 + x + xp1)
                if 3 + span > depth_of(c, mem):
                    continue
                cases.append(pytest.param(name, mem, shape, id=f"{name}-{mem.name}-{shape[0]}"))
    return cases


L, G, S = isa.Stage.LOAD, isa.Stage.COMPUTE, isa.Stage.STORE


@pytest.mark.parametrize(("preset", "mem", "shape"), _load_cases())
def test_load_2d(preset, mem, shape):
    c = PRESETS[preset]
    _, y, x, stride, yp0, yp1, xp0, xp1 = shape
    rng = np.random.default_rng(zlib.crc32(f"{preset}-{mem.name}-{shape[0]}".encode()))
    p = Prog(c)
    span = (yp0 + y + yp1) * (xp0 + x + xp1)
    # Fill the target region (and a little beyond) with non-zero data first, so pad zeros show.
    fill_n = min(span + 6, depth_of(c, mem))
    p.load(mem, rng_fill(rng, c, mem, fill_n))
    n_src = (y - 1) * stride + x + 2
    p.load(mem, rng_fill(rng, c, mem, n_src), x_size=x, y_size=y, x_stride=stride, sram_base=3,
           y_pad_0=yp0, y_pad_1=yp1, x_pad_0=xp0, x_pad_1=xp1)
    if isa.stage_of(p.insns[-1]) == isa.Stage.LOAD:
        sync_load_to_compute(p)
        p.add(isa.nop(isa.Stage.COMPUTE, pop_prev=1))
    _, _, machine, ref, _ = p.run()
    assert_same_state(machine, ref, f"{preset} {mem.name} {shape}")


def test_load_literal_padding_layout():
    """A hand-worked 2D padded load, independent of Ref: INP on the small config (4 lanes)."""
    c = SMALL
    src = np.arange(1, 1 + 6 * 4, dtype=np.int8).reshape(6, 1, 4)  # element e holds 4e+1..4e+4
    p = Prog(c)
    # rows of 2 elements with stride 3 -> elements (0,1) and (3,4); pads: 1 row before, 1 col each side
    p.load(Mem.INP, src, x_size=2, y_size=2, x_stride=3, sram_base=5, y_pad_0=1, x_pad_0=1, x_pad_1=1)
    sync_load_to_compute(p)
    p.add(isa.nop(isa.Stage.COMPUTE, pop_prev=1))
    _, _, m, _, _ = p.run()
    got = m.inp[5 : 5 + 3 * 4, 0, 0].tolist()  # first lane of each written element
    assert got == [0, 0, 0, 0, 0, 1, 5, 0, 0, 13, 17, 0]
    assert not m.inp[:5].any() and not m.inp[17:].any()


@pytest.mark.parametrize("mem", [Mem.INP, Mem.ACC], ids=["INP", "ACC"])
def test_load_pad_only(mem):
    c = SMALL
    rng = np.random.default_rng(1)
    p = Prog(c)
    p.load(mem, rng_fill(rng, c, mem, 20))
    base = p.data(rng_fill(rng, c, mem, 4), mem)
    p.add(isa.load(mem, sram_base=2, dram_base=base, y_size=0, x_size=2, x_stride=2, y_pad_0=1, y_pad_1=1,
                   x_pad_0=1))
    if mem == Mem.INP:
        sync_load_to_compute(p)
        p.add(isa.nop(isa.Stage.COMPUTE, pop_prev=1))
    _, _, machine, ref, _ = p.run()
    assert_same_state(machine, ref, "pad-only")
    assert not getattr(machine, {Mem.INP: "inp", Mem.ACC: "acc"}[mem])[2:8].any()


def test_store_zero_rows():
    c = SMALL
    p = Prog(c)
    base = p.space(4, Mem.OUT, fill=0x55)
    p.add(isa.store(sram_base=0, dram_base=base, y_size=0, x_size=2, x_stride=2))
    _, dram, _, _, ref_dram = p.run()
    assert np.array_equal(dram, ref_dram)


def test_load_uop_2d():
    """UOP loads are 2D too (SEMANTIC_CHOICES 'UOP loads')."""
    c = DEFAULT
    words = pack_uops([(i, i + 1, i + 2) for i in range(12)], c)
    p = Prog(c)
    p.load(Mem.UOP, words, x_size=3, y_size=3, x_stride=4, sram_base=10)
    _, _, m, ref, _ = p.run()
    assert m.uop[10:19].tolist() == [int(words[k]) for k in (0, 1, 2, 4, 5, 6, 8, 9, 10)]
    assert_same_state(m, ref)


def test_load_acc_8bit_sign_extends():
    c = SMALL
    p = Prog(c)
    p.load(Mem.ACC_8BIT, np.array([[[-128, -1, 0, 127]], [[1, 2, -3, 4]]], dtype=np.int8), sram_base=1)
    _, _, m, ref, _ = p.run()
    assert m.acc[1:3].reshape(2, 4).tolist() == [[-128, -1, 0, 127], [1, 2, -3, 4]]
    assert_same_state(m, ref)


STORE_SHAPES = [("plain", 1, 5, 5), ("strided", 3, 2, 5), ("y1", 1, 3, 9), ("overlap", 3, 4, 2), ("stride0", 2, 3, 0)]


L, G, S = isa.Stage.LOAD, isa.Stage.COMPUTE, isa.Stage.STORE


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("shape", STORE_SHAPES, ids=[s[0] for s in STORE_SHAPES])
def test_store_2d(preset, shape):
    c = PRESETS[preset]
    _, y, x, stride = shape
    rng = np.random.default_rng(7)
    p = Prog(c)
    set_out_rows(p, rng_acc(rng, c, 16), sram_base=0)
    p.insns[-1] = p.insns[-1].replace(push_next=1)  # compute -> store
    base = p.space((y - 1) * stride + x + 8, Mem.OUT, fill=0x55)
    p.add(isa.store(sram_base=2, dram_base=base + 1, y_size=y, x_size=x, x_stride=stride, pop_prev=1, push_prev=1))
    p.add(isa.nop(isa.Stage.COMPUTE, pop_next=1))
    report, dram, m, ref, ref_dram = p.run()
    assert np.array_equal(dram, ref_dram), f"{preset} {shape}: DRAM after STORE differs from the reference"
    assert_same_state(m, ref)
    assert report.counters["out_store_nbytes"] == x * y * Geometry.of(c).out_bytes


L, G, S = isa.Stage.LOAD, isa.Stage.COMPUTE, isa.Stage.STORE


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_gemm_two_level_loops_all_factors(preset):
    c = PRESETS[preset]
    rng = np.random.default_rng(11)
    p = Prog(c)
    p.load(Mem.INP, rng_inp(rng, c, 40))
    p.load(Mem.WGT, rng_wgt(rng, c, 40))
    sync_load_to_compute(p)
    p.load(Mem.ACC, rng_acc(rng, c, 48, -1000, 1000), pop_prev=1)
    p.uops([(0, 1, 2), (3, 0, 5), (1, 4, 0)], sram_base=7)
    loops = dict(iter_out=3, iter_in=4, dst_factor_out=11, dst_factor_in=2, src_factor_out=7, src_factor_in=3,
                 wgt_factor_out=5, wgt_factor_in=6)
    p.add(isa.gemm(uop_bgn=7, uop_end=10, **loops))
    # reset over a strided subset, then accumulate again on top
    p.add(isa.gemm(reset=1, uop_bgn=8, uop_end=9, iter_out=2, iter_in=3, dst_factor_out=10, dst_factor_in=1))
    p.add(isa.gemm(uop_bgn=7, uop_end=9, **loops))
    report, _, m, ref, _ = p.run()
    assert_same_state(m, ref, preset)
    assert report.counters["gemm_counter"] == 3 * 12 + 2 * 12  # reset iterations are not counted


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("group", ["few-weights", "few-inputs", "repeated-dst"])
def test_gemm_many_iterations(preset, group):
    """Enough uop-iterations (>= 64) to take the simulator's grouped-BLAS and scatter-add paths."""
    c = PRESETS[preset]
    rng = np.random.default_rng(5)
    p = Prog(c)
    p.load(Mem.INP, rng_inp(rng, c, 72))
    p.load(Mem.WGT, rng_wgt(rng, c, 72))
    sync_load_to_compute(p)
    p.uops([(0, 0, 0), (1, 1, 1)], pop_prev=1)
    if group == "few-weights":
        loops = dict(iter_out=8, iter_in=8, dst_factor_out=16, dst_factor_in=2, src_factor_out=8, src_factor_in=1)
    elif group == "few-inputs":
        loops = dict(iter_out=8, iter_in=8, dst_factor_out=16, dst_factor_in=2, wgt_factor_out=8, wgt_factor_in=1)
    else:
        loops = dict(iter_out=8, iter_in=8, dst_factor_out=2, src_factor_out=8, src_factor_in=1, wgt_factor_in=3)
    p.add(isa.gemm(uop_bgn=0, uop_end=2, **loops))
    _, _, m, ref, _ = p.run()
    assert_same_state(m, ref, f"{preset} {group}")


def test_gemm_accumulator_wraps_at_32_bits():
    c = DEFAULT
    p = Prog(c)
    p.load(Mem.INP, np.full((1, 1, 16), 127, np.int8))
    p.load(Mem.WGT, np.full((1, 16, 16), 127, np.int8))
    sync_load_to_compute(p)
    start = (1 << 31) - 100
    p.load(Mem.ACC, np.full((1, 1, 16), start, "<i4"), pop_prev=1)
    p.uops([(0, 0, 0)])
    p.add(isa.gemm(uop_bgn=0, uop_end=1, iter_out=1, iter_in=2))  # adds 2 * 16 * 127 * 127
    _, _, m, ref, _ = p.run()
    expect = start + 2 * 16 * 127 * 127 - (1 << 32)
    assert expect < 0
    assert m.acc[0].ravel().tolist() == [expect] * 16
    assert m.out[0].ravel().tolist() == [((expect + 128) & 0xFF) - 128] * 16
    assert_same_state(m, ref)


def test_gemm_reset_does_not_read_inputs():
    """reset=1 zeroes ACC and OUT and reads neither INP nor WGT, so out-of-range src/wgt are fine."""
    c = SMALL
    p = Prog(c)
    set_out_rows(p, np.full((4, 1, 4), 9, "<i4"))
    p.uops([(1, 127, 127)], sram_base=1)
    p.add(isa.gemm(reset=1, uop_bgn=1, uop_end=2, iter_out=2, iter_in=1, dst_factor_out=1, src_factor_out=100,
                   wgt_factor_out=100))
    report, _, m, ref, _ = p.run()
    assert m.acc[:4, 0, 0].tolist() == [9, 0, 0, 9] and m.out[:4, 0, 0].tolist() == [9, 0, 0, 9]
    assert report.counters["gemm_counter"] == 0
    assert_same_state(m, ref)
