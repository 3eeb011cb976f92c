"""A byte stream for `vdla.runtime.backends.serial.SerialLink` whose far end is a simulated UART pin pair.

Shared by the bridge tests (the bridge alone) and the board tests (a whole `BoardTop`):
``write`` queues bytes for the rx pin (8N1, ``div`` clock cycles per bit); each ``read``
advances Amaranth's simulator by ``chunk`` cycles when nothing has arrived yet and returns
what came out of the tx pin. ``flip`` lists, per write, the index of a byte to damage
(XOR ``flip_mask``; -1: none), for the NAK tests.
"""

from __future__ import annotations

from amaranth.sim import Simulator


class UartPort:
    def __init__(self, top, rx, tx, *, div: int, chunk: int, flip_mask: int) -> None:
        self.top, self.rx, self.tx = top, rx, tx
        self.div, self.chunk, self.flip_mask = div, chunk, flip_mask
        self.queue: list[int] = []
        self.received = bytearray()
        self.flip: list[int] = []
        self.cycles = 0
        self.stopped = False
        self.sim = Simulator(top)
        self.sim.add_clock(1e-6)
        self.sim.add_testbench(self._drive, background=True)
        self.sim.add_testbench(self._listen, background=True)

    def write(self, data: bytes) -> int:
        frame = bytearray(data)
        if self.flip and (i := self.flip.pop(0)) >= 0:
            frame[i] ^= self.flip_mask
        self.queue += frame
        return len(data)

    def read(self, size: int) -> bytes:
        if not self.received:
            self.cycles += self.chunk
            self.sim.run_until(self.cycles * 1e-6)
        data = bytes(self.received[:size])
        del self.received[:size]
        return data

    def close(self) -> None:
        """Stop driving and listening, after two byte times for what is still on the line."""
        self.stopped = True
        self.cycles += 2 * 10 * self.div
        self.sim.run_until(self.cycles * 1e-6)

    async def _drive(self, ctx) -> None:
        while not self.stopped:
            if not self.queue:
                await ctx.tick()
                continue
            b = self.queue.pop(0)
            for bit in [0, *((b >> i) & 1 for i in range(8)), 1]:
                ctx.set(self.rx, bit)
                await ctx.tick().repeat(self.div)

    async def _listen(self, ctx) -> None:
        while not self.stopped:
            await ctx.tick()
            if ctx.get(self.tx):
                continue
            await ctx.tick().repeat(self.div // 2)
            b = 0
            for i in range(8):
                await ctx.tick().repeat(self.div)
                b |= ctx.get(self.tx) << i
            await ctx.tick().repeat(self.div)
            self.received.append(b)
