"""Dependency-token queues and the pop-before / push-after protocol every stage follows.

A token carries no data, so a queue of `depth` tokens is a saturating up/down counter
(as VTA's Chisel core does with its semaphores) rather than a FIFO of empty words:
``push`` is a stream whose ready means "not full", ``pop`` a stream whose valid means
"not empty". A push and a pop in the same cycle leave the count unchanged.

`TokenPorts` is the helper each stage's FSM uses: it waits until every queue the
instruction pops from holds a token and takes them all in one cycle, and after the
instruction completes pushes to every queue its flags name, each as soon as it has room.
"""

from __future__ import annotations

from amaranth import Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .interfaces import token

__all__ = ["TokenQueue", "TokenPorts"]


class TokenQueue(wiring.Component):
    """A dependency-token queue holding up to `depth` tokens."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        super().__init__({"push": In(token()), "pop": Out(token()), "level": Out(range(depth + 1))})

    def elaborate(self, platform) -> Module:
        m = Module()
        level = self.level
        m.d.comb += [self.push.ready.eq(level != self.depth), self.pop.valid.eq(level != 0)]
        put = self.push.valid & self.push.ready
        take = self.pop.valid & self.pop.ready
        with m.If(put & ~take):
            m.d.sync += level.eq(level + 1)
        with m.Elif(take & ~put):
            m.d.sync += level.eq(level - 1)
        return m


class TokenPorts:
    """Pop/push logic of one stage. `pops`/`pushes` map a flag name ("prev"/"next") to the
    stage's token interface (a consumer for pops, a producer for pushes)."""

    def __init__(self, pops: dict[str, object], pushes: dict[str, object]) -> None:
        self.pops, self.pushes = pops, pushes
        self.pending = {k: Signal(name=f"push_{k}_pending") for k in pushes}

    def can_pop(self, flags: dict[str, Value]) -> Value:
        """All tokens the instruction asks for are available (use inside the waiting state)."""
        ok: Value = Value.cast(1)
        for k, port in self.pops.items():
            ok = ok & (~flags[k] | port.valid)
        return ok

    def pop(self, m: Module, flags: dict[str, Value]) -> None:
        """Take the tokens (comb, in the cycle `can_pop` holds and the stage moves on)."""
        for k, port in self.pops.items():
            m.d.comb += port.ready.eq(flags[k])

    def arm(self, m: Module, flags: dict[str, Value]) -> None:
        """Remember which pushes the finishing instruction owes (sync)."""
        for k in self.pushes:
            m.d.sync += self.pending[k].eq(flags[k])

    def drive(self, m: Module) -> Value:
        """Offer the owed tokens (call every cycle); returns 'all owed tokens are pushed now'."""
        done: Value = Value.cast(1)
        for k, port in self.pushes.items():
            m.d.comb += port.valid.eq(self.pending[k])
            with m.If(port.ready):
                m.d.sync += self.pending[k].eq(0)
            done = done & (~self.pending[k] | port.ready)
        return done

    def owed(self) -> Value:
        v: Value = Value.cast(0)
        for s in self.pending.values():
            v = v | s
        return v


# Formal properties (proved by `nox -s formal`, stated in vdla/hardware/formal/properties.py):
# token_queue: no overflow/underflow, level == pushes - pops, ready/valid = not full/not empty (k-induction).
# (Kept at the end of the file: the RTLIL names source lines, which the board bitstreams hash.)
