"""Static checks of a decoded program: everything that can be wrong before it runs.

Executors share these rules so a bad program fails the same way everywhere: unknown
memory or ALU types, flags a module has no queue for, padding where none is allowed,
micro-op ranges past the uop buffer, SRAM or DRAM ranges past their ends, and FINISH
anywhere but last.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..config import Config
from ..isa import AluOp, Mem, Op, Stage, buffer_depth, elem_bytes, stage_of
from .errors import ProgramError

__all__ = ["check_program", "sram_span", "dram_span"]

_LOADABLE = (Mem.UOP, Mem.WGT, Mem.INP, Mem.ACC, Mem.ACC_8BIT)
_UNUSED_FLAGS = {Stage.LOAD: ("pop_prev", "push_prev"), Stage.STORE: ("pop_next", "push_next")}


def sram_span(insn) -> int:
    """SRAM elements a LOAD writes (padding included) or a STORE reads."""
    return (insn.y_pad_0 + insn.y_size + insn.y_pad_1) * (insn.x_pad_0 + insn.x_size + insn.x_pad_1)


def dram_span(insn, elem_bytes: int) -> tuple[int, int]:
    """[first, last) byte addresses a LOAD/STORE touches in DRAM."""
    first = insn.dram_base * elem_bytes
    last = (insn.dram_base + (insn.y_size - 1) * insn.x_stride + insn.x_size) * elem_bytes
    return first, max(first, last)


def check_program(insns: Sequence, config: Config, dram_size: int) -> None:
    """Raise ProgramError naming the first bad instruction and what is wrong with it."""
    if not insns:
        raise ProgramError("empty program: it needs at least a FINISH")
    for i, insn in enumerate(insns):
        _check_one(insn, i, config, dram_size)
    last = len(insns) - 1
    if insns[last].opcode != Op.FINISH:
        raise ProgramError(
            f"instruction {last} ({Op(insns[last].opcode).name}): the program must end with FINISH", last
        )
    for i, insn in enumerate(insns[:-1]):
        if insn.opcode == Op.FINISH:
            raise ProgramError(f"instruction {i}: FINISH before the end of the program ({last + 1} instructions)", i)


def _check_one(insn, i: int, config: Config, dram_size: int) -> None:
    op = Op(insn.opcode)
    where = f"instruction {i} ({op.name})"
    stage = stage_of(insn)
    for flag in _UNUSED_FLAGS.get(stage, ()):
        if getattr(insn, flag):
            raise ProgramError(f"{where}: the {stage.name.lower()} module has no queue for {flag}", i)
    if (op == Op.CFG or (op == Op.GEMM and insn.init)) and not config.gemm_epilogue:
        what = "CFG" if op == Op.CFG else "a GEMM with init"
        raise ProgramError(f"{where}: config {config.name!r} has no GEMM epilogue (Config.gemm_epilogue is off): "
                           f"{what} is an illegal instruction there", i)
    if op == Op.CFG and (insn.window or insn.warmup) and not config.gemm_window:
        raise ProgramError(f"{where}: config {config.name!r} has no GEMM window (Config.gemm_window is off): "
                           "CFG's window and warmup must be 0 there", i)
    if op in (Op.LOAD, Op.STORE):
        _check_mem(insn, i, where, op, config, dram_size)
    elif op in (Op.GEMM, Op.ALU):
        if insn.uop_end > config.uop_depth:
            raise ProgramError(f"{where}: uop_end {insn.uop_end} is past the uop buffer (depth {config.uop_depth})", i)
        if insn.uop_bgn > insn.uop_end:
            raise ProgramError(f"{where}: uop_bgn {insn.uop_bgn} is after uop_end {insn.uop_end}", i)
        if op == Op.ALU and insn.alu_opcode not in tuple(AluOp):
            raise ProgramError(
                f"{where}: unknown alu_opcode {int(insn.alu_opcode)} (valid: {', '.join(a.name for a in AluOp)})", i
            )


def _check_mem(insn, i: int, where: str, op: Op, config: Config, dram_size: int) -> None:
    try:
        mem = Mem(insn.memory_type)
    except ValueError:
        raise ProgramError(
            f"{where}: unknown memory_type {int(insn.memory_type)} (valid: {', '.join(m.name for m in Mem)})", i
        ) from None
    pads = (insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1)
    if op == Op.LOAD and mem not in _LOADABLE:
        raise ProgramError(f"{where}: cannot LOAD into memory_type {mem.name}", i)
    if op == Op.STORE and mem != Mem.OUT:
        raise ProgramError(f"{where}: STORE reads only memory_type OUT, not {mem.name}", i)
    if (op == Op.STORE or mem == Mem.UOP) and any(pads):
        raise ProgramError(f"{where}: {mem.name} transfers take no padding (pads {pads})", i)
    if insn.x_size == 0:
        return  # a NOP moves nothing
    span = sram_span(insn)
    depth = buffer_depth(config, mem)
    if insn.sram_base + span > depth:
        raise ProgramError(
            f"{where}: {mem.name} SRAM range [{insn.sram_base}, {insn.sram_base + span}) is past the buffer (depth {depth})",
            i,
        )
    if insn.y_size:
        first, last = dram_span(insn, elem_bytes(config, mem))
        if last > dram_size:
            raise ProgramError(
                f"{where}: DRAM range [{first:#x}, {last:#x}) is outside DRAM ({dram_size:#x} bytes)", i
            )
