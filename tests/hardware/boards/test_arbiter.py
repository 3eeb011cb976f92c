"""Both board memory arbiters against a Python model of the memory, with random back-pressure.

A random sequence of requests (reads by each of the three readers, store writes with random
byte strobes, bridge reads and byte writes, commands that wrap past the memory's end) goes to
the arbiter one at a time; the reader takes words and the store offers beats only when a
random coin says so, so the pipelined arbiter's read queue fills, drains and stalls. Every
word read must be the model's, and the RAM must end equal to it. Fetch's parking under
contention is covered by `test_soc_arbiter`, with a real core.
"""

from __future__ import annotations

import numpy as np
import pytest
from amaranth import Elaboratable, Module
from amaranth.lib.memory import Memory
from amaranth.sim import Simulator

from vdla.hardware.boards.arbiter import MemoryArbiter, PipelinedArbiter

BUS, DEPTH = 64, 64
BYTES = BUS // 8
MASK = (1 << BUS) - 1


class ArbiterOnRam(Elaboratable):
    def __init__(self, arbiter, init: list[int]) -> None:
        self.mem = Memory(shape=BUS, depth=DEPTH, init=init)
        self.arb = arbiter(BUS, DEPTH.bit_length() - 1)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.mem, m.submodules.arb = mem, arb = self.mem, self.arb
        rd, wr, ram = mem.read_port(), mem.write_port(granularity=8), arb.ram
        m.d.comb += [rd.en.eq(ram.en), rd.addr.eq(ram.addr), ram.rdata.eq(rd.data),
                     wr.addr.eq(ram.addr), wr.data.eq(ram.wdata), wr.en.eq(ram.we)]
        return m


def strobe_mask(strb: int) -> int:
    return sum(0xFF << (8 * k) for k in range(BYTES) if strb >> k & 1)


@pytest.mark.parametrize("arbiter", [MemoryArbiter, PipelinedArbiter], ids=["compact", "pipelined"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_requests_with_back_pressure_match_a_memory_model(arbiter, seed):
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    model = [int(w) for w in rng.integers(0, 1 << 63, DEPTH, dtype=np.uint64)]
    top = ArbiterOnRam(arbiter, list(model))
    arb = top.arb
    requests = []
    for _ in range(40):
        kind = rng.choice(["compute", "load", "fetch", "store", "host_read", "host_write"])
        requests.append((str(kind), int(rng.integers(0, DEPTH)), int(rng.integers(1, 12))))
    p_stall = (0.0, 0.3, 0.7)[seed % 3]  # none, some, mostly stalled

    async def handshake(ctx, port):
        """Hold ``valid`` until ``ready``: a stream handshake from the testbench's side."""
        ctx.set(port.valid, 1)
        while True:
            ready = ctx.get(port.ready)
            await ctx.tick()
            if ready:
                break
        ctx.set(port.valid, 0)

    async def bench(ctx):
        for n, (kind, word, beats) in enumerate(requests):
            where = f"request {n} ({kind} at word {word}, {beats} beats, seed {seed})"
            if kind in ("compute", "load", "fetch"):
                port = getattr(arb, kind)
                ctx.set(port.cmd.payload, {"addr": word * BYTES, "beats": beats})
                await handshake(ctx, port.cmd)
                got = []
                for _ in range(2000):
                    if len(got) == beats:
                        break
                    take = bool(rng.random() >= p_stall)
                    ctx.set(port.data.ready, take)
                    valid, value = ctx.get(port.data.valid), ctx.get(port.data.payload)
                    await ctx.tick()
                    if valid and take:
                        got.append(value)
                ctx.set(port.data.ready, 0)
                want = [model[(word + k) % DEPTH] for k in range(beats)]
                assert got == want, where
            elif kind == "store":
                ctx.set(arb.store.cmd.payload, {"addr": word * BYTES, "beats": beats})
                await handshake(ctx, arb.store.cmd)
                for k in range(beats):
                    while rng.random() < p_stall:  # the store's data is late
                        await ctx.tick()
                    value, strb = int(rng.integers(0, 1 << 63)), int(rng.integers(0, 1 << BYTES))
                    ctx.set(arb.store.data.payload, {"data": value, "strb": strb})
                    await handshake(ctx, arb.store.data)
                    at, keep = (word + k) % DEPTH, strobe_mask(strb)
                    model[at] = (model[at] & ~keep & MASK) | (value & keep)
                ctx.set(arb.store.resp.ready, 1)
                for _ in range(100):
                    valid = ctx.get(arb.store.resp.valid)
                    await ctx.tick()
                    if valid:
                        break
                else:
                    raise AssertionError(f"{where}: no store response")
                ctx.set(arb.store.resp.ready, 0)
            else:
                lane = int(rng.integers(0, BYTES))
                byte = int(rng.integers(0, 256))
                ctx.set(arb.host.addr, word)
                ctx.set(arb.host.we, kind == "host_write")
                ctx.set(arb.host.be, 1 << lane)
                ctx.set(arb.host.wdata, int.from_bytes(bytes([byte]) * BYTES, "little"))
                ctx.set(arb.host.valid, 1)
                for _ in range(100):
                    ready, rdata = ctx.get(arb.host.ready), ctx.get(arb.host.rdata)
                    await ctx.tick()
                    if ready:
                        break
                else:
                    raise AssertionError(f"{where}: the bridge's request was never served")
                ctx.set(arb.host.valid, 0)
                await ctx.tick()  # the bridge drops `valid` for a cycle between requests
                if kind == "host_write":
                    keep = 0xFF << (8 * lane)
                    model[word] = (model[word] & ~keep & MASK) | (byte << (8 * lane))
                else:
                    assert rdata == model[word], where
        for _ in range(4):
            await ctx.tick()
        ram = [ctx.get(top.mem.data[i]) for i in range(DEPTH)]
        assert ram == model, f"the memory after all requests (seed {seed})"

    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
