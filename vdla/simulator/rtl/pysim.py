"""The Amaranth RTL of the core run in Amaranth's simulator: the runner behind ``Device("pysim")``.

`vdla.hardware.testbench.CoreSim` runs the core against a numpy DRAM; this module turns
what a run returns into the golden simulator's Report and errors (shared with the
Verilator runner): an instruction the core rejects (error bit) raises the golden simulator's
error for it (`error_class`: ProgramError, or ExecutionError for a uop index past a buffer)
naming it; a run that stops making progress raises DeadlockError naming each stage's state; with
``strict``, tokens left in a queue raise TokenError and a stage still busy after FINISH
raises RaceError. The Report carries the RTL's cycle count and counters (bytes moved and
uop-iterations under the golden simulator's names, per-module busy/stall cycles), plus
every raw RTL counter in ``report.rtl_counters``. The Device backend is
`vdla.runtime.backends.pysim`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...config import Config
from ...hardware.core import QUEUES, STAGES
from ...hardware.errors import ErrorCode
from ...hardware.stage import State
from ...hardware.testbench import RunResult, Stuck
from ...isa import Stage
from ..errors import DeadlockError, ExecutionError, ProgramError, RaceError, SimulatorError, TokenError
from ..report import ModuleStats, Report

__all__ = ["PysimReport", "report_from_run", "deadlock_error", "error_class", "MODULE_OF_STAGE"]

MODULE_OF_STAGE = {Stage.LOAD: "load", Stage.COMPUTE: "compute", Stage.STORE: "store"}
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


def error_class(code: ErrorCode) -> type[SimulatorError]:
    """The golden simulator's error class for what the core's `code` reports: an index past a
    buffer found in a uop loop is an ExecutionError (the golden simulator finds it running the
    loop), everything else the golden simulator rejects before running (ProgramError)."""
    return ExecutionError if code == ErrorCode.UOP_INDEX else ProgramError


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
        raise error_class(res.error)(
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

