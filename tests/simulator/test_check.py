"""Bad programs (vdla.simulator.check): unknown opcodes, bad fields, ranges past buffers or DRAM, a
missing FINISH: a ProgramError naming the instruction."""

from __future__ import annotations

import numpy as np
import pytest
from support.sim import DramImage, run_insns
from support.simref import (
    SMALL,
    Prog,
)

from vdla import isa
from vdla.config import Config
from vdla.isa import AluOp, Mem, Op
from vdla.simulator import (
    ExecutionError,
    ProgramError,
    SimulatorError,
    TokenError,
    run,
    simulate,
)

L, G, S = isa.Stage.LOAD, isa.Stage.COMPUTE, isa.Stage.STORE


def _bad(c: Config, insns, exc=ProgramError, dram_size: int = 1 << 16):
    with pytest.raises(exc) as ei:
        run_insns(c, insns, DramImage(dram_size))
    assert isinstance(ei.value, SimulatorError)
    return ei.value


def _mem_insn(**f):
    return isa.MemInsn(**f)


BAD_PROGRAMS = [
    ("unknown memory_type on LOAD", [_mem_insn(opcode=Op.LOAD, memory_type=7, x_size=1, y_size=1, x_stride=1)],
     0, "unknown memory_type 7"),
    ("unknown memory_type on STORE", [isa.nop(G), _mem_insn(opcode=Op.STORE, memory_type=6, x_size=1, y_size=1)],
     1, "unknown memory_type 6"),
    ("LOAD into OUT", [isa.load(Mem.OUT, x_size=1, y_size=1, x_stride=1, dram_base=1)], 0, "cannot LOAD into memory_type OUT"),
    ("STORE from INP", [isa.store(memory_type=Mem.INP, x_size=1, y_size=1, x_stride=1, dram_base=1)],
     0, "STORE reads only memory_type OUT, not INP"),
    ("padding on STORE", [isa.store(x_size=1, y_size=1, x_stride=1, dram_base=1, x_pad_1=1)], 0, "no padding"),
    ("padding on NOP STORE", [isa.store(y_pad_0=2)], 0, "no padding"),
    ("padding on UOP", [isa.load(Mem.UOP, x_size=1, y_size=1, x_stride=1, dram_base=1, y_pad_0=1)], 0,
     "UOP transfers take no padding"),
    ("DMA outside DRAM", [isa.nop(G), isa.load(Mem.ACC, x_size=2, y_size=2, x_stride=4, dram_base=(1 << 16) // 16 - 5)],
     1, "outside DRAM"),
    ("STORE outside DRAM", [isa.store(x_size=1, y_size=1, x_stride=1, dram_base=(1 << 16) // 4)], 0, "outside DRAM"),
    ("SRAM past depth", [isa.load(Mem.INP, sram_base=127, x_size=2, y_size=1, x_stride=2, dram_base=1)], 0,
     "INP SRAM range [127, 129) is past the buffer (depth 128)"),
    ("SRAM past depth via padding", [isa.load(Mem.ACC, sram_base=100, x_size=1, y_size=1, x_stride=1, dram_base=1,
                                              y_pad_1=15, x_pad_1=1)], 0, "past the buffer (depth 128)"),
    ("STORE SRAM past depth", [isa.store(sram_base=120, x_size=3, y_size=3, x_stride=3, dram_base=1)], 0,
     "OUT SRAM range [120, 129)"),
    ("uop_end past the uop buffer", [isa.gemm(uop_bgn=0, uop_end=257, iter_out=1, iter_in=1)], 0,
     "uop_end 257 is past the uop buffer (depth 256)"),
    ("uop_bgn > uop_end", [isa.nop(L), isa.alu(AluOp.ADD, uop_bgn=5, uop_end=3, iter_out=1, iter_in=1)], 1,
     "uop_bgn 5 is after uop_end 3"),
    ("unknown ALU opcode", [isa.AluInsn(opcode=Op.ALU, alu_opcode=5, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1)],
     0, "unknown alu_opcode 5"),
    ("LOAD INP with pop_prev", [isa.load(Mem.INP, pop_prev=1)], 0, "load module has no queue for pop_prev"),
    ("LOAD WGT with push_prev", [isa.load(Mem.WGT, push_prev=1)], 0, "load module has no queue for push_prev"),
    ("STORE with pop_next", [isa.store(pop_next=1)], 0, "store module has no queue for pop_next"),
    ("STORE with push_next", [isa.nop(L), isa.store(push_next=1)], 1, "store module has no queue for push_next"),
]


@pytest.mark.parametrize("opcode", [6, 7])
def test_unknown_opcode(opcode):
    c = SMALL
    words = isa.encode([isa.nop(G), isa.nop(G), isa.finish()], c)
    words[1, 0] = (int(words[1, 0]) & ~7) | opcode
    with pytest.raises(ProgramError) as ei:
        simulate(c, words)
    msg = str(ei.value)
    assert "instruction 1" in msg and f"opcode {opcode}" in msg
    image = DramImage(1 << 16)
    addr = image.place(words.astype("<u8"), 16)
    with pytest.raises(ProgramError, match=f"instruction 1: unknown opcode {opcode}"):
        run(c, image.dram, addr, 3)


def test_unknown_opcode_error_index():
    c = SMALL
    words = isa.encode([isa.nop(G), isa.nop(G), isa.finish()], c)
    words[1, 0] = (int(words[1, 0]) & ~7) | 6
    with pytest.raises(ProgramError) as ei:
        simulate(c, words)
    assert ei.value.index == 1


@pytest.mark.parametrize(("insns", "index", "text"), [pytest.param(i, k, t, id=n) for n, i, k, t in BAD_PROGRAMS])
def test_bad_instruction(insns, index, text):
    e = _bad(SMALL, insns + [isa.finish()])
    msg = str(e)
    assert f"instruction {index}" in msg and text in msg, msg
    assert e.index == index


def test_ranges_ending_exactly_at_the_limits_are_accepted():
    """Off-by-one guard for the bounds checks: SRAM, DRAM and uop ranges that end exactly at the end."""
    c = SMALL
    size = 1 << 16
    image = DramImage(size)
    insns = [
        isa.load(Mem.INP, sram_base=126, x_size=2, y_size=1, x_stride=2, dram_base=size // 4 - 2, push_next=1),
        isa.load(Mem.ACC, sram_base=0, x_size=1, y_size=2, x_stride=3, dram_base=size // 16 - 4, y_pad_1=1,
                 x_pad_1=15, pop_prev=1),  # (2 + 1) x 16 = 48 elements
        isa.gemm(uop_bgn=255, uop_end=256, iter_out=1, iter_in=1, dst_factor_out=127, push_next=1),
        isa.store(sram_base=127, x_size=1, y_size=1, x_stride=1, dram_base=size // 4 - 1, pop_prev=1, push_prev=1),
        isa.nop(G, pop_next=1),
        isa.finish(),
    ]
    image.dram[-64:] = 7  # last INP elements / ACC rows
    report, image, m = run_insns(c, insns, image)
    assert report.instructions == 6
    assert (m.inp[126:] == 7).all()
    assert (m.acc[[0, 16]] == 0x07070707).all() and not m.acc[1:16].any() and not m.acc[17:48].any()


def test_uop_index_past_buffer_names_iteration():
    c = SMALL
    p = Prog(c, 1 << 16)
    p.uops([(100, 0, 0), (120, 0, 0)])
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=2, iter_out=2, iter_in=3, dst_factor_out=5, dst_factor_in=2,
                  use_imm=1, imm=1))
    # (i, j, uop) -> dst: (0,0,*) 100,120 (0,1,*) 102,122 (0,2,*) 104,124 (1,0,*) 105,125 (1,1,*) 107,127
    # (1,2,0) 109, (1,2,1) 129 -> first out of range
    with pytest.raises(ExecutionError) as ei:
        p.run()
    msg = str(ei.value)
    assert ei.value.index == 1
    assert "instruction 1 (ALU)" in msg and "index 129" in msg and "depth 128" in msg
    assert "i=1, j=2, uop 1" in msg


@pytest.mark.parametrize(("what", "uop", "loops"), [
    ("INP (src)", (0, 127, 0), dict(iter_out=1, iter_in=2, src_factor_in=1)),
    ("WGT", (0, 0, 126), dict(iter_out=2, iter_in=1, wgt_factor_out=3)),
    ("ACC (dst)", (127, 0, 0), dict(iter_out=1, iter_in=2, dst_factor_in=1)),
])
def test_gemm_index_past_buffer_at_runtime(what, uop, loops):
    c = SMALL
    p = Prog(c, 1 << 16)
    p.uops([uop])
    p.add(isa.gemm(uop_bgn=0, uop_end=1, **loops))
    with pytest.raises(ExecutionError) as ei:
        p.run()
    assert what in str(ei.value) and "instruction 1 (GEMM)" in str(ei.value) and ei.value.index == 1


def test_alu_tensor_src_past_buffer():
    c = SMALL
    p = Prog(c, 1 << 16)
    p.uops([(0, 127, 0)])
    p.add(isa.alu(AluOp.MIN, uop_bgn=0, uop_end=1, iter_out=1, iter_in=2, src_factor_in=1, dst_factor_in=1))
    with pytest.raises(ExecutionError, match=r"ACC \(src\) index 128"):
        p.run()


def test_finish_missing():
    e = _bad(SMALL, [isa.nop(G), isa.nop(L)])
    assert "instruction 1" in str(e) and "must end with FINISH" in str(e) and e.index == 1


def test_finish_not_last():
    e = _bad(SMALL, [isa.nop(G), isa.finish(), isa.nop(G), isa.finish()])
    assert "instruction 1" in str(e) and "FINISH before the end" in str(e) and e.index == 1


def test_empty_program():
    with pytest.raises(ProgramError, match="empty program"):
        simulate(SMALL, np.zeros((0, 2), np.uint64))
    with pytest.raises(ProgramError, match="empty program"):
        run(SMALL, np.zeros(1 << 16, np.uint8), 0, 0)


def test_instruction_stream_outside_dram():
    with pytest.raises(ProgramError, match="inside DRAM"):
        run(SMALL, np.zeros(1 << 12, np.uint8), (1 << 12) - 16, 2)
    with pytest.raises(ProgramError, match="aligned"):
        run(SMALL, np.zeros(1 << 12, np.uint8), 8, 1)


def test_finish_may_push():
    """FINISH may push (SEMANTIC_CHOICES 'FINISH'); its token is then a leftover."""
    with pytest.raises(TokenError, match="g2l"):
        run_insns(SMALL, [isa.finish(push_prev=1)], DramImage(1 << 16))
