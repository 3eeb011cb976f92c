"""One validation path: a program's every check, before any executor touches DRAM or SRAM.

`Validator.check(dram, insn_addr, count)` applies to the instruction stream in DRAM
what the golden simulator would find wrong with it, without executing any data:

* the static rules of `check.py` (unknown opcodes or memory types, SRAM ranges past a
  buffer, DRAM ranges past its end, padding on a STORE or a uop load, ``uop_end`` past the
  uop buffer, ``uop_bgn > uop_end``, flags naming a queue a module does not have, FINISH
  not last);
* micro-op indices past a buffer (GEMM dst past ACC, init row (CFG's init_base + wgt)
  past ACC, src past INP, wgt past WGT; ALU dst and src past ACC), computed from the uops
  the program's own LOAD UOPs bring in, on
  top of what earlier runs left in the uop buffer (the validator keeps its own copy,
  as hardware keeps its SRAM);
* token underflow (a pop no remaining instruction pushes, e.g. a FINISH popping what
  no one pushed) and deadlocks: the golden scheduler runs over the stream with a
  `_Shadow` machine that moves only uops. The modules and queues form a deterministic
  process network, so the module that blocks, and on which instruction, does not depend
  on timing: every executor would stop at the same instruction.

Errors are the golden simulator's (`ProgramError`, `ExecutionError`, `DeadlockError`,
`TokenUnderflowError`) with the same message and instruction index, so fsim, pysim,
verilator and a board give one verdict, and a rejected program runs nowhere (not even
its first instructions). `vdla.runtime.Device.run` calls it for every backend. What depends on timing or on data a program
computes is left to each executor: tokens left over and stages still busy after FINISH
(``strict``), and uops a program writes into DRAM with a STORE and then loads (the
validator reads the uop words in DRAM as they are before the run).
"""

from __future__ import annotations

import numpy as np

from ..config import Config
from ..isa import Mem, Op
from .golden import run
from .machine import Machine

__all__ = ["Validator"]


class _Shadow(Machine):
    """A Machine that keeps only the uop buffer (and CFG's init_base) and checks uop-loop indices."""

    def execute(self, insn, index: int, dram: np.ndarray) -> None:
        op, c = insn.opcode, self.config
        if op == Op.LOAD and insn.memory_type == Mem.UOP:
            self._load(insn, index, dram)
        elif op == Op.CFG:
            self.init_base = insn.init_base
        elif op == Op.FINISH:
            self.reset_cfg()
        elif op in (Op.GEMM, Op.ALU):
            if insn.uop_end <= insn.uop_bgn or insn.iter_out == 0 or insn.iter_in == 0:
                return
            gemm = op == Op.GEMM
            # (name, uop indices, outer and inner factor, offset, depth)
            checks = [("ACC (dst)", self.uop_dst, insn.dst_factor_out, insn.dst_factor_in, 0, c.acc_depth)]
            if gemm and insn.init:
                checks.append(("ACC (init: init_base + WGT index)", self.uop_wgt, insn.wgt_factor_out,
                               insn.wgt_factor_in, self.init_base, c.acc_depth))
            if gemm and not insn.reset:
                checks += [("INP (src)", self.uop_src, insn.src_factor_out, insn.src_factor_in, 0, c.inp_depth),
                           ("WGT", self.uop_wgt, insn.wgt_factor_out, insn.wgt_factor_in, 0, c.wgt_depth)]
            elif not gemm and not insn.use_imm:
                checks.append(("ACC (src)", self.uop_src, insn.src_factor_out, insn.src_factor_in, 0, c.acc_depth))
            # Factors are unsigned: the largest index is at the last iteration. Only a loop that
            # goes past a buffer is expanded (as the golden simulator does) to name the first
            # offending iteration, so a long loop costs nothing here.
            k = slice(insn.uop_bgn, insn.uop_end)
            last_i, last_j = insn.iter_out - 1, insn.iter_in - 1
            if all(off + int(base[k].max()) + last_i * fo + last_j * fi < depth for _, base, fo, fi, off, depth in checks):
                return
            dst, src, wgt = self._indices(insn, index, (insn.src_factor_out, insn.src_factor_in), wgt=gemm)
            arrays = {"ACC (dst)": dst, "INP (src)": src, "ACC (src)": src, "WGT": wgt}
            if gemm and insn.init:
                arrays["ACC (init: init_base + WGT index)"] = self.init_base + wgt
            for name, _, _, _, _, depth in checks:  # in the golden simulator's order: dst, init, src, wgt
                self._bounds(arrays[name], depth, name, insn, index)


class Validator:
    """Checks programs for one device; remembers the uop buffer across the runs it accepts."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._shadow = _Shadow(config)

    def check(self, dram: np.ndarray, insn_addr: int, count: int) -> None:
        """Raise the golden simulator's error for the first thing wrong with the program."""
        s = self._shadow
        saved = (s.uop.copy(), s.uop_dst.copy(), s.uop_src.copy(), s.uop_wgt.copy())
        try:
            run(self.config, dram, insn_addr, count, machine=s, strict=False)
        except BaseException:
            # A rejected program never reaches the device: its uop loads did not happen.
            s.uop[:], s.uop_dst[:], s.uop_src[:], s.uop_wgt[:] = saved
            raise
