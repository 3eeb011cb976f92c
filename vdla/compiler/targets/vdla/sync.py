"""Dependency tokens between the load, compute and store modules (VTA's CoProcSync),
and a static check of an instruction stream's token balance.

:func:`plan_tokens` works on the task stream code generation produces (program order,
each task with the on-chip regions it reads and writes). For every task it finds the
latest task of each neighbouring module it conflicts with:

* RAW forward: compute reads INP/WGT a load wrote (load -> compute); store reads OUT a
  GEMM/ALU wrote (compute -> store);
* WAR backward: a load overwrites INP/WGT a GEMM still reads (compute -> load); a
  GEMM/ALU overwrites OUT a store still reads (store -> compute).

Conflicts across loop iterations (loop-carried) are found the same way, because the
stream is the unrolled program. Tokens are information-less FIFOs, so one pop per
(task, queue) suffices: a task pops only when it needs a later producer than the
previous pop of that queue did, and exactly that producer pushes. With per-thread
buffers (virtual threads) the conflicts of one thread's load are with its own
compute only, which is what lets the other thread's compute overlap it.

:func:`check_tokens` replays an encoded Program's flags in three in-order queues and
reports deadlocks and leftover tokens in words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....config import Config
from ....isa import Mem, Op, Stage, decode, stage_of

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE
QUEUES = {(L, C): "l2g", (C, L): "g2l", (C, S): "g2s", (S, C): "s2g"}
KIND = {(L, C): "RAW", (C, L): "WAR", (C, S): "RAW", (S, C): "WAR"}


@dataclass
class Task:
    stage: Stage
    emit: Any  # callable(CommandStream)
    reads: list[tuple[str, int, int]] = field(default_factory=list)  # (resource, lo, hi) half-open
    writes: list[tuple[str, int, int]] = field(default_factory=list)
    label: str = ""
    thread: int = 0
    vt: int | None = None  # the virtual thread whose copy this is; None: not in (or shared by) the threads
    epoch: int = 0  # the loop iteration of the host code it was emitted in (see codegen.group_threads)
    insn: Any = None  # what the instruction does, for passes that prove rewrites (fuse_tail.TaskInsn); None: unknown
    seq: int = 0
    pops: list[Stage] = field(default_factory=list)
    pushes: list[Stage] = field(default_factory=list)


@dataclass
class TokenPlan:
    counts: dict[str, int]  # queue -> tokens
    loop_carried: int = 0


def plan_tokens(tasks: list[Task], config: Config) -> TokenPlan:
    depth = {"INP": config.inp_depth, "WGT": config.wgt_depth, "OUT": config.out_depth, "ACC": config.acc_depth}
    last_w = {r: np.full(d, -1, np.int64) for r, d in depth.items()}  # seq of the last writer (other module)
    last_r = {r: np.full(d, -1, np.int64) for r, d in depth.items()}
    counters = {L: 0, C: 0, S: 0}
    popped = {k: -1 for k in QUEUES}
    pushers: dict[tuple[Stage, int], list[Stage]] = {}
    by_seq: dict[tuple[Stage, int], Task] = {}
    counts = {q: 0 for q in QUEUES.values()}
    # which module writes / reads each resource across the queue boundary
    cross_w = {"INP": L, "WGT": L, "OUT": C}
    cross_r = {"INP": C, "WGT": C, "OUT": S}
    for t in tasks:
        st = t.stage
        t.seq = counters[st]
        counters[st] += 1
        by_seq[(st, t.seq)] = t
        need: dict[Stage, int] = {}
        for r, lo, hi in t.reads:  # RAW on a resource another module writes
            if r in cross_w and cross_w[r] != st and hi > lo:
                need[cross_w[r]] = max(need.get(cross_w[r], -1), int(last_w[r][lo:hi].max()))
        for r, lo, hi in t.writes:  # WAR on a resource another module reads
            if r in cross_r and cross_r[r] != st and hi > lo:
                need[cross_r[r]] = max(need.get(cross_r[r], -1), int(last_r[r][lo:hi].max()))
        for r, lo, hi in t.reads:
            if r in cross_r and cross_r[r] == st:
                last_r[r][lo:hi] = t.seq
        for r, lo, hi in t.writes:
            if r in cross_w and cross_w[r] == st:
                last_w[r][lo:hi] = t.seq
        for a, n in need.items():
            if n < 0:
                continue
            if abs(int(a) - int(st)) != 1:  # pragma: no cover - no load<->store resources
                raise AssertionError("load and store never share a buffer")
            key = (a, st)
            if n > popped[key]:
                popped[key] = n
                t.pops.append(a)
                pushers.setdefault((a, n), []).append(st)
                counts[QUEUES[key]] += 1
    for (a, n), dsts in pushers.items():
        by_seq[(a, n)].pushes.extend(dsts)
    return TokenPlan(counts)


# ------------------------------------------------------------------------------ checking

_FLAGS = {
    # stage: {flag: queue}
    L: {"pop_next": "g2l", "push_next": "l2g", "pop_prev": None, "push_prev": None},
    C: {"pop_prev": "l2g", "pop_next": "s2g", "push_prev": "g2l", "push_next": "g2s"},
    S: {"pop_prev": "g2s", "push_prev": "s2g", "pop_next": None, "push_next": None},
}


@dataclass
class TokenReport:
    ok: bool
    pushes: dict[str, int]
    pops: dict[str, int]
    problems: list[str]

    def __str__(self) -> str:
        rows = [f"{q}: {self.pushes[q]} pushed, {self.pops[q]} popped" for q in self.pushes]
        head = "token balance OK" if self.ok else "token balance BROKEN"
        return "\n".join([head, *("  " + r for r in rows), *("  " + p for p in self.problems)])


def check_tokens(program: Any, config: Config | None = None) -> TokenReport:
    """Replay the dependency flags of ``program`` (a Program or instruction words) in order
    per module; report deadlocks (a pop no push can satisfy), flags a module cannot use,
    and tokens left over at the end."""
    config = config or program.config
    insns = decode(program.insns if hasattr(program, "insns") else program, config)
    queues: dict[Stage, list[tuple[int, Any]]] = {L: [], C: [], S: []}
    problems: list[str] = []
    pushes = {q: 0 for q in QUEUES.values()}
    pops = {q: 0 for q in QUEUES.values()}
    for i, insn in enumerate(insns):
        st = stage_of(insn)
        queues[st].append((i, insn))
        for flag, q in _FLAGS[st].items():
            if getattr(insn, flag):
                if q is None:
                    problems.append(f"insn {i} ({_name(insn)}) in the {st.name} module sets {flag}, which that module has no queue for")
                elif flag.startswith("push"):
                    pushes[q] += 1
                else:
                    pops[q] += 1
    tokens = {q: 0 for q in QUEUES.values()}
    last_push: dict[str, int] = {}
    head = {L: 0, C: 0, S: 0}
    progress = True
    while progress:
        progress = False
        for st in (L, C, S):
            while head[st] < len(queues[st]):
                i, insn = queues[st][head[st]]
                want = [q for f, q in _FLAGS[st].items() if q and f.startswith("pop") and getattr(insn, f)]
                if any(tokens[q] == 0 for q in want):
                    break
                for q in want:
                    tokens[q] -= 1
                for f, q in _FLAGS[st].items():
                    if q and f.startswith("push") and getattr(insn, f):
                        tokens[q] += 1
                        last_push[q] = i
                head[st] += 1
                progress = True
    for st in (L, C, S):
        if head[st] < len(queues[st]):
            i, insn = queues[st][head[st]]
            want = [q for f, q in _FLAGS[st].items() if q and f.startswith("pop") and getattr(insn, f) and tokens[q] == 0]
            for q in want:
                problems.append(
                    f"deadlock: insn {i} ({_name(insn)}) in the {st.name} module waits for a token on {q}, "
                    f"but every push to {q} that can still happen has been consumed ({pushes[q]} pushes, {pops[q]} pops "
                    f"in the whole stream)"
                )
    for q, n in tokens.items():
        if n and not any(p.startswith("deadlock") for p in problems):
            problems.append(f"{n} token(s) left on {q} at the end (last push by insn {last_push.get(q)}): "
                            f"{pushes[q]} pushes but only {pops[q]} pops")
    return TokenReport(not problems, pushes, pops, problems)


def _name(insn: Any) -> str:
    op = Op(insn.opcode)
    if op in (Op.LOAD,):
        return f"LOAD {Mem(insn.memory_type).name}" + (" nop" if insn.x_size == 0 else "")
    return op.name
