"""The golden simulator: fetch, load, compute and store running concurrently.

Fetch reads the instruction stream from DRAM and routes each instruction, in order,
into the load, compute or store command queue (stalling when one is full). Each
module executes its queue in order; an instruction first pops the dependency tokens
its flags ask for (waiting until they exist), executes (`machine.Machine`), and pushes
its tokens when it completes. The four token queues are l2g, g2l, g2s and s2g.

Time comes from `timing.py`. Because every token queue has one producer and one
consumer, the modules form a deterministic process network: the cycle counts and the
results do not depend on the order in which this scheduler advances the modules. It
always advances the module that can start earliest.

A program that can no longer progress is reported, never run forever: a module waiting
on a queue no remaining instruction pushes to is a token underflow; anything else is a
deadlock, described module by module. Tokens left over at the end and instructions
still running when FINISH completes are reported too.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..config import Config
from ..isa import INSN_BYTES, ISAError, Op, Stage, as_words, decode, format_insn, stage_of
from . import timing
from .check import check_program, sram_span
from .errors import DeadlockError, ProgramError, RaceError, TokenError
from .machine import Counters, Machine
from .report import ModuleStats, Report

__all__ = ["run", "simulate", "QUEUE_NAMES", "TokenUnderflowError"]

#: (producer stage, consumer stage) -> queue name
QUEUE_NAMES = {
    (Stage.LOAD, Stage.COMPUTE): "l2g",
    (Stage.COMPUTE, Stage.LOAD): "g2l",
    (Stage.COMPUTE, Stage.STORE): "g2s",
    (Stage.STORE, Stage.COMPUTE): "s2g",
}
_MODULE = {Stage.LOAD: "load", Stage.COMPUTE: "compute", Stage.STORE: "store"}


class TokenUnderflowError(DeadlockError):
    """An instruction pops a queue that no remaining instruction will ever push to."""


@dataclass
class _Queue:
    name: str
    producer: Stage
    depth: int
    tokens: deque = field(default_factory=deque)  # (ready cycle, pushing instruction)
    pushes: int = 0
    pop_times: list[int] = field(default_factory=list)


def _neighbour(stage: Stage, flag: str) -> Stage | None:
    s = stage + (-1 if flag.endswith("prev") else 1)
    return Stage(s) if s in (1, 2, 3) else None


def _flags(insn, stage: Stage) -> tuple[list[str], list[str]]:
    """Names of the queues an instruction pops from and pushes to."""
    pops, pushes = [], []
    for flag in ("pop_prev", "pop_next"):
        if getattr(insn, flag):
            pops.append(QUEUE_NAMES[(_neighbour(stage, flag), stage)])
    for flag in ("push_prev", "push_next"):
        if getattr(insn, flag):
            pushes.append(QUEUE_NAMES[(stage, _neighbour(stage, flag))])
    return pops, pushes


def _duration(insn, config: Config, machine: Machine) -> int:
    op = insn.opcode
    if op in (Op.LOAD, Op.STORE):
        if insn.x_size == 0:
            return config.timing.insn_overhead
        eb = machine.buffer(insn.memory_type).elem_bytes
        pad = sram_span(insn) - insn.x_size * insn.y_size
        return timing.dma_cycles(config, insn.y_size, insn.x_size * eb, pad, write=op == Op.STORE)
    if op in (Op.GEMM, Op.ALU):
        iters = max(0, insn.uop_end - insn.uop_bgn) * insn.iter_out * insn.iter_in
        if op == Op.GEMM:
            return timing.gemm_cycles(config, iters)
        imm = bool(insn.use_imm)
        hits = machine.alu_raw_hits(insn, timing.alu_window(config, imm))
        return timing.alu_cycles(config, iters, imm, timing.alu_stall_cycles(config, imm, hits))
    return config.timing.insn_overhead


def run(
    config: Config,
    dram: np.ndarray,
    insn_addr: int,
    insn_count: int,
    *,
    machine: Machine | None = None,
    strict: bool = True,
) -> Report:
    """Execute `insn_count` instructions stored at byte `insn_addr` of `dram` (uint8, modified
    in place). `machine` carries on-chip state across runs, as hardware SRAMs do."""
    if insn_count <= 0:
        raise ProgramError("empty program: it needs at least a FINISH")
    end = insn_addr + insn_count * INSN_BYTES
    if insn_addr < 0 or end > dram.size or insn_addr % INSN_BYTES:
        raise ProgramError(
            f"instruction stream [{insn_addr:#x}, {end:#x}) must be 16-byte aligned and inside DRAM ({dram.size:#x} bytes)"
        )
    words = dram[insn_addr:end].view("<u8").reshape(-1, 2)
    try:
        insns = decode(words, config)
    except ISAError as e:
        raise ProgramError(str(e), getattr(e, "index", None)) from None
    return execute(config, insns, dram, machine=machine, strict=strict)


def simulate(
    config: Config, words: np.ndarray | bytes, dram: np.ndarray | None = None, *, strict: bool = True, **kw
) -> Report:
    """Convenience: run instruction words (not placed in DRAM) against `dram`."""
    dram = np.zeros(1 << 20, dtype=np.uint8) if dram is None else dram
    try:
        insns = decode(as_words(words), config)
    except ISAError as e:
        raise ProgramError(str(e), getattr(e, "index", None)) from None
    return execute(config, insns, dram, strict=strict, **kw)


def execute(config: Config, insns: list, dram: np.ndarray, *, machine: Machine | None = None, strict: bool = True) -> Report:
    check_program(insns, config, dram.size)
    machine = machine or Machine(config)
    machine.counters = Counters()  # counters are per run; SRAM contents persist
    machine.reset_cfg()  # so does nothing of CFG's: every run starts from its defaults
    return _Scheduler(config, insns, dram, machine).run(strict)


class _Scheduler:
    def __init__(self, config: Config, insns: list, dram: np.ndarray, machine: Machine) -> None:
        self.config, self.insns, self.dram, self.machine = config, insns, dram, machine
        self.stages = [stage_of(i) for i in insns]
        self.flags = [_flags(i, s) for i, s in zip(insns, self.stages)]
        self.lists: dict[Stage, list[int]] = {s: [] for s in Stage}
        self.pos = []
        for k, s in enumerate(self.stages):
            self.pos.append(len(self.lists[s]))
            self.lists[s].append(k)
        self.queues = {
            name: _Queue(name, prod, config.dep_queue_depth) for (prod, _), name in QUEUE_NAMES.items()
        }
        self.ptr = {s: 0 for s in Stage}
        self.free = {s: 0 for s in Stage}
        self.stats = {s: ModuleStats(_MODULE[s]) for s in Stage}
        self.start = [0] * len(insns)
        self.end = [0] * len(insns)
        self.dispatch = [0] * len(insns)
        self.fetched = 0
        self.fetch_time = 0
        self.trace: list[tuple[int, str, int, int]] = []

    # -- fetch -----------------------------------------------------------------------
    def _fetch(self) -> None:
        depth = self.config.cmd_queue_depth
        while self.fetched < len(self.insns):
            k = self.fetched
            s, p = self.stages[k], self.pos[k]
            slot = 0
            if p >= depth:  # the queue has room once the instruction `depth` places ahead has left it
                if self.ptr[s] <= p - depth:
                    return
                slot = self.start[self.lists[s][p - depth]]
            d = max(self.fetch_time, timing.fetch_ready(self.config, k), slot)
            self.dispatch[k] = d
            self.fetch_time = d + 1
            self.fetched += 1

    # -- one step ------------------------------------------------------------------------
    def _candidate(self, s: Stage) -> tuple[int, int] | None:
        """(start cycle, instruction) if module `s` can start its head instruction now."""
        if self.ptr[s] >= len(self.lists[s]):
            return None
        k = self.lists[s][self.ptr[s]]
        if k >= self.fetched:
            return None
        t = max(self.free[s], self.dispatch[k])
        pops, pushes = self.flags[k]
        for q in pops:
            tokens = self.queues[q].tokens
            if not tokens:
                return None
            t = max(t, tokens[0][0])
        for q in pushes:
            queue = self.queues[q]
            if queue.pushes - len(queue.pop_times) >= queue.depth:
                return None
        return t, k

    def _step(self, s: Stage, t: int, k: int) -> None:
        insn = self.insns[k]
        pops, pushes = self.flags[k]
        for q in pops:
            queue = self.queues[q]
            queue.tokens.popleft()
            queue.pop_times.append(t)
        ready = max(self.free[s], self.dispatch[k])
        self.machine.execute(insn, k, self.dram)
        end = t + _duration(insn, self.config, self.machine)
        done = end
        for q in pushes:
            queue = self.queues[q]
            if queue.pushes >= queue.depth:  # full: wait for the pop that makes room
                done = max(done, queue.pop_times[queue.pushes - queue.depth])
            queue.tokens.append((done, k))
            queue.pushes += 1
        st = self.stats[s]
        st.insns += 1
        st.busy += end - t
        st.stall += (t - ready) + (done - end)
        st.end = done
        self.start[k], self.end[k] = t, done
        self.free[s] = done
        self.ptr[s] += 1
        self.trace.append((k, _MODULE[s], t, done))

    def run(self, strict: bool) -> Report:
        remaining = len(self.insns)
        while remaining:
            self._fetch()
            best = None
            for s in Stage:
                c = self._candidate(s)
                if c is not None and (best is None or c[0] < best[0]):
                    best = (c[0], c[1], s)
            if best is None:
                self._deadlock()
            t, k, s = best
            self._step(s, t, k)
            remaining -= 1
        return self._report(strict)

    # -- reporting -------------------------------------------------------------------
    def _describe(self, k: int) -> str:
        return f"instruction {k} ({format_insn(self.insns[k])})"

    def _remaining_pushes(self, queue: _Queue) -> int:
        s = queue.producer
        return sum(1 for k in self.lists[s][self.ptr[s] :] if queue.name in self.flags[k][1])

    def _deadlock(self) -> None:
        waits, underflow = [], None
        for s in Stage:
            if self.ptr[s] >= len(self.lists[s]):
                continue
            k = self.lists[s][self.ptr[s]]
            name = _MODULE[s]
            if k >= self.fetched:
                waits.append({"module": name, "index": k, "waits_for": "fetch", "reason": "not yet fetched"})
                continue
            pops, pushes = self.flags[k]
            for q in pops:
                queue = self.queues[q]
                if not queue.tokens:
                    left = self._remaining_pushes(queue)
                    reason = (
                        f"pops {q} ({_MODULE[queue.producer]}->{name}) but it is empty and no remaining "
                        f"{_MODULE[queue.producer]} instruction pushes to it (token underflow)"
                        if left == 0
                        else f"pops {q} ({_MODULE[queue.producer]}->{name}), empty; {left} push(es) to it are "
                        f"still queued behind blocked instructions"
                    )
                    waits.append({"module": name, "index": k, "queue": q, "underflow": left == 0, "reason": reason})
                    if left == 0 and underflow is None:
                        underflow = waits[-1]
                    break
            else:
                for q in pushes:
                    waits.append(
                        {"module": name, "index": k, "queue": q, "underflow": False,
                         "reason": f"pushes {q} but it is full ({self.queues[q].depth} tokens)"}
                    )
                    break
        if self.fetched < len(self.insns):
            k = self.fetched
            waits.append({
                "module": "fetch", "index": k, "queue": f"{_MODULE[self.stages[k]]} command queue",
                "reason": f"cannot dispatch: the {_MODULE[self.stages[k]]} command queue is full "
                          f"({self.config.cmd_queue_depth} instructions)",
            })
        t = max(self.free.values())
        lines = [f"  {w['module']}: {self._describe(w['index'])} {w['reason']}" for w in waits]
        if underflow is not None:
            raise TokenUnderflowError(
                f"token underflow at cycle {t}: {underflow['module']} {self._describe(underflow['index'])} "
                f"waits on queue {underflow['queue']} forever\n" + "\n".join(lines),
                [underflow] + [w for w in waits if w is not underflow],
            )
        raise DeadlockError(f"deadlock at cycle {t}: no module can proceed\n" + "\n".join(lines), waits)

    def _report(self, strict: bool) -> Report:
        finish = len(self.insns) - 1
        cycles = self.end[finish]
        warnings = []
        leftover = {q.name: [k for _, k in q.tokens] for q in self.queues.values() if q.tokens}
        if leftover:
            desc = "; ".join(
                f"{name}: {len(ks)} token(s) pushed by instruction(s) {', '.join(map(str, ks[:8]))}"
                + (" ..." if len(ks) > 8 else "")
                for name, ks in leftover.items()
            )
            msg = f"tokens left in dependency queues at the end of the program: {desc}"
            if strict:
                raise TokenError(msg, leftover)
            warnings.append(msg)
        late = [k for k in range(finish) if self.end[k] > cycles]
        if late:
            k = late[0]
            msg = (
                f"{self._describe(k)} on {_MODULE[self.stages[k]]} completes at cycle {self.end[k]}, after FINISH "
                f"(cycle {cycles}): FINISH needs a dependency on it"
            )
            if strict:
                raise RaceError(msg, k)
            warnings.append(msg)
        counters = self.machine.counters.as_dict()
        return Report(
            self.config,
            cycles,
            {m.name: m for m in self.stats.values()},
            counters,
            len(self.insns),
            self.trace,
            warnings,
        )

