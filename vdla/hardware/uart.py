"""8N1 UART receiver and transmitter with a fixed clock divider, as `lib.stream` components.

    rx = UARTRx(divisor=UARTRx.divisor_for(clk_hz=25e6, baud=115200))   # rx.rx <- pin, rx.stream -> bytes
    tx = UARTTx(divisor=...)                                             # tx.stream <- bytes, tx.tx -> pin

``divisor`` is the number of clock cycles per bit (at least 4). The receiver synchronises
the pin with two flip-flops, samples each bit in its middle and checks the start bit at
half a bit time (a shorter low pulse is a glitch, ignored) and the stop bit (a framing
error drops the byte, pulses ``error`` and waits for the line to go high again). A byte
that completes while the previous one has not been taken is dropped and pulses
``overrun``: the stream never changes a payload under ``valid``.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["UARTRx", "UARTTx", "divisor_for"]


def divisor_for(clk_hz: float, baud: float, tolerance: float = 0.02) -> int:
    """Clock cycles per bit for `baud` at `clk_hz`; raises if the rounding error exceeds `tolerance`."""
    divisor = round(clk_hz / baud)
    if divisor < 4:
        raise ValueError(f"{clk_hz:g} Hz is too slow for {baud:g} baud (needs at least 4 clocks per bit)")
    error = abs(clk_hz / divisor - baud) / baud
    if error > tolerance:
        raise ValueError(f"{baud:g} baud from {clk_hz:g} Hz is off by {100 * error:.1f}% (limit {100 * tolerance:g}%)")
    return divisor


def _check_divisor(divisor: int) -> int:
    if not isinstance(divisor, int) or divisor < 4:
        raise ValueError(f"UART divisor must be an integer >= 4 clock cycles per bit, not {divisor!r}")
    return divisor


class UARTRx(wiring.Component):
    """8N1 receiver: ``rx`` is the (asynchronous) pin, ``stream`` the received bytes."""

    divisor_for = staticmethod(divisor_for)

    def __init__(self, divisor: int) -> None:
        self.divisor = _check_divisor(divisor)
        super().__init__({
            "rx": In(1, init=1), "stream": Out(stream.Signature(8)), "error": Out(1), "overrun": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        d = self.divisor
        pin = Signal(init=1)
        m.submodules.sync = FFSynchronizer(self.rx, pin, init=1)

        timer = Signal(range(d))
        bit = Signal(range(8))
        shreg = Signal(8)

        with m.If(self.stream.ready):
            m.d.sync += self.stream.valid.eq(0)
        m.d.sync += [self.error.eq(0), self.overrun.eq(0)]

        with m.FSM():
            with m.State("IDLE"):
                with m.If(~pin):
                    m.d.sync += timer.eq(d // 2 - 1)
                    m.next = "START"
            with m.State("START"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Elif(pin):
                    m.next = "IDLE"  # a glitch, not a start bit
                with m.Else():
                    m.d.sync += [timer.eq(d - 1), bit.eq(0)]
                    m.next = "DATA"
            with m.State("DATA"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Else():
                    m.d.sync += [timer.eq(d - 1), shreg.eq(Cat(shreg[1:], pin)), bit.eq(bit + 1)]
                    with m.If(bit == 7):
                        m.next = "STOP"
            with m.State("STOP"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Elif(pin):
                    with m.If(self.stream.valid & ~self.stream.ready):
                        m.d.sync += self.overrun.eq(1)
                    with m.Else():
                        m.d.sync += [self.stream.payload.eq(shreg), self.stream.valid.eq(1)]
                    m.next = "IDLE"
                with m.Else():
                    m.d.sync += self.error.eq(1)
                    m.next = "BREAK"
            with m.State("BREAK"):
                with m.If(pin):
                    m.next = "IDLE"
        return m


class UARTTx(wiring.Component):
    """8N1 transmitter: ``stream`` takes bytes, ``tx`` is the pin (idle high)."""

    divisor_for = staticmethod(divisor_for)

    def __init__(self, divisor: int) -> None:
        self.divisor = _check_divisor(divisor)
        super().__init__({"stream": In(stream.Signature(8)), "tx": Out(1, init=1)})

    def elaborate(self, platform) -> Module:
        m = Module()
        d = self.divisor
        timer = Signal(range(d))
        bits = Signal(range(11))  # bit periods left, including the one on the line
        shreg = Signal(9)
        busy = Signal()

        with m.If(busy):
            with m.If(timer != 0):
                m.d.sync += timer.eq(timer - 1)
            with m.Elif(bits == 1):  # the stop bit has lasted a full period
                m.d.sync += [busy.eq(0), self.tx.eq(1)]
            with m.Else():
                m.d.sync += [
                    timer.eq(d - 1), bits.eq(bits - 1), self.tx.eq(shreg[0]), shreg.eq(shreg >> 1),
                ]
        with m.Else():
            m.d.comb += self.stream.ready.eq(1)
            with m.If(self.stream.valid):
                m.d.sync += [
                    busy.eq(1), self.tx.eq(0), shreg.eq(Cat(self.stream.payload, Const(1, 1))),
                    bits.eq(10), timer.eq(d - 1),
                ]
        return m
