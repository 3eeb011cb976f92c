"""A skid buffer: a stream register slice that registers the payload, ``valid`` and ``ready``.

Put between two far-apart units, it splits a long path in both directions: the consumer
sees ``valid`` and the payload from flip-flops, and the producer sees ``ready`` from a
flip-flop, so neither side's logic reaches into the other's in one cycle. Two entries (the
output register and the skid register that catches the beat accepted while the consumer
stalls) keep one beat per cycle; a beat takes one cycle more. The board's memory arbiter
takes the core's memory commands and write data through these
(`vdla.hardware.boards.arbiter.PipelinedArbiter`).
"""

from __future__ import annotations

from amaranth import Module, Signal
from amaranth.hdl import ShapeCastable
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["SkidBuffer"]


class SkidBuffer(wiring.Component):
    """``i`` -> ``o`` for payloads of ``shape``, in order, none lost or repeated."""

    def __init__(self, shape: ShapeCastable | int) -> None:
        self.shape = shape
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})

    def elaborate(self, platform) -> Module:
        m = Module()
        skid_valid = Signal()
        skid = Signal(self.shape, name="skid", reset_less=True)
        out_payload = Signal(self.shape, name="out_payload", reset_less=True)
        out_valid = Signal()
        m.d.comb += [self.i.ready.eq(~skid_valid), self.o.valid.eq(out_valid), self.o.payload.eq(out_payload)]
        take = self.i.valid & ~skid_valid
        with m.If(~out_valid | self.o.ready):  # the output register is free this cycle
            with m.If(skid_valid):
                m.d.sync += [out_payload.eq(skid), out_valid.eq(1), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [out_payload.eq(self.i.payload), out_valid.eq(take)]
        with m.Elif(take):  # the output stalls: the beat accepted this cycle waits in the skid
            m.d.sync += [skid.eq(self.i.payload), skid_valid.eq(1)]
        return m
