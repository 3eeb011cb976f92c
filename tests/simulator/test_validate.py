"""One validation path (vdla.simulator.validate): every device rejects an invalid program
the way the golden simulator does, before the backend runs anything.

Table: one hand-written invalid program per rule, on fsim (the golden simulator itself)
and on pysim (the RTL, behind `Device.run`'s validation): same error class, instruction
index and message, and the RTL is never even elaborated. Then the uop buffer the
validator tracks across runs, and DRAM left untouched by a rejected program.
"""

from __future__ import annotations

import numpy as np
import pytest

from vdla import isa
from vdla.config import PRESETS
from vdla.isa import AluOp, Mem, Stage
from vdla.runtime import Device, Program
from vdla.simulator import DeadlockError, ExecutionError, ProgramError, TokenUnderflowError
from vdla.simulator.validate import Validator

C = PRESETS["small"]
DRAM = 1 << 18
F = isa.finish()


def _uops(*dst_src_wgt):
    return isa.encode_uops([isa.Uop(*u) for u in dst_src_wgt], C)


def _uop_load(n):
    return isa.load(Mem.UOP, x_size=n, y_size=1, x_stride=n)


ROW = dict(x_size=1, y_size=1, x_stride=1)
#: name -> (instructions, uops, error class, index, message fragment)
CASES = {
    "sram_past_inp": ([isa.load(Mem.INP, sram_base=C.inp_depth - 1, x_size=2, y_size=1, x_stride=2), F], None,
                      ProgramError, 0, "INP SRAM range"),
    "store_past_out": ([isa.store(sram_base=C.out_depth, **ROW), F], None, ProgramError, 0, "OUT SRAM range"),
    "uop_end_past": ([isa.gemm(uop_end=C.uop_depth + 1, iter_out=1, iter_in=1), F], None, ProgramError, 0,
                     "uop_end"),
    "uop_bgn_after_end": ([isa.alu(AluOp.ADD, uop_bgn=3, uop_end=2, iter_out=1, iter_in=1), F], None,
                          ProgramError, 0, "uop_bgn 3 is after uop_end 2"),
    "acc_index_past": ([_uop_load(1), isa.gemm(uop_end=1, iter_out=2, iter_in=1, dst_factor_out=C.acc_depth - 1,
                                               reset=1), F],
                       [(1, 0, 0)], ExecutionError, 1, "ACC (dst) index"),
    "alu_src_past": ([_uop_load(1), isa.alu(AluOp.ADD, uop_end=1, iter_out=2, iter_in=1,
                                            src_factor_out=C.acc_depth - 1), F],
                     [(0, 1, 0)], ExecutionError, 1, "ACC (src) index"),
    "finish_pops_nothing": ([isa.finish(pop_prev=1)], None, TokenUnderflowError, 0, "token underflow"),
    "load_pops_prev": ([isa.load(Mem.INP, pop_prev=1, **ROW), F], None, ProgramError, 0,
                       "load module has no queue for pop_prev"),
    "store_padding": ([isa.store(y_pad_0=1, **ROW), F], None, ProgramError, 0, "take no padding"),
    "uop_padding": ([isa.load(Mem.UOP, x_pad_1=1, **ROW), F], [(0, 0, 0)], ProgramError, 0, "take no padding"),
    "load_out": ([isa.load(Mem.OUT, **ROW), F], None, ProgramError, 0, "cannot LOAD into memory_type OUT"),
    "dram_past_end": ([isa.load(Mem.INP, dram_base=DRAM // C.inp_elem_bytes, **ROW), F], None, ProgramError, 0,
                      "outside DRAM"),
    "finish_not_last": ([isa.nop(Stage.COMPUTE), F, isa.nop(Stage.LOAD), F], None, ProgramError, 1,
                        "FINISH before the end"),
    "no_finish": ([isa.nop(Stage.COMPUTE)], None, ProgramError, 0, "must end with FINISH"),
    "full_queue_deadlock": ([isa.nop(Stage.LOAD, push_next=1)] * (C.dep_queue_depth + 1)
                            + [isa.nop(Stage.COMPUTE, pop_prev=1)] * (C.dep_queue_depth + 1)
                            + [isa.nop(Stage.STORE, pop_prev=1), F], None, TokenUnderflowError,
                            2 * C.dep_queue_depth + 2, "token underflow"),
}


def _program(insns, uops):
    words = isa.encode(insns, C)
    return Program.from_words(C, words, None if uops is None else _uops(*uops))


def _error(dev, prog):
    with pytest.raises((ProgramError, ExecutionError, DeadlockError)) as e:
        dev.run(prog)
    return e.value


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_device_rejects_like_the_golden_simulator(name):
    insns, uops, cls, index, fragment = CASES[name]
    prog = _program(insns, uops)
    fsim, pysim = Device("fsim", config=C, dram_size=DRAM), Device("pysim", config=C, dram_size=DRAM)
    want, got = _error(fsim, prog), _error(pysim, prog)
    assert type(want) is cls and want.index == index and fragment in str(want), f"{name}: fsim said {want!r}"
    assert (type(got), got.index, str(got)) == (type(want), want.index, str(want)), name
    assert pysim.backend._sim is None, f"{name}: the RTL was started for a program the validator rejects"


def test_valid_program_passes_and_runs():
    insns = [_uop_load(2), isa.gemm(uop_end=2, iter_out=1, iter_in=1, reset=1), F]
    prog = _program(insns, [(0, 0, 0), (1, 0, 0)])
    dev = Device("pysim", config=C, dram_size=DRAM)
    assert dev.run(prog).modules["compute"].insns == 3


def test_uop_buffer_is_remembered_across_runs():
    """Uops a previous run loaded count, as on hardware; a rejected run's uop loads do not."""
    v = Validator(C)
    dram = np.zeros(DRAM, np.uint8)

    def check(insns, uops=()):
        words = np.asarray(isa.encode(insns, C)).astype("<u8")
        dram[0x1000 : 0x1000 + words.nbytes] = words.view(np.uint8).ravel()
        u = _uops(*uops).astype("<u4") if uops else np.zeros(0, "<u4")
        dram[0x2000 : 0x2000 + u.nbytes] = u.view(np.uint8)
        v.check(dram, 0x1000, len(insns))

    gemm = isa.gemm(uop_end=1, iter_out=2, iter_in=1, dst_factor_out=C.acc_depth // 2, reset=1)
    load = isa.load(Mem.UOP, dram_base=0x2000 // 4, x_size=1, y_size=1, x_stride=1)
    check([load, gemm, F], [(C.acc_depth // 2 - 1, 0, 0)])  # indices acc/2-1 and acc-1: fine
    check([gemm, F])  # the uop is still there
    with pytest.raises(ExecutionError, match="ACC \\(dst\\) index"):
        check([load, gemm, F], [(C.acc_depth // 2, 0, 0)])  # acc_depth: past the end
    check([gemm, F])  # the rejected run did not replace the good uop


def test_rejected_program_leaves_dram_untouched():
    dev = Device("pysim", config=C, dram_size=DRAM)
    buf = dev.array(np.arange(64, dtype=np.uint8))
    out = isa.store(dram_base=buf.addr // C.out_elem_bytes, x_size=4, y_size=1, x_stride=4)
    with pytest.raises(TokenUnderflowError):
        dev.run(_program([out, isa.finish(pop_next=1)], None))
    assert np.array_equal(buf.read(np.uint8, (64,)), np.arange(64)), "the STORE ran"
    dev.run(_program([out, F], None), strict=False)  # without the bad pop it does run
    assert not buf.read(np.uint8, (64,))[: 4 * C.out_elem_bytes].any()


def test_validation_can_be_skipped_to_reach_the_core():
    prog = _program([isa.load(Mem.INP, pop_prev=1, **ROW), F], None)
    dev = Device("pysim", config=C, dram_size=DRAM)
    with pytest.raises(ProgramError, match="no queue for pop_prev"):
        dev.run(prog)
    dev.run(prog, strict=False, validate=False)  # the RTL ignores a flag it has no queue for
