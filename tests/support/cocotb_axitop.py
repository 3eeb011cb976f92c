"""cocotb 2.x tests of the Verilated AxiTop (run by test_verilator.py through cocotb_tools.runner).

The host is cocotbext-axi: `AxiRam` on ``m_axi_*`` is the DRAM, `AxiLiteMaster` on
``s_axil_*`` drives the registers of `vdla.hardware.axi`. The cases (programs with their
DRAM image before and after, computed by the golden simulator in the pytest process)
come from ``$VDLA_TB_DIR/cases.npz`` + ``cases.json``; the Config from ``config.json``.

Not collected by pytest (no ``test_`` prefix): cocotb imports it inside the simulator.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import warnings
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from vdla.config import Config
from vdla.hardware.axi import COUNTER_BASE, MAGIC, REGISTERS, STATUS_BITS, VERSION
from vdla.hardware.core import COUNTER_NAMES
from vdla.hardware.fetch import ErrorCode

# cocotbext-axi 0.1.x still uses cocotb 1.x spellings (setimmediatevalue, Task.kill).
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\..*")

TB_DIR = Path(os.environ.get("VDLA_TB_DIR", "."))
CONFIG = Config.load(TB_DIR / "config.json")
CASES = json.loads((TB_DIR / "cases.json").read_text())
ARRAYS = np.load(TB_DIR / "cases.npz")
RAM_SIZE = int(CASES["ram_size"])
MAX_BURST = int(CASES["max_burst"])
DONE, RUNNING, ERROR = (1 << STATUS_BITS[k] for k in ("done", "running", "error"))


class TB:
    def __init__(self, dut) -> None:
        self.dut = dut
        self.clk_task = Clock(dut.clk, 10, unit="ns").start()
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=RAM_SIZE)
        self.ctrl = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        for model in (self.ram.read_if, self.ram.write_if, self.ctrl.read_if, self.ctrl.write_if):
            model.log.setLevel(logging.WARNING)  # one INFO line per transaction otherwise
        self.bursts = {"ar": 0, "aw": 0, "max_len": 0}
        self.protocol_errors: list[str] = []
        cocotb.start_soon(self._monitor())

    async def reset(self) -> None:
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, 4)
        self.dut.rst.value = 0
        await ClockCycles(self.dut.clk, 2)

    async def _monitor(self) -> None:
        """Check every AR/AW burst: INCR, full-width beats, <= max_burst, no 4 KiB crossing."""
        dut, nbytes = self.dut, CONFIG.bus_bytes
        size = nbytes.bit_length() - 1
        while True:
            await RisingEdge(dut.clk)
            for ch in ("ar", "aw"):
                if int(getattr(dut, f"m_axi_{ch}valid").value) and int(getattr(dut, f"m_axi_{ch}ready").value):
                    addr = int(getattr(dut, f"m_axi_{ch}addr").value)
                    beats = int(getattr(dut, f"m_axi_{ch}len").value) + 1
                    burst, sz = int(getattr(dut, f"m_axi_{ch}burst").value), int(getattr(dut, f"m_axi_{ch}size").value)
                    self.bursts[ch] += 1
                    self.bursts["max_len"] = max(self.bursts["max_len"], beats)
                    if burst != 1 or sz != size or beats > MAX_BURST or addr % nbytes:
                        self.protocol_errors.append(f"{ch} burst addr={addr:#x} len={beats} burst={burst} size={sz}")
                    if addr // 4096 != (addr + beats * nbytes - 1) // 4096:
                        self.protocol_errors.append(f"{ch} burst at {addr:#x} of {beats} beats crosses 4 KiB")

    def backpressure(self, on: bool) -> None:
        """Random-looking stalls on every channel of the RAM (or none)."""
        pattern = [0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0]
        rd, wr = self.ram.read_if, self.ram.write_if
        for k, ch in enumerate((rd.ar_channel, rd.r_channel, wr.aw_channel, wr.w_channel, wr.b_channel)):
            ch.set_pause_generator(itertools.cycle(pattern[k:] + pattern[:k]) if on else None)

    async def reg(self, name: str) -> int:
        return await self.ctrl.read_dword(REGISTERS[name])

    async def set_reg(self, name: str, value: int) -> None:
        await self.ctrl.write_dword(REGISTERS[name], value)

    async def run(self, insn_addr: int, count: int, long: bool = True, limit: int = 2_000_000) -> int:
        """Start the core and wait for done; returns STATUS. For a `long` program (one that
        cannot finish within a register read) STATUS read right after the start must show
        running and not done: the previous run's done never leaks into the new run."""
        await self.set_reg("insn_addr", insn_addr)
        await self.set_reg("insn_count", count)
        await self.set_reg("control", 1)
        status = await self.reg("status")
        if long:
            assert status & (DONE | RUNNING) == RUNNING, f"stale done right after start: STATUS={status:#x}"
        waited = 0
        while not status & DONE:
            await ClockCycles(self.dut.clk, 64)
            waited += 64
            assert waited < limit, f"no done after {limit} cycles; {await self.debug()}"
            status = await self.reg("status")
        assert int(self.dut.irq.value) == 1
        assert not status & RUNNING
        return status

    async def debug(self) -> str:
        return ", ".join(f"{n}={await self.reg(n):#x}" for n in ("debug_state", "debug_lq", "debug_sq", "debug_cmdq"))

    async def counters(self) -> dict[str, int]:
        return {n: await self.ctrl.read_dword(COUNTER_BASE + 4 * i) for i, n in enumerate(COUNTER_NAMES)}


def first_diff(want: np.ndarray, got: np.ndarray) -> str:
    k = int(np.argmax(want != got))
    return f"first differing byte at {k:#x}: golden {want[k]:#04x}, RTL {got[k]:#04x}"


@cocotb.test()
async def test_register_map(dut):
    tb = TB(dut)
    await tb.reset()
    assert await tb.reg("magic") == MAGIC
    assert await tb.reg("version") == VERSION
    assert await tb.reg("status") == 0, "idle after reset: not done, not running, no error"
    for name, value in (("insn_addr", 0x1234_5670), ("insn_count", 0xCAFE)):
        await tb.set_reg(name, value)
        assert await tb.reg(name) == value
    await tb.ctrl.write(REGISTERS["insn_addr"], b"\xab")  # byte strobes
    assert await tb.reg("insn_addr") == 0x1234_56AB
    assert await tb.ctrl.read_dword(0xFC) == 0, "unknown offsets read 0"
    assert await tb.reg("control") == 0


async def run_cases(dut, pressure: bool) -> None:
    tb = TB(dut)
    await tb.reset()
    tb.backpressure(pressure)
    for i, case in enumerate(CASES["cases"]):
        if case["pressure"] != pressure:
            continue
        tb.ram.write(0, ARRAYS[f"before_{i}"].tobytes())
        status = await tb.run(case["insn_addr"], case["count"])
        want_error = ErrorCode[case["error"]]
        if want_error != ErrorCode.NONE:
            assert status & ERROR, f"{case['name']}: no error bit, STATUS={status:#x}"
            assert await tb.reg("error_code") == want_error, case["name"]
            assert await tb.reg("error_index") == case["error_index"], case["name"]
            continue
        assert not status & ERROR, f"{case['name']}: error {ErrorCode(await tb.reg('error_code')).name}"
        got = np.frombuffer(tb.ram.read(0, RAM_SIZE), np.uint8)
        want = ARRAYS[f"after_{i}"]
        assert np.array_equal(got, want), f"{case['name']}: {first_diff(want, got)}"
        cnt = await tb.counters()
        for name, value in case["counters"].items():
            assert cnt[name] == value, f"{case['name']}: counter {name} = {cnt[name]}, golden {value}"
        assert cnt["cycles"] == await tb.reg("cycles") > 0
        dut._log.info("%s: %d cycles, %s bursts", case["name"], cnt["cycles"], tb.bursts)
    assert not tb.protocol_errors, tb.protocol_errors[:5]
    assert tb.bursts["ar"] > 0 and tb.bursts["aw"] > 0


@cocotb.test()
async def test_programs(dut):
    """Programs bit-exact with the golden simulator, back to back on one core (buffers persist)."""
    await run_cases(dut, pressure=False)


@cocotb.test()
async def test_programs_with_backpressure(dut):
    """The same with stalls on every AXI channel of the RAM."""
    await run_cases(dut, pressure=True)


@cocotb.test()
async def test_error_then_clean_start(dut):
    """An illegal opcode sets error (and done); the next start clears both."""
    tb = TB(dut)
    await tb.reset()
    bad = ARRAYS["illegal"]
    tb.ram.write(0, bad.tobytes())
    status = await tb.run(CASES["illegal"]["insn_addr"], CASES["illegal"]["count"], long=False)
    assert status & ERROR and status & DONE
    assert await tb.reg("error_code") == ErrorCode.ILLEGAL_OPCODE
    assert await tb.reg("error_index") == CASES["illegal"]["error_index"]
    tb.ram.write(0, ARRAYS["finish_only"].tobytes())
    status = await tb.run(CASES["finish_only"]["insn_addr"], CASES["finish_only"]["count"], long=False)
    assert status == DONE, f"STATUS={status:#x}"
    assert await tb.reg("error_code") == 0
