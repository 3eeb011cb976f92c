"""Run the core in Amaranth's simulator against a DRAM held in a numpy byte array.

`CoreSim` elaborates a `Core` once and keeps one simulation alive, so the on-chip
buffers keep their contents from one `run` to the next (like hardware, and like the
golden simulator's Machine). A single async testbench plays the host and the memory:

- control: writes the instruction address and count, pulses ``start``, waits for ``done``;
- memory: accepts every command at once; read data follows ``latency`` cycles after its
  command, one bus word per cycle per port (commands are pipelined); writes land in the
  array as their words arrive and each command is acknowledged once complete.

A watchdog stops a run that makes no progress (no memory traffic, no instruction retired,
no uop-iteration) for ``watchdog`` cycles and raises `Stuck`, naming each stage's state
and the queue levels. With ``trace=True`` a run also records, every cycle, each stage's
state and retired-instruction count (`TRACE_FIELDS`) in ``RunResult.trace``: a timeline
from which per-instruction start/end cycles follow. Nothing here knows the golden
simulator: `vdla.simulator.rtl.pysim` turns a `RunResult` into a Report.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np
from amaranth.hdl import Value
from amaranth.sim import Simulator

from ..config import Config
from .core import COUNTER_NAMES, QUEUES, STAGES, Core, ErrorCode
from .stage import State

__all__ = ["CoreSim", "RunResult", "Stuck", "MemoryFault", "TRACE_FIELDS", "instruction_timeline"]

#: One `RunResult.trace` row per cycle: the cycle, then per stage its `State` and the number of
#: instructions it has retired so far (the core's counters, so a retire shows the cycle after).
TRACE_FIELDS = ("cycle", *(f"{s}_state" for s in STAGES), *(f"{s}_insns" for s in STAGES))


def instruction_timeline(rows: list[tuple[int, ...]], stages: list[str]) -> list[tuple[int, str, int, int]]:
    """Per-instruction (index, stage, start, end) from trace `rows`, given each instruction's stage
    ("load", "compute", "store"; FINISH included), sorted by start. The k-th instruction of a
    stage is the one it holds while its retire count is k: start is its first cycle in EXEC (its
    tokens popped; an instruction that never executes, a NOP, starts when it leaves WAIT), end
    the cycle the count passes k. Instructions not retired by the end of the rows are left out."""
    order: dict[str, list[int]] = {s: [] for s in STAGES}
    for k, s in enumerate(stages):
        order[s].append(k)
    out = []
    for n, s in enumerate(STAGES):
        col_state, col_insns = 1 + n, 1 + len(STAGES) + n
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for row in rows:
            cyc, st, done = row[0], row[col_state], row[col_insns]
            if done not in start and st in (State.EXEC, State.PUSH):
                start[done] = cyc
            for j in range(len(end), done):  # retired: 0 .. done-1
                end[j] = cyc
                start.setdefault(j, cyc)
        for j, k in enumerate(order[s]):
            if j in end:
                out.append((k, s, start[j], end[j]))
    return sorted(out, key=lambda r: (r[2], r[0]))


class Stuck(RuntimeError):
    """The core stopped making progress. `state` maps each stage and queue to what it shows."""

    def __init__(self, message: str, state: dict[str, object], cycles: int) -> None:
        super().__init__(message)
        self.state, self.cycles = state, cycles


class MemoryFault(RuntimeError):
    """The core addressed memory outside the DRAM array."""


@dataclass
class RunResult:
    cycles: int
    done: bool
    error: ErrorCode
    error_index: int
    counters: dict[str, int]
    debug: dict[str, int]
    beats: dict[str, int] = field(default_factory=dict)
    trace: list[tuple[int, ...]] | None = None  # rows of TRACE_FIELDS, when tracing


@dataclass
class _ReadPort:
    name: str
    port: object
    pending: deque = field(default_factory=deque)  # [word address, beats left, ready cycle]
    driven: int | None = None  # the word offered this cycle (None: valid low)
    beats: int = 0


class CoreSim:
    """A persistent simulation of one Core for `config`."""

    def __init__(self, config: Config, *, latency: int | None = None, watchdog: int = 20000,
                 vcd: str | None = None, trace: bool = False, wgt_slices: int = 1) -> None:
        self.config = config
        self.trace = trace
        self.latency = config.timing.dram_latency if latency is None else latency
        self.watchdog = watchdog
        self.core = Core(config, wgt_slices=wgt_slices)
        self.sim = Simulator(self.core)
        self.sim.add_clock(1e-8)
        self.sim.add_testbench(self._bench, background=True)
        self._job: dict | None = None
        self._vcd = self.sim.write_vcd(vcd) if vcd else None
        if self._vcd is not None:
            self._vcd.__enter__()

    def close(self) -> None:
        if self._vcd is not None:
            self._vcd.__exit__(None, None, None)
            self._vcd = None

    def run(self, dram: np.ndarray, insn_addr: int, insn_count: int, max_cycles: int | None = None) -> RunResult:
        """Execute `insn_count` instructions at byte `insn_addr` of `dram` (modified in place)."""
        return self._do({"kind": "run", "dram": dram, "addr": insn_addr, "count": insn_count, "max": max_cycles})

    def read_buffer(self, kind: str) -> list[int]:
        """The rows of buffer `kind` ("uop", "inp", "wgt", "acc", "out") as raw integers."""
        return self._do({"kind": "peek", "buffer": kind})

    def _do(self, job: dict) -> object:
        job.update(result=None, exc=None)
        self._job = job
        while self._job["result"] is None and self._job["exc"] is None:
            self.sim.advance()
        job, self._job = self._job, None
        if job["exc"] is not None:
            raise job["exc"]
        return job["result"]

    # -- the testbench --------------------------------------------------------------------------
    async def _bench(self, ctx) -> None:
        core = self.core
        for p in ("fetch_mem", "load_mem", "compute_mem", "store_mem"):
            ctx.set(getattr(core, p).cmd.ready, 1)
        ctx.set(core.store_mem.data.ready, 1)
        while True:
            if self._job is None or self._job["result"] is not None or self._job["exc"] is not None:
                await ctx.tick()
                continue
            try:
                if self._job["kind"] == "peek":
                    mem = self.core.buffers[self._job["buffer"]]
                    slices = mem if isinstance(mem, tuple) else (mem,)  # column slices, low bits first
                    w = len(slices[0].data[0])
                    self._job["result"] = [sum(ctx.get(s.data[i]) << (k * w) for k, s in enumerate(slices))
                                           for i in range(slices[0].depth)]
                    continue
                self._job["result"] = await self._serve(ctx, self._job)
            except Exception as e:  # handed to run(), which raises it in the caller
                self._job["exc"] = e

    async def _serve(self, ctx, job: dict) -> RunResult:
        core, c = self.core, self.config
        dram: np.ndarray = job["dram"]
        size = dram.size
        B = c.bus_bytes
        mask = (1 << c.bus_width) - 1
        latency = self.latency
        reads = [_ReadPort(n, getattr(core, f"{n}_mem")) for n in ("fetch", "load", "compute")]
        wr = core.store_mem
        wcmds: deque = deque()  # [word address, beats left]
        wdata: deque = deque()  # (data, strb)
        resps = 0
        resp_driven = False
        write_beats = 0

        ctx.set(core.insn_addr, job["addr"])
        ctx.set(core.insn_count, job["count"])
        ctx.set(core.start, 1)
        await ctx.tick()
        ctx.set(core.start, 0)
        await ctx.tick()  # the core's `clear` cycle (the datapath resets): the run's cycles count from the next

        def word(addr: int, who: str) -> int:
            if addr < 0 or addr + B > size:
                raise MemoryFault(f"{who} reads [{addr:#x}, {addr + B:#x}) outside DRAM ({size:#x} bytes)")
            return int.from_bytes(dram[addr : addr + B].tobytes(), "little")

        sampled = []
        for r in reads:
            p = r.port
            sampled += [p.cmd.valid, p.cmd.payload.as_value(), p.data.ready]
        sampled += [wr.cmd.valid, wr.cmd.payload.as_value(), wr.data.valid, wr.data.payload.as_value(), wr.resp.ready,
                    core.done]
        n_base = len(sampled)
        trace: list[tuple[int, ...]] | None = None
        if self.trace:
            trace = []
            sampled += [Value.cast(getattr(core.debug, f"{s}_state")) for s in STAGES]
            sampled += [getattr(core.counters, f"{s}_insns") for s in STAGES]
        cycle = 0
        last_progress, progress_mark, stamp = 0, None, 0
        limit = job["max"]
        async for _clk, _rst, *v in ctx.tick().sample(*sampled):
            cycle += 1
            if trace is not None:
                trace.append((cycle, *v[n_base:]))
                v = v[:n_base]
            moved = False
            # transfers at this edge
            for n, r in enumerate(reads):
                cvalid, cmd, dready = v[3 * n : 3 * n + 3]
                if r.driven is not None and dready:
                    head = r.pending[0]
                    head[0] += B
                    head[1] -= 1
                    r.beats += 1
                    moved = True
                    if head[1] == 0:
                        r.pending.popleft()
                if cvalid:
                    addr, beats = cmd & 0xFFFF_FFFF, cmd >> 32
                    r.pending.append([addr, beats, cycle + latency])
                    moved = True
            wvalid, wcmd, dvalid, dpay, rready, done = v[9:]
            if wvalid:
                wcmds.append([wcmd & 0xFFFF_FFFF, wcmd >> 32])
            if dvalid:
                wdata.append((dpay & mask, dpay >> c.bus_width))
                moved = True
            if resp_driven and rready:
                resps -= 1
            while wcmds and wdata:
                addr = wcmds[0][0]
                data, strb = wdata.popleft()
                if addr < 0 or addr + B > size:
                    raise MemoryFault(f"store writes [{addr:#x}, {addr + B:#x}) outside DRAM ({size:#x} bytes)")
                raw = data.to_bytes(B, "little")
                if strb == (1 << B) - 1:
                    dram[addr : addr + B] = np.frombuffer(raw, np.uint8)
                else:
                    for k in range(B):
                        if strb >> k & 1:
                            dram[addr + k] = raw[k]
                write_beats += 1
                wcmds[0][0] += B
                wcmds[0][1] -= 1
                if wcmds[0][1] == 0:
                    wcmds.popleft()
                    resps += 1
            if done:
                break
            # drive the next cycle
            for r in reads:
                offer = None
                if r.pending and r.pending[0][2] <= cycle:
                    offer = word(r.pending[0][0], r.name)
                if offer != r.driven:
                    if offer is None:
                        ctx.set(r.port.data.valid, 0)
                    else:
                        if r.driven is None:
                            ctx.set(r.port.data.valid, 1)
                        ctx.set(r.port.data.payload, offer)
                    r.driven = offer
            if (resps > 0) != resp_driven:
                resp_driven = resps > 0
                ctx.set(wr.resp.valid, int(resp_driven))
            # watchdog
            if moved:
                last_progress = cycle
            elif cycle - stamp >= 64:
                stamp = cycle
                cnt = ctx.get(core.counters)
                mark = tuple(getattr(cnt, k) for k in COUNTER_NAMES if k.endswith(("_insns", "_iters", "_elems")))
                if mark != progress_mark:
                    progress_mark, last_progress = mark, cycle
                elif cycle - last_progress >= self.watchdog:
                    raise self._stuck(ctx, cycle)
            if limit is not None and cycle >= limit:
                raise self._stuck(ctx, cycle, f"did not finish within {limit} cycles")
        for r in reads:
            if r.driven is not None:
                ctx.set(r.port.data.valid, 0)
        ctx.set(wr.resp.valid, 0)
        cnt = ctx.get(core.counters)
        dbg = ctx.get(core.debug)
        return RunResult(
            cycles=cnt.cycles,
            done=True,
            error=ErrorCode(ctx.get(core.error_code)) if ctx.get(core.error) else ErrorCode.NONE,
            error_index=ctx.get(core.error_index),
            counters={k: getattr(cnt, k) for k in COUNTER_NAMES},
            debug=_debug_dict(dbg),
            beats={**{r.name: r.beats for r in reads}, "store": write_beats},
            trace=trace,
        )

    def _stuck(self, ctx, cycle: int, why: str | None = None) -> Stuck:
        dbg = _debug_dict(ctx.get(self.core.debug))
        parts = [f"{s}: {State(dbg[f'{s}_state']).name} (command queue {dbg[f'{s}_queue']})" for s in STAGES]
        parts.append("fetch: " + ("busy" if dbg["fetch_busy"] else "idle"))
        parts.append("tokens " + ", ".join(f"{q}={dbg[q]}" for q in QUEUES))
        head = why or f"no progress for {self.watchdog} cycles"
        if ctx.get(self.core.error):
            head += f" (error {ErrorCode(ctx.get(self.core.error_code)).name} at instruction {ctx.get(self.core.error_index)})"
        return Stuck(f"core stuck at cycle {cycle}: {head}; " + "; ".join(parts), dbg, cycle)


def _debug_dict(dbg) -> dict[str, int]:
    out = {}
    for name in ("load_state", "compute_state", "store_state"):
        out[name] = int(getattr(dbg, name))
    for name in (*QUEUES, *(f"{s}_queue" for s in STAGES), "fetch_busy"):
        out[name] = int(getattr(dbg, name))
    return out
