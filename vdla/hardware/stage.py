"""What the load, compute and store stages share: their status port and state codes.

Every stage runs the same loop: take an instruction from its command queue (IDLE),
wait for and pop the dependency tokens it asks for (WAIT), execute it (EXEC), push the
tokens it owes (PUSH). ``halt`` (an error stopped the core) keeps a stage from taking a
new instruction or starting one whose tokens it is waiting for; an instruction already
executing completes, so memory transactions always finish cleanly. A stage that finds an
index past a buffer while executing reports it on ``error`` (`vdla.hardware.errors`).
"""

from __future__ import annotations

from amaranth import Module, Signal, Value, unsigned
from amaranth.lib import data, enum
from amaranth.lib.wiring import In, Out

from .errors import ERROR_BITS
from .tokens import TokenPorts

__all__ = ["State", "StageStatus", "stage_status", "run_stage"]


class State(enum.IntEnum, shape=2):
    IDLE = 0  # waiting for an instruction
    WAIT = 1  # holding an instruction, waiting for dependency tokens
    EXEC = 2  # executing
    PUSH = 3  # pushing dependency tokens


#: Per-cycle status a stage reports to the core's counters: its state; stall = holding an
#: instruction but waiting (tokens or queue room); retire = an instruction completed.
StageStatus = data.StructLayout({"state": State, "stall": unsigned(1), "retire": unsigned(1)})


def stage_status() -> dict[str, object]:
    """Signature members every stage has besides its data ports. ``error``: the `ErrorCode` of
    an index past a buffer found while executing (0: none; the core latches the first)."""
    return {"halt": In(1), "status": Out(StageStatus), "error": Out(ERROR_BITS)}



def run_stage(m: Module, stage, *, raw: Signal, tokens: TokenPorts, pops: dict[str, Value],
              pushes: dict[str, Value], nop: Value, start: Signal, done: Value) -> Signal:
    """Build the IDLE -> WAIT -> EXEC -> PUSH loop of `stage` (its ``cmd``, ``halt``, ``status``).

    The instruction taken from ``cmd`` goes into `raw` (the fields the caller decodes from
    it, `pops`/`pushes` flags and `nop` included, stay valid until the next one). Once its
    pops are available they are taken together with arming its pushes; then `start` pulses
    and the stage waits for `done`, unless `nop` (nothing to execute: straight to PUSH).
    Returns the retire pulse (the cycle the last owed token is pushed).
    """
    status, retire = stage.status, Signal()
    with m.FSM():
        with m.State("IDLE"):
            m.d.comb += [status.state.eq(State.IDLE), stage.cmd.ready.eq(~stage.halt)]
            with m.If(stage.cmd.valid & stage.cmd.ready):
                m.d.sync += raw.eq(stage.cmd.payload)
                m.next = "WAIT"
        with m.State("WAIT"):
            m.d.comb += status.state.eq(State.WAIT)
            go = tokens.can_pop(pops) & ~stage.halt
            m.d.comb += status.stall.eq(~go)
            with m.If(go):
                tokens.pop(m, pops)
                tokens.arm(m, pushes)
                with m.If(nop):
                    m.next = "PUSH"
                with m.Else():
                    m.d.comb += start.eq(1)
                    m.next = "EXEC"
        with m.State("EXEC"):
            m.d.comb += status.state.eq(State.EXEC)
            with m.If(done):
                m.next = "PUSH"
        with m.State("PUSH"):
            m.d.comb += status.state.eq(State.PUSH)
            pushed = tokens.drive(m)
            m.d.comb += status.stall.eq(~pushed)
            with m.If(pushed):
                m.d.comb += [status.retire.eq(1), retire.eq(1)]
                m.next = "IDLE"
    return retire


# Formal properties (proved by `nox -s formal`, stated in vdla/hardware/formal/properties.py):
# stage_sequencer: no instruction starts before the tokens it names are popped that cycle; pops only then; pushes only in PUSH; one retire per instruction, one push per flag (k-induction).
# (Kept at the end of the file: the RTLIL names source lines, which the board bitstreams hash.)
