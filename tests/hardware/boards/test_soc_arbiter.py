"""The board memory arbiter under a real core: long programs with one-deep command queues.

The board's arbiters (`MemoryArbiter`, `PipelinedArbiter`) serve the core's four memory ports from one RAM. Fetch reads
the whole instruction stream with one command and stalls whenever a command queue is full;
the arbiter must set that read aside so the stages can reach memory, or the core deadlocks
(the AXI top avoids it with per-port read FIFOs). These programs have far more instructions
than the iCEBreaker's one-deep queues hold; the outputs must be the golden simulator's.
The core and arbiter run in Amaranth's simulator behind a test-only Device backend.
"""

from __future__ import annotations

import numpy as np
import pytest
from amaranth import Elaboratable, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.sim import Simulator
from amaranth.utils import ceil_log2

from vdla.fuzz.randprog import random_program
from vdla.hardware import Core
from vdla.hardware.boards import board_config
from vdla.hardware.boards.arbiter import MemoryArbiter, PipelinedArbiter
from vdla.runtime import Device
from vdla.runtime.device import register_backend
from vdla.simulator import Report

DRAM = 64 << 10
CYCLES = 50_000


class CoreOnRam(Elaboratable):
    """Core + the board's arbiter + a RAM initialised with `image`; pulse ``start``."""

    def __init__(self, config, image: np.ndarray, insn_addr: int, insn_count: int, arbiter) -> None:
        self.config, self.arbiter = config, arbiter
        words = image.view(f"<u{config.bus_width // 8}")
        self.mem = Memory(shape=config.bus_width, depth=len(words), init=[int(w) for w in words])
        self.core = Core(config)
        self.start = Signal()
        self.insn_addr, self.insn_count = insn_addr, insn_count

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.core = core = self.core
        m.submodules.mem = mem = self.mem
        m.submodules.arb = arb = self.arbiter(self.config.bus_width, ceil_log2(mem.depth))
        for port in ("fetch", "load", "compute", "store"):
            wiring.connect(m, getattr(core, f"{port}_mem"), getattr(arb, port))
        rd, wr, ram = mem.read_port(), mem.write_port(granularity=8), arb.ram
        m.d.comb += [rd.en.eq(ram.en), rd.addr.eq(ram.addr), ram.rdata.eq(rd.data),
                     wr.addr.eq(ram.addr), wr.data.eq(ram.wdata), wr.en.eq(ram.we),
                     core.start.eq(self.start), core.insn_addr.eq(self.insn_addr),
                     core.insn_count.eq(self.insn_count)]
        return m


class ArbiterBackend:
    """Runs a program on `CoreOnRam` holding the device's DRAM; copies the RAM back."""

    name = "board-arbiter"
    ARBITERS = {"compact": MemoryArbiter, "pipelined": PipelinedArbiter}

    def __init__(self, device: Device, arg: str = "") -> None:
        self.config = device.config
        self.arbiter = self.ARBITERS[arg or "compact"]

    def execute(self, device: Device, insn_addr: int, count: int, strict: bool = True) -> Report:
        top = CoreOnRam(self.config, device.dram, insn_addr, count, self.arbiter)
        out: dict = {}

        async def bench(ctx):
            ctx.set(top.start, 1)
            await ctx.tick()
            ctx.set(top.start, 0)
            for n in range(CYCLES):
                await ctx.tick()
                if ctx.get(top.core.done):
                    out["cycles"] = n
                    break
            out["error"] = ctx.get(top.core.error)
            out["words"] = [ctx.get(top.mem.data[i]) for i in range(top.mem.depth)]

        sim = Simulator(top)
        sim.add_clock(1e-6)
        sim.add_testbench(bench)
        sim.run()
        assert "cycles" in out, f"the core did not finish in {CYCLES} cycles (deadlock)"
        assert not out["error"], "the core stopped with an error"
        device.dram[:] = np.array(out["words"], dtype=f"<u{self.config.bus_width // 8}").view(np.uint8)
        return Report(self.config, out["cycles"], {}, {}, count)


register_backend(ArbiterBackend.name, ArbiterBackend)


@pytest.mark.parametrize("arbiter", sorted(ArbiterBackend.ARBITERS))
@pytest.mark.parametrize("seed", [3, 8])
def test_long_programs_on_one_deep_queues_match_the_golden_simulator(seed, arbiter):
    config = board_config("icebreaker")
    assert config.cmd_queue_depth == 1
    case = random_program(config, seed, tasks=4, dram_size=DRAM // 2)
    assert len(case.program) > 8 * config.cmd_queue_depth
    want, _ = case.run(Device("fsim", config, dram_size=DRAM))
    got, _ = case.run(Device(f"{ArbiterBackend.name}:{arbiter}", config, dram_size=DRAM))
    np.testing.assert_array_equal(got, want, err_msg=f"seed {seed}, {arbiter} arbiter")
