"""Errors the golden simulator reports. Each names the instruction index and the module."""

from __future__ import annotations

__all__ = ["SimulatorError", "ProgramError", "ExecutionError", "DeadlockError", "TokenError", "RaceError",
           "LimitError"]


class SimulatorError(RuntimeError):
    """Base class: the program cannot be executed as written.

    `index` is the offending instruction's position in the stream (None when the
    error concerns the whole program)."""

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


class ProgramError(SimulatorError):
    """A statically invalid instruction: unknown opcode or memory type, flags a module
    cannot use, padding on a STORE, a uop range past the uop buffer, DMA outside DRAM."""


class ExecutionError(SimulatorError):
    """An instruction went wrong while running, e.g. a micro-op indexed past a buffer."""


class DeadlockError(SimulatorError):
    """No module can make progress and the program has not finished.

    `waits` lists, per blocked module, what its head instruction waits for."""

    def __init__(self, message: str, waits: list[dict]) -> None:
        super().__init__(message, waits[0]["index"] if waits else None)
        self.waits = waits


class TokenError(SimulatorError):
    """Tokens are left in a dependency queue when the program ends."""

    def __init__(self, message: str, leftover: dict[str, list[int]]) -> None:
        super().__init__(message)
        self.leftover = leftover


class RaceError(SimulatorError):
    """An instruction was still running when FINISH completed: the host could read
    memory before the accelerator wrote it."""


class LimitError(SimulatorError):
    """A run stopped at its cycle limit (``max_cycles``) or wall-clock limit (``timeout``)
    before the program finished; the device was reset and stays usable."""
