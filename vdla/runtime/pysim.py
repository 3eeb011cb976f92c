"""The ``pysim`` device: the Amaranth RTL of the core, run in Amaranth's simulator.

    dev = Device("pysim", config="small")      # or Device("pysim:small")
    report = dev.run(program)                  # same API and Report as Device("fsim")

The backend elaborates `vdla.hardware.Core` for the device's Config once and keeps one
simulation alive (on-chip buffers persist across runs, as on hardware and in fsim). Memory
requests are served from ``device.dram``; see `vdla.hardware.testbench` for the memory
timing. The Report carries the RTL's cycle count and counters (bytes moved and
uop-iterations under the golden simulator's names, per-module busy/stall cycles), plus
every raw RTL counter in ``report.rtl_counters``. With ``device.backend.trace = True`` the
Report's ``trace`` holds, as fsim's does, (instruction, module, start, end) per instruction
(start: first cycle executing, after its pops; end: the cycle its retire shows), derived from
the per-cycle stage states and retire counts kept in ``report.rtl_trace``
(`vdla.hardware.testbench.TRACE_FIELDS`).

Failures map onto the golden simulator's errors: an instruction the core rejects (error
bit) raises ProgramError naming it; a run that stops making progress for ``watchdog``
cycles raises DeadlockError naming each stage's state; with ``strict``, tokens left in a
queue raise TokenError and a stage still busy after FINISH raises RaceError.

Device name arguments: ``pysim:PRESET`` picks a config preset (like fsim).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import Config
from ..hardware.core import QUEUES, STAGES
from ..hardware.fetch import ErrorCode
from ..hardware.stage import State
from ..hardware.testbench import CoreSim, RunResult, Stuck, instruction_timeline
from ..isa import Stage, decode, stage_of
from ..simulator import DeadlockError, ModuleStats, ProgramError, RaceError, Report, TokenError
from .device import Device, register_backend

__all__ = ["PysimBackend", "PysimReport", "report_from_run", "deadlock_error"]

_MODULE = {Stage.LOAD: "load", Stage.COMPUTE: "compute", Stage.STORE: "store"}
_GOLDEN_COUNTERS = {  # golden counter -> (RTL element counter, element size attribute)
    "inp_load_nbytes": ("inp_elems", "inp_elem_bytes"),
    "wgt_load_nbytes": ("wgt_elems", "wgt_elem_bytes"),
    "acc_load_nbytes": ("acc_elems", "acc_elem_bytes"),
    "uop_load_nbytes": ("uop_elems", "uop_elem_bytes"),
    "out_store_nbytes": ("out_elems", "out_elem_bytes"),
}


@dataclass
class PysimReport(Report):
    #: Every counter of the core (`vdla.hardware.core.COUNTER_NAMES`) and memory beats per port.
    rtl_counters: dict[str, int] = field(default_factory=dict)
    #: Per-cycle rows of `vdla.hardware.testbench.TRACE_FIELDS` when the backend traces, else None.
    rtl_trace: list[tuple[int, ...]] | None = None


class PysimBackend:
    """Runs programs on the core's RTL in Amaranth's simulator."""

    name = "pysim"

    def __init__(self, device: Device, arg: str = "", *, watchdog: int = 20000, latency: int | None = None) -> None:
        self.config = device.config
        self.watchdog, self.latency = watchdog, latency
        self.trace = False  # record a per-cycle timeline in the next runs' reports
        self._sim: CoreSim | None = None

    @property
    def sim(self) -> CoreSim:
        if self._sim is None:
            self._sim = CoreSim(self.config, latency=self.latency, watchdog=self.watchdog)
        return self._sim

    def execute(self, device: Device, insn_addr: int, count: int, strict: bool = True) -> Report:
        c = self.config
        try:
            self.sim.trace = self.trace
            res = self.sim.run(device.dram, insn_addr, count)
        except Stuck as e:
            self._sim = None  # the simulation is mid-instruction: start afresh next time
            raise deadlock_error(e, "pysim") from None
        rep = report_from_run(c, res, count, strict, "pysim")
        if res.trace is not None:
            words = device.dram[insn_addr : insn_addr + 16 * count]
            stages = [_MODULE[stage_of(x)] for x in decode(words.tobytes(), c)]
            rep.rtl_trace = res.trace
            rep.trace = instruction_timeline(res.trace, stages)
        return rep


def deadlock_error(e: Stuck, who: str) -> DeadlockError:
    """The golden simulator's DeadlockError for an RTL run its watchdog stopped (naming each stage's state)."""
    waits = [{"module": s, "index": None, "state": State(e.state[f"{s}_state"]).name,
              "reason": State(e.state[f"{s}_state"]).name} for s in STAGES]
    return DeadlockError(f"{who}: {e}", waits)


def report_from_run(c: Config, res: RunResult, count: int, strict: bool, who: str) -> PysimReport:
    """The Report of an RTL run (shared with the verilator backend).

    ProgramError if the core stopped with an error (naming the instruction); else golden
    counters from the RTL's element counters, per-module stats, and with ``strict``
    TokenError for tokens left in a queue, RaceError for a stage still busy after FINISH.
    """
    if res.error != ErrorCode.NONE:
        raise ProgramError(
            f"{who}: the core stopped with error {res.error.name} at instruction {res.error_index}", res.error_index)
    cnt = res.counters
    counters = {name: cnt[src] * getattr(c, size) for name, (src, size) in _GOLDEN_COUNTERS.items()}
    counters["gemm_counter"] = cnt["gemm_iters"]
    counters["alu_counter"] = cnt["alu_iters"]
    modules = {
        s: ModuleStats(s, cnt[f"{s}_insns"], cnt[f"{s}_busy"], cnt[f"{s}_stall"], res.cycles) for s in STAGES
    }
    warnings = []
    left = {q: res.debug[q] for q in QUEUES if res.debug[q]}
    if left:
        msg = "tokens left in dependency queues at the end of the program: " + ", ".join(
            f"{q}: {n}" for q, n in left.items())
        if strict:
            raise TokenError(f"{who}: {msg}", {q: [] for q in left})
        warnings.append(msg)
    busy = [s for s in STAGES if s != "compute" and (res.debug[f"{s}_state"] != State.IDLE or res.debug[f"{s}_queue"])]
    if busy:
        msg = f"{', '.join(busy)} still had work when FINISH completed: FINISH needs a dependency on it"
        if strict:
            raise RaceError(f"{who}: {msg}")
        warnings.append(msg)
    rtl = dict(cnt)
    rtl.update({f"{k}_beats": v for k, v in res.beats.items()})
    return PysimReport(c, res.cycles, modules, counters, count, [], warnings, rtl)


register_backend("pysim", PysimBackend)
