"""The tensor ALU's operations (vdla.simulator.alu, run through the machine): every op with
immediates and tensor operands, wraparound, shifts, narrowing and hazards, against
`support.simref.Ref`."""

from __future__ import annotations

import numpy as np
import pytest
from support.simref import (
    PRESET_NAMES,
    SMALL,
    Prog,
    assert_same_state,
    rng_acc,
    set_out_rows,
    wrap,
)

from vdla import isa
from vdla.config import PRESETS
from vdla.isa import AluOp, Mem

ALU_OPS = [AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR, AluOp.MUL]


# (a, shift operand, expected) — SEMANTIC_CHOICES "SHR amount": low 6 bits as signed, -32..31.
SHIFT_CASES = [
    (-(1 << 31), 31, -1),
    ((1 << 31) - 1, 31, 0),
    (-5, 1, -3),  # arithmetic shift rounds toward -inf
    (-1, 31, -1),
    (3, -1, 6),
    (0x40000001, -1, -0x7FFFFFFE),  # left shift wraps
    (1, -31, -(1 << 31)),
    (123456, -32, 0),  # left by 32: everything shifted out
    (-123456, -32, 0),
    (7, 32, 0),  # 32 = 0b100000 -> -32
    (7, 63, 14),  # 63 -> -1: left by one
    (7, 64, 7),  # 64 -> 0
    (1 << 20, -33, 0),  # -33 -> 31: right by 31
    (-(1 << 20), -33, -1),
    (1 << 20, 0x7FFF, (1 << 20) << 1),  # 32767 -> low bits 0b111111 -> -1
    (100, -32768, 100),  # -32768 -> low bits 0 -> no shift
]


# (op, a, b, expected)
WRAP_CASES = [
    (AluOp.ADD, (1 << 31) - 1, 1, -(1 << 31)),
    (AluOp.ADD, -(1 << 31), -1, (1 << 31) - 1),
    (AluOp.ADD, -(1 << 31), -(1 << 31), 0),
    (AluOp.MUL, 65536, 65536, 0),
    (AluOp.MUL, (1 << 31) - 1, 3, (1 << 31) - 3),
    (AluOp.MUL, -(1 << 31), -1, -(1 << 31)),
    (AluOp.MUL, 46341, 46341, 46341 * 46341 - (1 << 32)),
    (AluOp.MIN, -(1 << 31), (1 << 31) - 1, -(1 << 31)),
    (AluOp.MAX, -(1 << 31), (1 << 31) - 1, (1 << 31) - 1),
]


L, G, S = isa.Stage.LOAD, isa.Stage.COMPUTE, isa.Stage.STORE


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("op", ALU_OPS, ids=[o.name for o in ALU_OPS])
@pytest.mark.parametrize("use_imm", [0, 1], ids=["tensor", "imm"])
def test_alu_ops(preset, op, use_imm):
    c = PRESETS[preset]
    rng = np.random.default_rng(int(op) * 2 + use_imm)
    p = Prog(c)
    acc = rng_acc(rng, c, 40)
    if op == AluOp.SHR and not use_imm:
        # amounts across -40..40 plus raw full-range values (only the low 6 bits count)
        acc[20:30] = rng.integers(-40, 41, acc[20:30].shape)
    p.load(Mem.ACC, acc)
    p.uops([(0, 20, 0), (1, 21, 0), (5, 33, 0)])
    imm = {AluOp.SHR: -7, AluOp.MUL: -30001, AluOp.ADD: 32767, AluOp.MIN: -5, AluOp.MAX: 12345}[op]
    p.add(isa.alu(op, uop_bgn=0, uop_end=3, iter_out=2, iter_in=3, dst_factor_out=8, dst_factor_in=2,
                  src_factor_out=1, src_factor_in=2, use_imm=use_imm, imm=imm if use_imm else 0))
    report, _, m, ref, _ = p.run()
    assert_same_state(m, ref, f"{preset} {op.name} imm={use_imm}")
    assert report.counters["alu_counter"] == 18


@pytest.mark.parametrize("use_imm", [1, 0], ids=["imm", "tensor"])
def test_shr_amount_range_ends(use_imm):
    c = SMALL
    p = Prog(c)
    rows = np.zeros((2 * len(SHIFT_CASES), 1, 4), "<i4")
    for n, (a, b, _) in enumerate(SHIFT_CASES):
        rows[2 * n] = a
        rows[2 * n + 1] = b
    p.load(Mem.ACC, rows)
    for n, (_, b, _) in enumerate(SHIFT_CASES):
        p.uops([(2 * n, 2 * n + 1, 0)], sram_base=n)
        p.add(isa.alu(AluOp.SHR, uop_bgn=n, uop_end=n + 1, iter_out=1, iter_in=1, use_imm=use_imm,
                      imm=b if use_imm else 0))
    _, _, m, ref, _ = p.run()
    got = [int(m.acc[2 * n, 0, 0]) for n in range(len(SHIFT_CASES))]
    assert got == [e for _, _, e in SHIFT_CASES]
    assert_same_state(m, ref)


@pytest.mark.parametrize(("op", "a", "b", "expected"), WRAP_CASES)
def test_alu_wraparound_literal(op, a, b, expected):
    c = SMALL
    p = Prog(c)
    p.load(Mem.ACC, np.array([[[a] * 4], [[b] * 4]], "<i4"))
    p.uops([(0, 1, 0)])
    p.add(isa.alu(op, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1))
    _, _, m, _, _ = p.run()
    assert m.acc[0].ravel().tolist() == [expected] * 4
    assert m.out[0].ravel().tolist() == [wrap(expected, 8)] * 4


def test_alu_immediate_sign_extension():
    c = SMALL
    p = Prog(c)
    p.load(Mem.ACC, np.full((1, 1, 4), 1000, "<i4"))
    p.uops([(0, 99, 0)])  # src is ignored with use_imm, even when the loop takes it past the buffer (199)
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=1, iter_out=2, iter_in=1, src_factor_out=100, use_imm=1,
                  imm=-32768))
    _, _, m, _, _ = p.run()
    assert m.acc[0].ravel().tolist() == [1000 - 2 * 32768] * 4


def test_narrowing_truncates_and_store_writes_low_bits():
    c = SMALL
    vals = [0x12345680, 0x7F, 0x80, -129, 255, -1, 0x100, (1 << 31) - 1]
    p = Prog(c)
    set_out_rows(p, np.array(vals, "<i4").reshape(2, 1, 4))
    p.insns[-1] = p.insns[-1].replace(push_next=1)
    base = p.space(2, Mem.OUT, fill=0x55)
    p.add(isa.store(sram_base=0, dram_base=base, y_size=1, x_size=2, x_stride=2, pop_prev=1, push_prev=1))
    p.add(isa.nop(isa.Stage.COMPUTE, pop_next=1))
    _, dram, m, _, ref_dram = p.run()
    stored = dram[base * 4 : base * 4 + 8].view(np.int8).tolist()
    assert stored == [-128, 127, -128, 127, -1, -1, 0, -1]
    assert np.array_equal(dram, ref_dram)
    assert m.acc[:2].ravel().tolist() == vals


def test_load_acc_does_not_write_out():
    c = SMALL
    p = Prog(c)
    set_out_rows(p, np.full((1, 1, 4), 5, "<i4"))
    p.load(Mem.ACC, np.full((1, 1, 4), 7, "<i4"))
    p.load(Mem.ACC_8BIT, np.full((1, 1, 4), 9, np.int8), sram_base=1)
    p.insns[-1] = p.insns[-1].replace(push_next=1)
    base = p.space(2, Mem.OUT, fill=0x55)
    p.add(isa.store(sram_base=0, dram_base=base, y_size=1, x_size=2, x_stride=2, pop_prev=1, push_prev=1))
    p.add(isa.nop(isa.Stage.COMPUTE, pop_next=1))
    _, dram, m, ref, _ = p.run()
    assert m.acc[:2, 0, 0].tolist() == [7, 9]
    assert m.out[:2, 0, 0].tolist() == [5, 0]
    assert dram[base * 4 : base * 4 + 8].view(np.int8).tolist() == [5] * 4 + [0] * 4
    assert_same_state(m, ref)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_alu_sequential_prefix_sum_and_running_max(preset):
    """Iteration t reads the row iteration t-1 wrote: sequential semantics, not vectorised."""
    c = PRESETS[preset]
    rng = np.random.default_rng(3)
    rows = rng_acc(rng, c, 8, -1000, 1000)
    p = Prog(c)
    p.load(Mem.ACC, rows)
    p.load(Mem.ACC, rows, sram_base=8)
    p.uops([(1, 0, 0)])  # ACC[r+1] = op(ACC[r+1], ACC[r])
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=1, iter_out=7, iter_in=1, dst_factor_out=1, src_factor_out=1))
    p.uops([(9, 8, 0)], sram_base=1)
    p.add(isa.alu(AluOp.MAX, uop_bgn=1, uop_end=2, iter_out=1, iter_in=7, dst_factor_in=1, src_factor_in=1))
    _, _, m, ref, _ = p.run()
    r64 = rows.astype(np.int64)
    assert np.array_equal(m.acc[:8], np.cumsum(r64, axis=0))
    assert np.array_equal(m.acc[8:16], np.maximum.accumulate(r64, axis=0))
    assert_same_state(m, ref, preset)


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("op", [AluOp.MAX, AluOp.MIN, AluOp.ADD], ids=["MAX", "MIN", "ADD"])
def test_alu_repeated_destination_pooling(preset, op):
    """Pooling: 2 outputs, each reducing 4 rows into one destination row written 4 times."""
    c = PRESETS[preset]
    rng = np.random.default_rng(4)
    rows = rng_acc(rng, c, 8, -10**6, 10**6)
    init = {AluOp.MAX: -(1 << 31), AluOp.MIN: (1 << 31) - 1, AluOp.ADD: 0}[op]
    p = Prog(c)
    p.load(Mem.ACC, rows)
    p.load(Mem.ACC, np.full((2, c.batch, c.block_out), init, "<i4"), sram_base=16)
    p.uops([(16, 0, 0)])
    p.add(isa.alu(op, uop_bgn=0, uop_end=1, iter_out=2, iter_in=4, dst_factor_out=1, src_factor_out=4,
                  src_factor_in=1))
    # and with an immediate on a repeated destination (idempotent for MIN/MAX, not for ADD)
    p.uops([(20, 0, 0), (21, 0, 0)], sram_base=1)
    p.add(isa.alu(op, uop_bgn=1, uop_end=3, iter_out=3, iter_in=1, use_imm=1, imm=-3))
    _, _, m, ref, _ = p.run()
    r = rows.astype(np.int64).reshape(2, 4, c.batch, c.block_out)
    red = {AluOp.MAX: r.max(axis=1), AluOp.MIN: r.min(axis=1), AluOp.ADD: r.sum(axis=1)}[op]
    assert np.array_equal(m.acc[16:18], red)
    imm_res = {AluOp.MAX: 0, AluOp.MIN: -3, AluOp.ADD: -9}[op]
    assert m.acc[20:22].ravel().tolist() == [imm_res] * (2 * c.batch * c.block_out)
    assert_same_state(m, ref, f"{preset} {op.name}")


def test_alu_hazards_within_one_instruction():
    """WAR then RAW inside one ALU instruction: uop 0 reads row 1 before uop 1 writes it,
    uop 2 reads row 1 after."""
    c = SMALL
    p = Prog(c)
    p.load(Mem.ACC, np.arange(4, dtype="<i4").repeat(4).reshape(4, 1, 4) + 1)  # rows 1,2,3,4
    p.uops([(0, 1, 0), (1, 2, 0)])  # ACC[0] += ACC[1]; ACC[1] += ACC[2]  (dst 0 reads row 1 before it changes)
    p.uops([(2, 1, 0)], sram_base=2)  # then ACC[2] += ACC[1] (row 1 already updated)
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=3, iter_out=1, iter_in=1))
    _, _, m, ref, _ = p.run()
    assert m.acc[:3, 0, 0].tolist() == [3, 5, 8]
    assert_same_state(m, ref)
