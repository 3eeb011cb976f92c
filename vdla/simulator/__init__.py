"""Simulators of the VDLA accelerator.

`golden` is the functional simulator with a cycle model: the reference every other
executor (the Amaranth simulation, Verilator, a board, the compiler) is checked against
bit-exactly. `machine` holds the on-chip state and instruction semantics, `alu` the
tensor-ALU operations, `timing` the cycle model, `check` the static program rules.
`rtl` holds the runners of the Amaranth RTL (Amaranth's simulator, Verilator) whose runs
map onto the same Report and errors.
"""

from .errors import DeadlockError, ExecutionError, LimitError, ProgramError, RaceError, SimulatorError, TokenError
from .golden import QUEUE_NAMES, TokenUnderflowError, execute, run, simulate
from .machine import Counters, Machine
from .report import ModuleStats, Report

__all__ = [
    "run", "simulate", "execute", "Machine", "Counters", "Report", "ModuleStats", "QUEUE_NAMES",
    "SimulatorError", "ProgramError", "ExecutionError", "DeadlockError", "TokenUnderflowError",
    "TokenError", "RaceError", "LimitError",
]
