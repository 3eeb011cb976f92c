"""CFG, the GEMM epilogue and GEMM init on the golden simulator (vdla.simulator.machine):
hand-computed expectations for each rule of `isa.SEMANTIC_CHOICES`, then the same
programs against the independent reference model `support.simref.Ref`."""

from __future__ import annotations

import numpy as np
import pytest
from support.simref import DEFAULT, SMALL, Prog, assert_same_state, sync_load_to_compute

from vdla import isa
from vdla.isa import Mem
from vdla.simulator import ExecutionError, Machine
from vdla.simulator.golden import execute


def _ones(c, n: int, value: int = 1) -> np.ndarray:
    return np.full((n, c.batch, c.block_in), value, np.int8)


def _identity_weights(c, n: int) -> np.ndarray:
    """WGT row k = (k + 1) * identity: lane o of a GEMM on input x gets (k + 1) * x[o]."""
    w = np.zeros((n, c.block_out, c.block_in), np.int8)
    for k in range(n):
        w[k][np.arange(c.block_out), np.arange(c.block_in)] = k + 1
    return w


def _prog(c, acc_rows: np.ndarray, inp: np.ndarray, wgt: np.ndarray) -> Prog:
    p = Prog(c)
    p.load(Mem.INP, inp)
    p.load(Mem.WGT, wgt)
    sync_load_to_compute(p)
    p.load(Mem.ACC, acc_rows, pop_prev=1)
    return p


@pytest.mark.parametrize(
    ("shift", "lo", "hi", "epilogue", "expect"),
    [
        # ACC rows hold 1000 + 3 * 5 = 1015 and -1000 + 3 * 5 = -985 in every lane
        (0, 0, 0, 0, [1015 - 1024, -985 + 1024]),  # VTA narrowing: the low 8 bits
        (3, -128, 127, 1, [126, -124]),  # 1015 >> 3 = 126, -985 >> 3 = -124 (arithmetic, rounds down)
        (2, -128, 127, 1, [127, -128]),  # 253 and -247 saturate
        (7, 0, 6, 1, [6, 0]),  # ReLU6-style clip in the int8 scale
        (31, -128, 127, 1, [0, -1]),  # the widest shift
        (0, 5, -5, 1, [-5, -5]),  # lo > hi: max then min, so hi wins
    ],
)
def test_epilogue_shifts_and_clips_what_a_gemm_writes_to_out(shift, lo, hi, epilogue, expect):
    c = DEFAULT
    acc = np.zeros((2, 1, 16), "<i4")
    acc[0], acc[1] = 1000, -1000
    w = np.zeros((1, 16, 16), np.int8)
    w[0, np.arange(16), np.arange(16)] = 5
    p = _prog(c, acc, _ones(c, 1, 3), w)
    p.uops([(0, 0, 0), (1, 0, 0)])
    p.add(isa.cfg(shift=shift, clip_lo=lo, clip_hi=hi, epilogue=epilogue))
    p.add(isa.gemm(uop_bgn=0, uop_end=2, iter_out=1, iter_in=1))
    _, _, m, ref, _ = p.run()
    assert m.acc[:2, 0, 0].tolist() == [1015, -985]  # ACC keeps the full value
    assert m.out[:2, 0, 0].tolist() == expect
    assert_same_state(m, ref)


def test_epilogue_leaves_alu_writes_alone():
    c = DEFAULT
    p = _prog(c, np.full((1, 1, 16), 1000, "<i4"), _ones(c, 1), _identity_weights(c, 1))
    p.uops([(0, 0, 0)])
    p.add(isa.cfg(shift=4, clip_lo=-128, clip_hi=127, epilogue=1))
    p.add(isa.alu(isa.AluOp.ADD, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, use_imm=1, imm=24))
    _, _, m, ref, _ = p.run()
    assert m.out[0, 0, 0] == 1024 - 1024  # the low 8 bits of 1024, not 1024 >> 4 clipped
    assert_same_state(m, ref)


def test_init_starts_each_row_from_init_base_plus_its_weight_index():
    """A 1x1-style GEMM: rows 0-3 use WGT 0, rows 4-7 WGT 1; bias rows 20 and 21 = init_base + WGT index."""
    c = DEFAULT
    acc = np.zeros((22, 1, 16), "<i4")
    acc[:8] = 77777  # stale accumulators: init must ignore them
    acc[20], acc[21] = 100, -200
    p = _prog(c, acc, _ones(c, 4, 2), _identity_weights(c, 2))
    p.uops([(0, 0, 0), (4, 0, 1)])
    p.add(isa.cfg(init_base=20, shift=1, clip_lo=-128, clip_hi=127, epilogue=1))
    p.add(isa.gemm(init=1, uop_bgn=0, uop_end=2, iter_out=1, iter_in=4, dst_factor_in=1, src_factor_in=1))
    report, _, m, ref, _ = p.run()
    assert m.acc[:8, 0, 0].tolist() == [100 + 2] * 4 + [-200 + 4] * 4
    assert m.out[:8, 0, 0].tolist() == [51] * 4 + [-98] * 4
    assert report.counters["gemm_counter"] == 8
    assert_same_state(m, ref)


def test_reset_with_init_copies_the_bias_row_and_reads_no_weights():
    c = SMALL
    acc = np.zeros((12, 1, 4), "<i4")
    acc[10] = [1, -2, 300, -400]
    p = Prog(c)
    p.load(Mem.ACC, acc)
    p.uops([(0, 127, 0)])  # src past INP: a reset reads no input
    p.add(isa.cfg(init_base=10, clip_lo=-128, clip_hi=127, epilogue=1))
    p.add(isa.gemm(reset=1, init=1, uop_bgn=0, uop_end=1, iter_out=3, iter_in=1, dst_factor_out=1))
    report, _, m, ref, _ = p.run()
    assert m.acc[:3, 0].tolist() == [[1, -2, 300, -400]] * 3
    assert m.out[:3, 0].tolist() == [[1, -2, 127, -128]] * 3
    assert report.counters["gemm_counter"] == 0
    assert_same_state(m, ref)


def test_a_row_written_twice_by_one_init_gemm_keeps_its_last_iteration():
    c = DEFAULT
    acc = np.zeros((12, 1, 16), "<i4")
    acc[10], acc[11] = 1000, 2000
    p = _prog(c, acc, _ones(c, 1), _identity_weights(c, 2))
    p.uops([(0, 0, 0), (0, 0, 1)])  # both write row 0: from bias 10 + 1, then bias 11 + 2
    p.add(isa.cfg(init_base=10))
    p.add(isa.gemm(init=1, uop_bgn=0, uop_end=2, iter_out=1, iter_in=1))
    _, _, m, ref, _ = p.run()
    assert m.acc[0, 0, 0] == 2002
    assert_same_state(m, ref)


def test_an_init_row_the_same_gemm_writes_is_read_as_it_stands_then():
    """Iteration 0 writes row 1 (= init_base 1 + WGT 0); iteration 1 starts from that new value."""
    c = DEFAULT
    acc = np.zeros((3, 1, 16), "<i4")
    acc[1] = 10
    p = _prog(c, acc, _ones(c, 1), _identity_weights(c, 1))
    p.uops([(1, 0, 0), (2, 0, 0)])
    p.add(isa.cfg(init_base=1))
    p.add(isa.gemm(init=1, uop_bgn=0, uop_end=2, iter_out=1, iter_in=1))
    _, _, m, ref, _ = p.run()
    assert m.acc[1:3, 0, 0].tolist() == [11, 12]
    assert_same_state(m, ref)


def test_an_init_row_past_acc_names_the_instruction_and_iteration():
    c = SMALL
    p = Prog(c)
    p.load(Mem.INP, _ones(c, 1))
    p.load(Mem.WGT, _identity_weights(c, 4))
    sync_load_to_compute(p)
    p.uops([(0, 0, 0)], pop_prev=1)
    p.add(isa.cfg(init_base=c.acc_depth - 2))
    p.add(isa.gemm(init=1, uop_bgn=0, uop_end=1, iter_out=3, iter_in=1, dst_factor_out=1, wgt_factor_out=1))
    with pytest.raises(ExecutionError, match=r"GEMM\): ACC \(init: init_base \+ WGT index\) index "
                                             rf"{c.acc_depth} is past the buffer .* at iteration i=2"):
        p.run()


def test_finish_and_every_run_restore_the_defaults():
    """CFG's state does not outlive FINISH, nor reach the next run on the same machine."""
    c = DEFAULT
    m = Machine(c)
    m.execute(isa.cfg(init_base=5, shift=3, clip_lo=1, clip_hi=2, epilogue=1), 0, None)
    m.execute(isa.finish(), 1, None)
    assert (m.init_base, m.shift, m.clip_lo, m.clip_hi, m.epilogue) == (0, 0, 0, 0, False)
    m.execute(isa.cfg(shift=3, clip_lo=1, clip_hi=2, epilogue=1), 0, None)  # a run that never reached FINISH
    m.acc[0] = 1000
    m.uop_dst[0] = m.uop_src[0] = m.uop_wgt[0] = 0
    execute(c, [isa.gemm(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1), isa.finish()], np.zeros(64, np.uint8),
            machine=m)
    assert m.out[0, 0, 0] == 1000 - 1024  # narrowed as VTA does, not shifted and clipped to 1..2


def test_cfg_moves_tokens_like_any_compute_instruction():
    c = SMALL
    p = Prog(c)
    p.add(isa.nop(isa.Stage.LOAD, push_next=1))
    p.add(isa.cfg(pop_prev=1, push_next=1, shift=2, epilogue=1, clip_lo=-128, clip_hi=127))
    p.add(isa.store(pop_prev=1, push_prev=1))
    p.add(isa.cfg(pop_next=1))
    report, _, _, _, _ = p.run()
    assert report.modules["compute"].insns == 3  # two CFGs and FINISH
