"""What the load, compute and store stages share: their status port and state codes.

Every stage runs the same loop: take an instruction from its command queue (IDLE),
wait for and pop the dependency tokens it asks for (WAIT), execute it (EXEC), push the
tokens it owes (PUSH). ``halt`` (an error stopped the core) keeps a stage from taking a
new instruction or starting one whose tokens it is waiting for; an instruction already
executing completes, so memory transactions always finish cleanly.
"""

from __future__ import annotations

from amaranth import unsigned
from amaranth.lib import data, enum
from amaranth.lib.wiring import In, Out

__all__ = ["State", "StageStatus", "stage_status"]


class State(enum.IntEnum, shape=2):
    IDLE = 0  # waiting for an instruction
    WAIT = 1  # holding an instruction, waiting for dependency tokens
    EXEC = 2  # executing
    PUSH = 3  # pushing dependency tokens


#: Per-cycle status a stage reports to the core's counters: its state; stall = holding an
#: instruction but waiting (tokens or queue room); retire = an instruction completed.
StageStatus = data.StructLayout({"state": State, "stall": unsigned(1), "retire": unsigned(1)})


def stage_status() -> dict[str, object]:
    """Signature members every stage has besides its data ports."""
    return {"halt": In(1), "status": Out(StageStatus)}

