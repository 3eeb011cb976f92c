"""cocotb 2.x tests of the Verilated AxiTop (run by test_verilator.py through `vdla.cocotb_kit.run_tests`).

The host is `vdla.cocotb_kit.AxiTopDriver` (cocotbext-axi: `AxiRam` on ``m_axi_*`` is the DRAM,
`AxiLiteMaster` on ``s_axil_*`` drives the registers of `vdla.hardware.regmap`). The cases
(programs with their DRAM image before and after, computed by the golden simulator in
the pytest process) come from ``$VDLA_TB_DIR/cases.npz`` + ``cases.json``; the Config
from ``$VDLA_SIM_CONFIG``.

Not collected by pytest (no ``test_`` prefix): cocotb imports it inside the simulator.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cocotb
import numpy as np

from vdla.cocotb_kit import AxiTopDriver
from vdla.cocotb_kit.driver import DONE, ERROR
from vdla.cocotb_kit.golden import first_difference
from vdla.hardware.axi import MAGIC, REGISTERS, VERSION
from vdla.hardware.errors import ErrorCode

TB_DIR = Path(os.environ.get("VDLA_TB_DIR", "."))
CASES = json.loads((TB_DIR / "cases.json").read_text())
ARRAYS = np.load(TB_DIR / "cases.npz")
RAM_SIZE = int(CASES["ram_size"])


def TB(dut) -> AxiTopDriver:  # noqa: N802  (the name the tests below use)
    return AxiTopDriver(dut, ram_size=RAM_SIZE)


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
        assert np.array_equal(got, want), f"{case['name']}: {first_difference(want, got)}"
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
