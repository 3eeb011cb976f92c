"""The one register-map table (vdla.hardware.regmap) and everything that derives from it:
the AXI4-Lite slave answers at the table's offsets (simulated here), the board SoC and both
runtime backends use the table's addresses, and the table itself is consistent."""

from __future__ import annotations

import pytest
from amaranth.sim import Simulator

from vdla.config import PRESETS
from vdla.hardware import regmap
from vdla.hardware.axi import REGISTERS as AXI_REGISTERS
from vdla.hardware.axi import AxiLiteControl
from vdla.hardware.boards.soc import REGISTERS as BOARD_REGISTERS
from vdla.hardware.core import COUNTER_NAMES, Counters, debug_layout
from vdla.runtime.backends.serial import BOARD_REGS
from vdla.simulator.rtl.verilator import REGISTERS as VERILATOR_REGISTERS

INTERFACES = [regmap.AXI, regmap.BOARD]


@pytest.mark.parametrize("interface", INTERFACES)
def test_offsets_are_distinct_aligned_and_fit_the_port(interface: str) -> None:
    regs = regmap.registers(interface)
    offsets = list(regs.values())
    assert len(set(offsets)) == len(offsets), "two registers of one interface share an offset"
    assert all(o % 4 == 0 and 0 <= o < 256 for o in offsets), "8-bit register port, word aligned"
    plain = [r.offset for r in regmap.TABLE if interface in r.interfaces]
    assert max(plain) < regmap.COUNTER_BASE, "registers run into the counters"


def test_shared_registers_are_the_same_on_both_interfaces() -> None:
    axi, board = regmap.registers(regmap.AXI), regmap.registers(regmap.BOARD)
    shared = set(axi) & set(board)
    assert {"control", "status", "insn_addr", "insn_count", "cycles", "error_code", "error_index"} <= shared
    assert {f"counter_{n}" for n in COUNTER_NAMES} <= shared
    assert all(axi[n] == board[n] for n in shared)
    assert "magic" not in board and "config_id" not in axi  # 0x1C differs by design


def test_hardware_and_backends_derive_from_the_table() -> None:
    assert AXI_REGISTERS == regmap.registers(regmap.AXI) == VERILATOR_REGISTERS
    assert BOARD_REGISTERS == regmap.registers(regmap.BOARD)
    board = regmap.registers(regmap.BOARD)
    assert (BOARD_REGS.start, BOARD_REGS.done, BOARD_REGS.insn_addr, BOARD_REGS.insn_count, BOARD_REGS.cycles,
            BOARD_REGS.error, BOARD_REGS.error_index, BOARD_REGS.config_id) == tuple(
        board[n] for n in ("control", "status", "insn_addr", "insn_count", "cycles", "error_code", "error_index",
                           "config_id"))
    assert dict(BOARD_REGS.counters) == {"gemm_counter": board["counter_gemm_iters"],
                                         "alu_counter": board["counter_alu_iters"]}


def test_unknown_interface_is_named() -> None:
    with pytest.raises(ValueError, match="'pcie'"):
        regmap.registers("pcie")


def test_axi_slave_answers_at_the_table_offsets() -> None:
    """Read every AXI register of the table over AXI4-Lite in simulation (counters driven
    with distinct values), and write/read back the instruction address and count."""
    c = PRESETS["small"]
    dut = AxiLiteControl(c, Counters, debug_layout(c))
    counter_values = {n: 0x1000 + i for i, n in enumerate(COUNTER_NAMES)}
    got: dict[str, int] = {}

    async def bench(ctx):  # type: ignore[no-untyped-def]
        for n, v in counter_values.items():
            ctx.set(getattr(dut.counters, n), v)

        async def write(addr: int, value: int) -> None:
            ctx.set(dut.bus.awaddr, addr)
            ctx.set(dut.bus.awvalid, 1)
            ctx.set(dut.bus.wdata, value)
            ctx.set(dut.bus.wstrb, 0xF)
            ctx.set(dut.bus.wvalid, 1)
            ctx.set(dut.bus.bready, 1)
            for _ in range(10):
                await ctx.tick()
                if ctx.get(dut.bus.bvalid):
                    break
            ctx.set(dut.bus.awvalid, 0)
            ctx.set(dut.bus.wvalid, 0)
            await ctx.tick()
            ctx.set(dut.bus.bready, 0)

        async def read(addr: int) -> int:
            ctx.set(dut.bus.araddr, addr)
            ctx.set(dut.bus.arvalid, 1)
            ctx.set(dut.bus.rready, 1)
            for _ in range(10):
                await ctx.tick()
                ctx.set(dut.bus.arvalid, 0)
                if ctx.get(dut.bus.rvalid):
                    value = ctx.get(dut.bus.rdata)
                    await ctx.tick()
                    ctx.set(dut.bus.rready, 0)
                    return value
            raise AssertionError(f"no read response at {addr:#x}")

        await write(AXI_REGISTERS["insn_addr"], 0x1230)
        await write(AXI_REGISTERS["insn_count"], 7)
        for name, offset in regmap.registers(regmap.AXI).items():
            got[name] = await read(offset)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert got["magic"] == regmap.MAGIC and got["version"] == regmap.VERSION
    assert got["insn_addr"] == 0x1230 and got["insn_count"] == 7 and got["control"] == 0
    assert {n: got[f"counter_{n}"] for n in COUNTER_NAMES} == counter_values
