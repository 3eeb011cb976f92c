"""`AxiTopDriver`: a cocotb driver for ``vdla_axi_top`` on cocotbext-axi (imported inside the simulator).

    import cocotb
    from vdla.cocotb_kit import AxiTopDriver

    @cocotb.test()
    async def test_add(dut):
        tb = AxiTopDriver(dut)                 # Config and memory size from vdla.cocotb_kit.run_tests
        await tb.reset()
        dev = tb.golden                        # an fsim Device over a memory of the RAM's size
        x = dev.array(np.arange(64, dtype=np.int32))
        ...                                    # a CommandStream on dev.config, as in the README
        result = await tb.run_program(stream.finish())   # RTL vs golden, every byte
        got = tb.read(y, np.int8)              # a result, read back from the RTL's memory

The driver starts the clock on ``clk``, puts an `AxiRam` on the ``m_axi_*`` ports (the
core's memory) and an `AxiLiteMaster` on ``s_axil_*`` (its registers, named as in
`vdla.hardware.regmap`), and watches every AXI burst the core issues (INCR, full-width
beats, at most ``Config.timing.max_burst_beats`` beats, no 4 KiB crossing): violations
collect in ``tb.protocol_errors``. ``backpressure(True)`` stalls every RAM channel in a
fixed pseudo-random pattern.

The Config comes from ``$VDLA_SIM_CONFIG`` (a JSON file `vdla.cocotb_kit.run_tests` writes) and
the memory size from ``$VDLA_SIM_RAM``; both can be given to the constructor instead.
"""

from __future__ import annotations

import itertools
import logging
import warnings
from dataclasses import dataclass, field

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from ..config import Config
from ..hardware.core import COUNTER_NAMES
from ..hardware.errors import ErrorCode
from ..hardware.regmap import AXI, COUNTER_BASE, STATUS_BITS, registers
from ..runtime import Buffer, Device, Program
from .env import DEFAULT_RAM, test_config, test_ram_size
from .golden import GoldenRun, first_difference, golden_run, rtl_counters

__all__ = ["AxiTopDriver", "RtlRun", "test_config", "DEFAULT_RAM", "DONE", "RUNNING", "ERROR"]

# cocotbext-axi 0.1.x still uses cocotb 1.x spellings (setimmediatevalue, Task.kill).
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\..*")

DONE, RUNNING, ERROR = (1 << STATUS_BITS[k] for k in ("done", "running", "error"))
#: Register name -> offset on the AXI top (counters as ``counter_<name>``).
REGISTERS = registers(AXI)


@dataclass
class RtlRun:
    """One program on the RTL: STATUS at the end, the cycle count and counters it reports, the
    memory afterwards, and the golden run it was compared with."""

    status: int
    cycles: int
    counters: dict[str, int]
    memory: np.ndarray  # uint8, the RTL's whole memory after the run
    golden: GoldenRun
    mismatch: str = ""  # first_difference(golden.after, memory), "" when bit-exact
    errors: list[str] = field(default_factory=list)


class AxiTopDriver:
    """cocotbext-axi models around a ``vdla_axi_top`` DUT, with the runtime's view of its memory."""

    def __init__(self, dut, config: Config | None = None, *, ram_size: int | None = None, clock_ns: int = 10,
                 quiet: bool = True) -> None:
        self.dut = dut
        self.config = config or test_config()
        self.ram_size = ram_size or test_ram_size()
        self.clock_task = Clock(dut.clk, clock_ns, unit="ns").start()
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=self.ram_size)
        self.ctrl = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        if quiet:  # one INFO line per AXI transaction otherwise
            for model in (self.ram.read_if, self.ram.write_if, self.ctrl.read_if, self.ctrl.write_if):
                model.log.setLevel(logging.WARNING)
        self.bursts = {"ar": 0, "aw": 0, "max_len": 0}
        self.protocol_errors: list[str] = []
        self._golden: Device | None = None
        cocotb.start_soon(self._monitor())

    # -- the golden side --------------------------------------------------------------------------
    @property
    def golden(self) -> Device:
        """An ``fsim`` Device with the core's Config over a memory of the RAM's size: allocate
        buffers (``dev.array``, ``dev.alloc``) and build programs on it; `run_program` runs them."""
        if self._golden is None:
            self._golden = Device("fsim", config=self.config, dram_size=self.ram_size)
        return self._golden

    # -- clock, reset, registers -------------------------------------------------------------------
    async def reset(self, cycles: int = 4) -> None:
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, cycles)
        self.dut.rst.value = 0
        await ClockCycles(self.dut.clk, 2)

    async def reg(self, name: str) -> int:
        """Read register `name` (``status``, ``cycles``, ``counter_gemm_iters``, ...)."""
        return await self.ctrl.read_dword(REGISTERS[name])

    async def set_reg(self, name: str, value: int) -> None:
        await self.ctrl.write_dword(REGISTERS[name], value)

    async def counters(self) -> dict[str, int]:
        """Every performance counter (`vdla.hardware.core.COUNTER_NAMES`)."""
        return {n: await self.ctrl.read_dword(COUNTER_BASE + 4 * i) for i, n in enumerate(COUNTER_NAMES)}

    async def debug(self) -> str:
        """The debug registers (stage states, queue levels), for a message when the core hangs."""
        return ", ".join(f"{n}={await self.reg(n):#x}" for n in ("debug_state", "debug_lq", "debug_sq", "debug_cmdq"))

    # -- memory ------------------------------------------------------------------------------------
    def write_memory(self, addr: int, data: bytes | np.ndarray) -> None:
        raw = data if isinstance(data, bytes | bytearray) else np.ascontiguousarray(data).tobytes()
        self.ram.write(addr, raw)

    def read_memory(self, addr: int = 0, nbytes: int | None = None) -> np.ndarray:
        """Bytes of the RTL's memory (default: all of it) as a uint8 array."""
        n = self.ram_size - addr if nbytes is None else nbytes
        return np.frombuffer(self.ram.read(addr, n), np.uint8).copy()

    def read(self, buffer: Buffer, dtype: np.dtype | type = np.uint8, shape: tuple[int, ...] | int | None = None
             ) -> np.ndarray:
        """`buffer` (allocated on `golden`) as the RTL left it, like ``buffer.read(dtype, shape)``."""
        dt = np.dtype(dtype)
        count = buffer.nbytes // dt.itemsize if shape is None else int(np.prod(shape))
        arr = self.read_memory(buffer.addr, count * dt.itemsize).view(dt)
        return arr if shape is None else arr.reshape(shape)

    def backpressure(self, on: bool) -> None:
        """Stalls on every channel of the RAM in a fixed pseudo-random pattern (or none)."""
        pattern = [0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0]
        rd, wr = self.ram.read_if, self.ram.write_if
        for k, ch in enumerate((rd.ar_channel, rd.r_channel, wr.aw_channel, wr.w_channel, wr.b_channel)):
            ch.set_pause_generator(itertools.cycle(pattern[k:] + pattern[:k]) if on else None)

    # -- running -----------------------------------------------------------------------------------
    async def run(self, insn_addr: int, count: int, long: bool = True, limit: int = 2_000_000) -> int:
        """Start the core on `count` instructions at byte `insn_addr` and wait for done; returns STATUS.
        For a `long` program (one that cannot finish within a register read) STATUS read right
        after the start must show running and not done: a previous run's done never leaks."""
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
        assert int(self.dut.irq.value) == 1, "irq low while STATUS.done is set"
        assert not status & RUNNING
        return status

    async def run_program(self, program: Program, *, check: bool = True, limit: int = 2_000_000) -> RtlRun:
        """Lay `program` out in memory as ``Device.run`` does (on `golden`, which runs it too),
        copy that memory into the RAM, run it on the RTL and read the memory back. With `check`
        (default) an error bit, a byte differing from the golden result or a counter differing
        from the golden simulator's fails the test with the first difference."""
        gold = golden_run(self.golden, program)
        self.ram.write(0, gold.before.tobytes())
        status = await self.run(gold.insn_addr, gold.count, long=False, limit=limit)
        memory = self.read_memory()
        counters = await self.counters()
        res = RtlRun(status, await self.reg("cycles"), counters, memory, gold, first_difference(gold.after, memory))
        if status & ERROR:
            code = ErrorCode(await self.reg("error_code"))
            res.errors.append(f"error bit set: {code.name} at instruction {await self.reg('error_index')}")
        want = rtl_counters(self.config, gold.report)
        for name, value in want.items():
            if counters[name] != value:
                res.errors.append(f"counter {name}: RTL {counters[name]}, golden {value}")
        if check:
            name = program.name or "program"
            assert not res.errors, f"{name}: " + "; ".join(res.errors)
            assert not res.mismatch, f"{name}: memory differs from the golden simulator: {res.mismatch}"
        return res

    async def _monitor(self) -> None:
        """Check every AR/AW burst: INCR, full-width beats, <= max_burst, no 4 KiB crossing."""
        dut, nbytes = self.dut, self.config.bus_bytes
        size = nbytes.bit_length() - 1
        max_burst = self.config.timing.max_burst_beats
        while True:
            await RisingEdge(dut.clk)
            for ch in ("ar", "aw"):
                if int(getattr(dut, f"m_axi_{ch}valid").value) and int(getattr(dut, f"m_axi_{ch}ready").value):
                    addr = int(getattr(dut, f"m_axi_{ch}addr").value)
                    beats = int(getattr(dut, f"m_axi_{ch}len").value) + 1
                    burst, sz = int(getattr(dut, f"m_axi_{ch}burst").value), int(getattr(dut, f"m_axi_{ch}size").value)
                    self.bursts[ch] += 1
                    self.bursts["max_len"] = max(self.bursts["max_len"], beats)
                    if burst != 1 or sz != size or beats > max_burst or addr % nbytes:
                        self.protocol_errors.append(f"{ch} burst addr={addr:#x} len={beats} burst={burst} size={sz}")
                    if addr // 4096 != (addr + beats * nbytes - 1) // 4096:
                        self.protocol_errors.append(f"{ch} burst at {addr:#x} of {beats} beats crosses 4 KiB")
