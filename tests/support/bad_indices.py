"""Programs with one index past a buffer, for the RTL's own run-time checks (`vdla.hardware.errors`).

`cases(config)` maps a name to a `BadIndex`: a short program whose instruction ``index`` has
an SRAM row, a uop range or a uop-loop index past its buffer, with the `ErrorCode` the core
must raise for it (None for the look-alikes the golden simulator accepts: a GEMM reset and
an ALU immediate do not read their src/wgt indices). GEMM init's row (CFG's init_base + the
WGT index) is checked against ACC, with reset too. Tests run each with
``Device.run(..., validate=False)`` on an RTL device and compare with the golden verdict.
Depths come from the Config, so the cases fit any preset.
"""

from __future__ import annotations

from dataclasses import dataclass

from vdla import isa
from vdla.config import Config
from vdla.hardware.errors import ErrorCode
from vdla.isa import AluOp, Mem, Stage
from vdla.runtime import Device, Program
from vdla.simulator import SimulatorError

__all__ = ["BadIndex", "cases", "data_bytes", "verdict"]

def data_bytes(c: Config) -> int:
    """Bytes the cases' LOADs and STOREs touch from `cases`' ``data`` (two elements of the widest type)."""
    return 2 * max(isa.elem_bytes(c, m) for m in (Mem.INP, Mem.WGT, Mem.ACC, Mem.OUT))


@dataclass(frozen=True)
class BadIndex:
    program: Program
    index: int  # the offending instruction
    code: ErrorCode | None  # what the core raises (None: a valid program)


def cases(c: Config, data: int) -> dict[str, BadIndex]:
    """The cases for `c`; LOADs read and STOREs write DRAM from byte `data` (4 KiB aligned:
    a `Device.alloc` buffer of `data_bytes(c)` bytes, so nothing else lives there)."""
    inp, wgt, acc, uop = c.inp_depth, c.wgt_depth, c.acc_depth, c.uop_depth

    def at(mem: Mem) -> int:
        return data // isa.elem_bytes(c, mem)

    def prog(name: str, insns: list, uops: list | None = None) -> Program:
        words = isa.encode(insns, c)
        return Program.from_words(c, words, isa.encode_uops(uops, c) if uops else None, name=name)

    def load_uops(n: int = 1, **kw) -> object:
        return isa.load(Mem.UOP, x_size=n, y_size=1, x_stride=n, **kw)

    def loop(op, uops: list, **kw) -> list:  # LOAD UOP, the loop (instruction 1), FINISH
        return [load_uops(len(uops)), op(**kw), isa.finish()], uops

    fin = isa.finish
    one = [isa.Uop(0, 0, 0)]
    table: dict[str, tuple[list, list | None, int, ErrorCode | None]] = {
        # LOADs into INP/WGT (load stage) and ACC/UOP (compute), a STORE from OUT: rows past the end.
        "load_inp": ([isa.load(Mem.INP, sram_base=inp - 1, dram_base=at(Mem.INP), x_size=2, y_size=1, x_stride=2,
                               push_next=1), fin(pop_prev=1)], None, 0, ErrorCode.SRAM_RANGE),
        "load_wgt_padding": ([isa.load(Mem.WGT, sram_base=wgt - 2, dram_base=at(Mem.WGT), x_size=1, y_size=1, x_stride=1,
                                       y_pad_1=2, push_next=1), fin(pop_prev=1)], None, 0, ErrorCode.SRAM_RANGE),
        "load_acc": ([isa.nop(Stage.COMPUTE), isa.load(Mem.ACC, sram_base=acc - 1, dram_base=at(Mem.ACC), x_size=1,
                                                       y_size=2, x_stride=1), fin()], None, 1, ErrorCode.SRAM_RANGE),
        "load_uop": ([load_uops(2, sram_base=uop - 1), fin()], one * 2, 0, ErrorCode.SRAM_RANGE),
        "store_out": ([isa.nop(Stage.COMPUTE, push_next=1),
                       isa.store(sram_base=acc - 1, dram_base=at(Mem.OUT), x_size=2, y_size=1, x_stride=2, pop_prev=1,
                                 push_prev=1), fin(pop_next=1)], None, 1, ErrorCode.SRAM_RANGE),
        # An error while fetch still holds more than the stage's command queue can take: the core
        # must drain the rest of the stream, not wait for the halted stage (it once deadlocked).
        "load_then_a_full_queue": ([isa.load(Mem.INP, sram_base=inp - 1, dram_base=at(Mem.INP), x_size=2, y_size=1,
                                             x_stride=2), *[isa.nop(Stage.LOAD)] * (c.cmd_queue_depth + 2), fin()],
                                   None, 0, ErrorCode.SRAM_RANGE),
        # uop ranges.
        "uop_end": (*loop(isa.gemm, one, uop_end=uop + 1, iter_out=1, iter_in=1), 1, ErrorCode.UOP_RANGE),
        "uop_bgn_after_end": (*loop(isa.gemm, one, uop_bgn=2, uop_end=1, iter_out=1, iter_in=1), 1,
                              ErrorCode.UOP_RANGE),
        # uop-loop indices: the third outer iteration lands past the buffer (2 * (depth - 1)).
        "gemm_dst": (*loop(isa.gemm, one, uop_end=1, iter_out=3, iter_in=1, dst_factor_out=acc - 1), 1,
                     ErrorCode.UOP_INDEX),
        "gemm_src": (*loop(isa.gemm, one, uop_end=1, iter_out=1, iter_in=3, src_factor_in=inp - 1), 1,
                     ErrorCode.UOP_INDEX),
        "gemm_wgt": (*loop(isa.gemm, one, uop_end=1, iter_out=3, iter_in=1, wgt_factor_out=wgt - 1), 1,
                     ErrorCode.UOP_INDEX),
        "gemm_uop_dst": (*loop(isa.gemm, [isa.Uop(acc - 1, 0, 0)], uop_end=1, iter_out=1, iter_in=2,
                               dst_factor_in=1), 1, ErrorCode.UOP_INDEX),
        "alu_dst": (*loop(lambda **kw: isa.alu(AluOp.ADD, use_imm=1, imm=5, **kw), [isa.Uop(1, 0, 0)], uop_end=1,
                          iter_out=2, iter_in=1, dst_factor_out=acc - 1), 1, ErrorCode.UOP_INDEX),
        "alu_src": (*loop(lambda **kw: isa.alu(AluOp.MAX, **kw), one, uop_end=1, iter_out=3, iter_in=1,
                          src_factor_out=acc - 1), 1, ErrorCode.UOP_INDEX),
        # GEMM init: the row CFG's init_base + the WGT index past ACC (instruction 2, after the CFG),
        # accumulating or copying (reset); a WGT loop sum past WGT's width, unread with reset.
        "gemm_init": ([load_uops(1), isa.cfg(init_base=acc - 2), isa.gemm(init=1, uop_end=1, iter_out=3, iter_in=1,
                                                                         dst_factor_out=1, wgt_factor_out=1), fin()],
                      one, 2, ErrorCode.UOP_INDEX),
        "gemm_init_reset": ([load_uops(1), isa.cfg(init_base=acc - 2), isa.gemm(init=1, reset=1, uop_end=1, iter_out=3,
                                                                               iter_in=1, wgt_factor_out=1), fin()],
                            one, 2, ErrorCode.UOP_INDEX),
        "gemm_init_wide_wgt": ([load_uops(1), isa.cfg(init_base=2), isa.gemm(init=1, reset=1, uop_end=1, iter_out=3,
                                                                            iter_in=1, wgt_factor_out=wgt - 1), fin()],
                               one, 2, ErrorCode.UOP_INDEX),
        # Look-alikes the golden simulator accepts: the indices past the end are never read.
        "gemm_reset_src_wgt": (*loop(isa.gemm, one, reset=1, uop_end=1, iter_out=3, iter_in=1,
                                     src_factor_out=inp - 1, wgt_factor_out=wgt - 1), 1, None),
        "alu_imm_src": (*loop(lambda **kw: isa.alu(AluOp.ADD, use_imm=1, imm=1, **kw), one, uop_end=1, iter_out=3,
                              iter_in=1, src_factor_out=acc - 1), 1, None),
        # a reset + init GEMM's WGT index past WGT (unread) whose init row is inside ACC: on a
        # Config whose ACC is deeper than WGT (with ACC no deeper, the row is past ACC too)
        "gemm_init_reset_wgt": ([load_uops(1), isa.cfg(init_base=0),
                                 isa.gemm(init=1, reset=1, uop_end=1, iter_out=2, iter_in=1, wgt_factor_out=wgt - 1),
                                 fin()], [isa.Uop(0, 0, 1)], 2, None if acc > wgt else ErrorCode.UOP_INDEX),
        # and one inside ACC, whose src past INP is not read either
        "gemm_init_reset_inside": ([load_uops(1), isa.cfg(init_base=acc - 3),
                                    isa.gemm(init=1, reset=1, uop_end=1, iter_out=3, iter_in=1, dst_factor_out=1,
                                             wgt_factor_out=1, src_factor_out=inp - 1), fin()], one, 2, None),
    }
    return {name: BadIndex(prog(name, insns, uops), index, code) for name, (insns, uops, index, code) in table.items()}



def verdict(device: Device, program: Program, validate: bool) -> tuple[str, int | None]:
    """(error class name, instruction index) of running `program`, or ("ok", None)."""
    try:
        device.run(program, validate=validate)
    except SimulatorError as e:
        return type(e).__name__, e.index
    return "ok", None
