"""The skid buffer (`vdla.hardware.skid`) in Amaranth's simulator: every beat comes out once, in
order, under random valid/ready patterns (seed printed), one beat per cycle when nothing
stalls, and ready from a register (it does not follow the consumer's ready in the same cycle)."""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from vdla.hardware.skid import SkidBuffer


def _run(seed: int, p_valid: float, p_ready: float, n: int = 200, cycles: int = 2000):
    rng = np.random.default_rng(seed)
    dut = SkidBuffer(16)
    beats = [int(v) for v in rng.integers(0, 1 << 16, n)]
    sent, got, ready_seen = [], [], []

    async def bench(ctx):
        for _ in range(cycles):
            offer = len(sent) < n and rng.random() < p_valid
            ctx.set(dut.i.valid, offer)
            if offer:
                ctx.set(dut.i.payload, beats[len(sent)])
            ctx.set(dut.o.ready, rng.random() < p_ready)
            i_ready, o_ready = ctx.get(dut.i.ready), ctx.get(dut.o.ready)
            o_valid, o_payload = ctx.get(dut.o.valid), ctx.get(dut.o.payload)
            ready_seen.append(i_ready)
            await ctx.tick()
            if offer and i_ready:
                sent.append(beats[len(sent)])
            if o_valid and o_ready:
                got.append(o_payload)
            if len(got) == n:
                return

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return beats, sent, got, ready_seen


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("p_valid", "p_ready"), [(0.5, 0.5), (0.9, 0.3), (0.3, 0.9), (1.0, 0.5)])
def test_every_beat_once_in_order(seed, p_valid, p_ready):
    beats, sent, got, _ = _run(seed, p_valid, p_ready)
    assert got == beats, f"seed {seed}: {len(got)} of {len(beats)} beats out, first wrong at " \
        f"{next((k for k, (a, b) in enumerate(zip(got, beats)) if a != b), len(got))}"


def test_one_beat_per_cycle_without_stalls():
    beats, sent, got, ready_seen = _run(0, 1.0, 1.0, n=100, cycles=103)
    assert got == beats  # 100 beats in 100 cycles + one of latency (and the last tick)
    assert all(ready_seen)
