"""Random invalid programs: one mutation of a random valid program (`randprog`).

`invalid_program(config, seed)` builds `random_program(config, seed)` and breaks it in
one of the ways the golden simulator rejects (`MUTATIONS`): an SRAM range past a buffer,
``uop_end`` past the uop buffer, ``uop_bgn > uop_end``, a uop index past ACC/INP/WGT (a
GEMM init row past ACC among them), a
FINISH (or any instruction) popping what no one pushed, a push removed, a flag naming a
queue the module does not have, padding on a STORE or a uop load, an unknown memory type
or ALU opcode, a DRAM range past the end, a FINISH in the middle. Every field stays
inside its encoding's width, so the words are what a careless assembler could emit. A
mutation may happen to leave the program valid (a pop that a leftover push feeds): then
every device must run it and agree on the results, as for a valid program.

The campaign (`vdla.fuzz.campaign`, ``--invalid``) runs each case on fsim and on the
device under test and compares the verdict: the error class and the instruction index.
For the mutations in `RTL_CHECKED` an RTL device runs the program without `Device.run`'s
validation, so its verdict is the core's own run-time check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ..config import Config
from ..isa import AluOp, Mem, Op, Stage, buffer_depth, decode, encode, layout, stage_of
from ..simulator.check import sram_span
from .randprog import RandomCase, random_program

__all__ = ["InvalidCase", "invalid_program", "MUTATIONS", "RTL_CHECKED"]


@dataclass
class InvalidCase:
    case: RandomCase
    mutation: str  # name in MUTATIONS
    index: int  # the instruction (or, for "uop_index", the LOAD UOP) the mutation changed


def _high(config: Config, insn, name: str) -> int:
    return layout(config).of_op(insn.opcode).slot(name).high


def _pick(rng: np.random.Generator, insns: list, pred: Callable) -> int | None:
    idx = [i for i, x in enumerate(insns) if pred(x)]
    return int(idx[rng.integers(len(idx))]) if idx else None


def _is(op: Op, mem: tuple[Mem, ...] | None = None) -> Callable:
    return lambda x: x.opcode == op and x.x_size > 0 and (mem is None or x.memory_type in mem) if op in (
        Op.LOAD, Op.STORE) else x.opcode == op


def _sram_past(c, rng, insns):
    i = _pick(rng, insns, _is(Op.LOAD, (Mem.INP, Mem.WGT, Mem.ACC, Mem.ACC_8BIT)) if rng.integers(2) else
              _is(Op.STORE))
    if i is None:
        return None
    x = insns[i]
    base = buffer_depth(c, Mem(x.memory_type)) - sram_span(x) + 1 + int(rng.integers(0, 8))
    return i, x.replace(sram_base=min(base, _high(c, x, "sram_base")))


def _loop(rng, insns):
    return _pick(rng, insns, lambda x: x.opcode in (Op.GEMM, Op.ALU))


def _uop_end_past(c, rng, insns):
    i = _loop(rng, insns)
    if i is None:
        return None
    x = insns[i]
    return i, x.replace(uop_end=min(c.uop_depth + 1 + int(rng.integers(0, 4)), _high(c, x, "uop_end")))


def _uop_bgn_after_end(c, rng, insns):
    i = _loop(rng, insns)
    if i is None:
        return None
    x = insns[i]
    end = min(x.uop_end, c.uop_depth - 2)
    return i, x.replace(uop_bgn=end + 1, uop_end=end)


def _loop_past(c, rng, insns):
    """A loop factor large enough to index past ACC (or INP/WGT for a GEMM), or a GEMM made
    an init GEMM whose WGT loop takes its init row (CFG's init_base + the WGT index) past ACC."""
    i = _loop(rng, insns)
    if i is None:
        return None
    x = insns[i]
    names = ["dst_factor_out"] + (["src_factor_out", "wgt_factor_out"] if x.opcode == Op.GEMM and not x.reset else [])
    names += ["init"] if x.opcode == Op.GEMM else []
    name = names[int(rng.integers(len(names)))]
    if name == "init":  # the last outer iteration's WGT index alone reaches past ACC
        high = _high(c, x, "wgt_factor_out")
        return i, x.replace(init=1, wgt_factor_out=high, iter_out=max(x.iter_out, 2 + c.acc_depth // high))
    return i, x.replace(iter_out=max(2, x.iter_out), **{name: _high(c, x, name)})


def _extra_pop(c, rng, insns):
    """An instruction (FINISH, half the time) pops a queue: usually one no remaining push feeds."""
    def free(x):
        s = stage_of(x)
        return [f for f in ("pop_prev", "pop_next") if not getattr(x, f)
                and not (s == Stage.LOAD and f == "pop_prev") and not (s == Stage.STORE and f == "pop_next")]

    i = len(insns) - 1
    if not free(insns[i]) or rng.integers(2):
        i = _pick(rng, insns, free)
    if i is None:
        return None
    flags = free(insns[i])
    return i, insns[i].replace(**{flags[int(rng.integers(len(flags)))]: 1})


def _drop_push(c, rng, insns):
    i = _pick(rng, insns, lambda x: x.push_prev or x.push_next)
    if i is None:
        return None
    x = insns[i]
    return i, x.replace(**{"push_prev" if x.push_prev else "push_next": 0})


def _missing_queue(c, rng, insns):
    i = _pick(rng, insns, lambda x: stage_of(x) in (Stage.LOAD, Stage.STORE))
    if i is None:
        return None
    x = insns[i]
    flags = ("pop_prev", "push_prev") if stage_of(x) == Stage.LOAD else ("pop_next", "push_next")
    return i, x.replace(**{flags[int(rng.integers(2))]: 1})


def _bad_padding(c, rng, insns):
    i = _pick(rng, insns, lambda x: x.opcode == Op.STORE or (x.opcode == Op.LOAD and x.memory_type == Mem.UOP))
    if i is None:
        return None
    name = ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")[int(rng.integers(4))]
    return i, insns[i].replace(**{name: int(rng.integers(1, 4))})


def _bad_enum(c, rng, insns):
    i = _pick(rng, insns, lambda x: x.opcode in (Op.LOAD, Op.STORE, Op.ALU))
    if i is None:
        return None
    x = insns[i]
    if x.opcode == Op.ALU:
        return i, x.replace(alu_opcode=int(rng.integers(len(AluOp), _high(c, x, "alu_opcode") + 1)))
    if x.opcode == Op.STORE or rng.integers(2):  # a type that does not exist, or one the op cannot use
        return i, x.replace(memory_type=int(rng.integers(len(Mem), _high(c, x, "memory_type") + 1)))
    return i, x.replace(memory_type=int(Mem.OUT))


def _dram_past(c, rng, insns):
    i = _pick(rng, insns, lambda x: x.opcode in (Op.LOAD, Op.STORE) and x.x_size and x.memory_type != Mem.UOP)
    if i is None:
        return None
    x = insns[i]
    return i, x.replace(dram_base=_high(c, x, "dram_base") - int(rng.integers(0, 4)))


def _early_finish(c, rng, insns):
    if len(insns) < 3:
        return None
    i = _pick(rng, insns[:-1], lambda x: not (x.opcode == Op.LOAD and x.memory_type == Mem.UOP))
    if i is None:  # (a LOAD UOP's address is relocated when the program is placed: keep it)
        return None
    return i, insns[-1].replace(pop_prev=0, pop_next=0, push_prev=0, push_next=0)


#: name -> mutate(config, rng, insns) -> (index, new instruction) or None (not applicable)
MUTATIONS: dict[str, Callable] = {
    "sram_past_buffer": _sram_past,
    "uop_end_past_buffer": _uop_end_past,
    "uop_bgn_after_end": _uop_bgn_after_end,
    "uop_index_past_buffer": _loop_past,
    "pop_without_push": _extra_pop,
    "push_dropped": _drop_push,
    "queue_module_lacks": _missing_queue,
    "padding_not_allowed": _bad_padding,
    "bad_enum": _bad_enum,
    "dram_past_end": _dram_past,
    "finish_not_last": _early_finish,
}


#: Mutations the RTL finds by itself while running (`vdla.hardware.errors`): fetch rejects a bad
#: memory type or ALU opcode, the stages an SRAM row, a uop range or a uop-loop index past its
#: buffer. The campaign runs these on an RTL device unvalidated, so the verdict is the core's own.
#: The others it cannot see (a pop no one feeds deadlocks; padding, flags, FINISH placement and
#: DRAM bounds are not checked in hardware) are left to `Device.run`'s validation.
RTL_CHECKED = frozenset({"sram_past_buffer", "uop_end_past_buffer", "uop_bgn_after_end", "uop_index_past_buffer",
                         "bad_enum"})


def invalid_program(config: Config, seed: int, mutation: str | None = None) -> InvalidCase:
    """`random_program(config, seed)` with one mutation (`mutation`, or one drawn from the seed)."""
    case = random_program(config, seed)
    rng = np.random.default_rng((seed, 17))
    names = [mutation] if mutation else list(MUTATIONS)
    insns = decode(case.program.insns, config)
    for name in rng.permutation(names) if mutation is None else names:
        got = MUTATIONS[str(name)](config, rng, insns)
        if got is not None:
            i, new = got
            insns[i] = new
            prog = replace(case.program, insns=encode(insns, config), name=f"{case.program.name}-{name}")
            return InvalidCase(replace(case, program=prog), str(name), i)
    raise ValueError(f"seed {seed}: no mutation in {names} applies to this program")
