"""The system a board runs: the core, one memory, an arbiter, the UART host bridge and control registers.

::

    UART pins -- SerialBridge --mem--+
                      |              +-- arbiter ------ram-- BlockRam | Spram   (programs + data)
                      reg            |        ^  ^  ^  ^
                      |              |  fetch load compute store   (the core's memory ports)
                 ControlRegisters -- Core

`BoardTop` is the same for every board; a `vdla.hardware.boards.Board` picks the Config,
the memory (block RAM, or the iCE40 UP5K's SPRAM), the clock and the baud rate. With
``platform=None`` it is plain gateware with ``rx``/``tx`` signals, which the tests drive
in Amaranth's simulator; with a platform it requests the board's UART, LEDs and clock.

Memory and arbiters: `vdla.hardware.boards.arbiter` (the ``ram`` port, the service order,
the compact `MemoryArbiter` of the iCEBreaker and the `PipelinedArbiter` of the ULX3S
parts, chosen by ``io_registers``).

Control registers: :mod:`vdla.hardware.regmap`'s board view (``REGISTERS``): control
(write 1 to start), status, instruction address and count, cycles, error code and index,
CONFIG_ID (the `config_id` of the Config the core was built for), MEM_SIZE (bytes of
memory behind the bridge and the core) and the counters from 0x40.
Reads have no side effects (the bridge may repeat them).
"""

from __future__ import annotations

import functools
import json
import operator
import zlib

from amaranth import Cat, ClockSignal, Const, Elaboratable, Instance, Module, Mux, Signal
from amaranth.build import ResourceError
from amaranth.hdl import ResetInserter
from amaranth.lib import io, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In
from amaranth.utils import ceil_log2, exact_log2

from ...config import Config
from ..bridge import SerialBridge
from ..core import COUNTER_NAMES, Core
from ..regmap import BOARD, COUNTER_BASE, STATUS_BITS, registers
from ..uart import divisor_for
from .arbiter import MemoryArbiter, PipelinedArbiter, ram_signature

__all__ = [
    "REGISTERS", "COUNTER_BASE", "LEDS", "config_id", "ram_signature", "BlockRam", "Spram", "MemoryArbiter", "PipelinedArbiter", "BoardTop",
]

#: Control register byte offsets of the board (`vdla.hardware.regmap`, counters included).
REGISTERS = registers(BOARD)
#: What the board's LEDs can show, in the default order: a heartbeat (the clock runs, about
#: 1 Hz), and the core's running, done and error.
LEDS = ("heartbeat", "running", "done", "error")
REG_ADDR_WIDTH = 8
STATUS_DONE, STATUS_RUNNING, STATUS_ERROR = (1 << STATUS_BITS[b] for b in ("done", "running", "error"))


def config_id(config: Config) -> int:
    """A 32-bit fingerprint (CRC-32) of the Config's architectural parameters.

    Two Configs with the same id run the same programs; the runtime compares it with the
    board's CONFIG_ID register before it runs anything.
    """
    arch = {k: getattr(config, k) for k in Config.ARCHITECTURAL}
    if config.gemm_window == config.gemm_window_implied:
        # implied by the other fields, so it adds nothing: the ids of the Configs from before
        # the window (and the boards built with them) stay what they were
        del arch["gemm_window"]
    return zlib.crc32(json.dumps(arch, sort_keys=True).encode())


class BlockRam(wiring.Component):
    """``size`` bytes of block RAM (`lib.memory.Memory`) behind a `ram_signature` port."""

    def __init__(self, size: int, data_width: int) -> None:
        self.size, self.data_width = size, data_width
        self.depth = size // (data_width // 8)
        super().__init__({"ram": In(ram_signature(ceil_log2(self.depth), data_width))})

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.mem = mem = Memory(shape=self.data_width, depth=self.depth, init=[])
        rd = mem.read_port()
        wr = mem.write_port(granularity=8)
        ram = self.ram
        m.d.comb += [rd.en.eq(ram.en), rd.addr.eq(ram.addr), ram.rdata.eq(rd.data),
                     wr.addr.eq(ram.addr), wr.data.eq(ram.wdata), wr.en.eq(ram.we)]
        return m


class Spram(wiring.Component):
    """The iCE40 UltraPlus SPRAM (SB_SPRAM256KA: 16 K x 16 bits each) behind a `ram_signature` port.

    ``data_width // 16`` blocks side by side form a bank; ``count`` blocks give
    ``count * 32 KiB``. With ``simulate=True`` each block is a `Memory` with the same
    behaviour (nibble write masks, output held between reads), for Amaranth's simulator.
    """

    BLOCK_WORDS = 16384

    def __init__(self, data_width: int = 32, count: int = 4, *, simulate: bool = False) -> None:
        if data_width % 16 or count % (data_width // 16):
            raise ValueError(f"{count} SPRAM blocks cannot form {data_width}-bit banks")
        self.data_width, self.count, self.simulate = data_width, count, simulate
        self.width_blocks = data_width // 16
        self.banks = count // self.width_blocks
        self.size = count * self.BLOCK_WORDS * 2
        super().__init__({"ram": In(ram_signature(14 + exact_log2(self.banks), data_width))})

    def elaborate(self, platform) -> Module:
        m = Module()
        ram = self.ram
        write = ram.we.any()
        bank = ram.addr[14:] if self.banks > 1 else Const(0, 1)
        last_bank = Signal(max(1, exact_log2(self.banks)))
        with m.If(ram.en):
            m.d.sync += last_bank.eq(bank)
        outs = []
        for b in range(self.banks):
            words = []
            for h in range(self.width_blocks):
                dout = Signal(16, name=f"dout_{b}_{h}")
                mask = Cat(ram.we[2 * h], ram.we[2 * h], ram.we[2 * h + 1], ram.we[2 * h + 1])
                select = (bank == b) & (ram.en | write)
                din = ram.wdata[16 * h : 16 * h + 16]
                if self.simulate:
                    mem = Memory(shape=16, depth=self.BLOCK_WORDS, init=[])
                    m.submodules[f"spram_{b}_{h}"] = mem
                    rd = mem.read_port()
                    wr = mem.write_port(granularity=4)
                    m.d.comb += [rd.addr.eq(ram.addr[:14]), rd.en.eq(select & ~write), dout.eq(rd.data),
                                 wr.addr.eq(ram.addr[:14]), wr.data.eq(din), wr.en.eq(Mux(select & write, mask, 0))]
                else:
                    m.submodules[f"spram_{b}_{h}"] = Instance(
                        "SB_SPRAM256KA",
                        i_ADDRESS=ram.addr[:14], i_DATAIN=din, i_MASKWREN=mask, i_WREN=write,
                        i_CHIPSELECT=select, i_CLOCK=ClockSignal(), i_STANDBY=0, i_SLEEP=0, i_POWEROFF=1,
                        o_DATAOUT=dout,
                    )
                words.append(dout)
            outs.append(Cat(*words))
        m.d.comb += ram.rdata.eq(Mux(last_bank, outs[-1], outs[0]) if self.banks == 2 else outs[0])
        if self.banks > 2:
            with m.Switch(last_bank):
                for b, o in enumerate(outs):
                    with m.Case(b):
                        m.d.comb += ram.rdata.eq(o)
        return m


class BoardTop(Elaboratable):
    """Core + memory + arbiter + UART bridge + control registers; see the module docstring.

    Parameters: the core's ``config``; ``mem_size`` bytes of memory (``memory="bram"``) or
    ``spram_blocks`` SPRAM blocks (``memory="spram"``); ``clk_hz`` and ``baud`` for the UART
    divisor (or ``divisor`` directly, for simulation); ``counters``: which of the core's
    counters get a register (all by default; a small part may keep only a few);
    ``clock``: called as ``clock(m, platform)`` to create the ``sync`` domain on a board
    (None: the platform's default clock); it returns None (the domain has its own reset) or
    a reset request, from which each unit (core, bridge, arbiter) gets a reset register of
    its own (``unit_reset_<name>``, kept apart by the build), so no one reset net spans the die; ``leds``: what the board's LEDs
    show, in order (of `LEDS`: a heartbeat, running, done, error; as many as it has). ``simulate`` models SPRAM with `Memory` for the simulator.
    ``range_checks``, ``io_registers`` and ``wgt_slices`` go to `Core` (off: no room on the part
    for the stages' index checks or for the registers on the memory's paths; slices: the WGT
    buffer cut in columns, each with its own read address register); ``io_registers`` also
    picks the `PipelinedArbiter` over the compact `MemoryArbiter`.
    """

    def __init__(self, config: Config, *, mem_size: int = 64 << 10, memory: str = "bram", spram_blocks: int = 4,
                 clk_hz: float = 25e6, baud: int = 115200, divisor: int | None = None, max_block: int = 256,
                 counters: tuple[str, ...] | None = None, clock=None, leds: tuple[str, ...] = LEDS, simulate: bool = False,
                 idle_cycles: int | None = None, range_checks: bool = True,
                 io_registers: bool = True, wgt_slices: int = 1) -> None:
        if memory not in ("bram", "spram"):
            raise ValueError(f"memory must be 'bram' or 'spram', not {memory!r}")
        self.config = config
        self.memory = memory
        if memory == "spram":
            self.ram_unit = Spram(config.bus_width, spram_blocks, simulate=simulate)
        else:
            self.ram_unit = BlockRam(mem_size, config.bus_width)
        self.mem_size = self.ram_unit.size
        self.clk_hz, self.baud = clk_hz, baud
        self.divisor = divisor if divisor is not None else divisor_for(clk_hz, baud)
        self.counters = tuple(COUNTER_NAMES if counters is None else counters)
        unknown = set(self.counters) - set(COUNTER_NAMES)
        if unknown:
            raise ValueError(f"unknown counters {sorted(unknown)}; the core has {COUNTER_NAMES}")
        unknown = set(leds) - set(LEDS)
        if unknown:
            raise ValueError(f"unknown LED signals {sorted(unknown)}; the top shows {LEDS}")
        self.clock, self.leds = clock, tuple(leds)
        self.io_registers = io_registers
        self.ram_bits = ceil_log2(self.mem_size)
        # 16-byte instructions fill the memory at most
        self.core = Core(config, count_width=self.ram_bits - 3, range_checks=range_checks, io_registers=io_registers,
                         wgt_slices=wgt_slices)
        self.bridge = SerialBridge(divisor=self.divisor, mem_size=self.mem_size, data_width=config.bus_width,
                                   max_block=max_block, reg_addr_width=REG_ADDR_WIDTH, clk_hz=clk_hz,
                                   idle_cycles=idle_cycles)
        #: The UART pins as seen from the board (rx: host to board), for simulation.
        self.rx = Signal(init=1)
        self.tx = Signal(init=1)

    def register_values(self) -> dict[int, object]:
        """Offset -> value (an Amaranth value) of every readable register."""
        core = self.core
        regs = {
            REGISTERS["status"]: Cat(core.done, core.running, core.error),
            REGISTERS["cycles"]: core.counters.cycles,
            REGISTERS["error_code"]: Mux(core.error, core.error_code, 0),
            REGISTERS["error_index"]: core.error_index,
            REGISTERS["config_id"]: Const(config_id(self.config), 32),
            REGISTERS["mem_size"]: Const(self.mem_size, 32),
        }
        for k, name in enumerate(COUNTER_NAMES):
            if name in self.counters:
                regs[COUNTER_BASE + 4 * k] = getattr(core.counters, name)
        return regs

    #: The units that get a reset register of their own on a board with a reset request.
    RESET_UNITS = ("core", "bridge", "arbiter")

    def elaborate(self, platform) -> Module:
        m = Module()
        hold = self.clock(m, platform) if platform is not None and self.clock is not None else None

        def add(name: str, unit):
            assert name in self.RESET_UNITS, name
            if hold is None:
                m.submodules[name] = unit
                return unit
            reset = Signal(init=1, name=f"unit_reset_{name}")
            m.d.sync += reset.eq(hold)
            m.submodules[name] = ResetInserter(reset)(unit)
            return unit

        core, bridge = add("core", self.core), add("bridge", self.bridge)
        m.submodules.ram = ram = self.ram_unit
        arbiter = PipelinedArbiter if self.io_registers else MemoryArbiter
        arb = add("arbiter", arbiter(self.config.bus_width, len(ram.ram.addr)))
        for port in ("fetch", "load", "compute", "store"):
            wiring.connect(m, getattr(core, f"{port}_mem"), getattr(arb, port))
        wiring.connect(m, bridge.mem, arb.host)
        wiring.connect(m, arb.ram, ram.ram)

        # -- control registers
        reg = bridge.reg
        # Wide enough for any instruction stream in this memory (16 bytes per instruction).
        insn_addr, insn_count = Signal(self.ram_bits), Signal(self.ram_bits - 3)
        m.d.comb += [core.insn_addr.eq(insn_addr), core.insn_count.eq(insn_count)]
        start = Signal()
        m.d.sync += start.eq(0)
        m.d.comb += core.start.eq(start)
        with m.If(reg.we):
            with m.Switch(reg.addr):
                with m.Case(REGISTERS["control"]):
                    m.d.sync += start.eq(reg.wdata[0])
                with m.Case(REGISTERS["insn_addr"]):
                    m.d.sync += insn_addr.eq(reg.wdata)
                with m.Case(REGISTERS["insn_count"]):
                    m.d.sync += insn_count.eq(reg.wdata)
        # Register reads in two registered levels (the bridge samples rdata two cycles after it
        # sets the address): each group of four registers is selected into a register of its
        # own, near them, and the groups are OR-ed (all but one are 0). One multiplexer from
        # counters all over the core into rdata was the 45F's critical path.
        values = sorted({**self.register_values(), REGISTERS["insn_addr"]: insn_addr,
                         REGISTERS["insn_count"]: insn_count}.items())
        picked = []
        for g in range(0, len(values), 4):
            group = Signal(32, name=f"reg_read_{g // 4}")
            with m.Switch(reg.addr):
                for offset, value in values[g:g + 4]:
                    with m.Case(offset):
                        m.d.sync += group.eq(value)
                with m.Default():
                    m.d.sync += group.eq(0)
            picked.append(group)
        m.d.sync += reg.rdata.eq(functools.reduce(operator.or_, picked))

        # -- pins
        m.d.comb += [bridge.rx.eq(self.rx), self.tx.eq(bridge.tx)]
        if platform is not None:
            uart = platform.request("uart", 0, dir="-")
            m.submodules.uart_rx = rx_buf = io.Buffer("i", uart.rx)
            m.submodules.uart_tx = tx_buf = io.Buffer("o", uart.tx)
            m.d.comb += [self.rx.eq(rx_buf.i), tx_buf.o.eq(self.tx)]
            if self.leds:
                status = {"running": core.running, "done": core.done, "error": core.error}
                if "heartbeat" in self.leds:
                    beat = Signal(max(1, ceil_log2(int(self.clk_hz))))
                    m.d.sync += beat.eq(beat + 1)
                    status["heartbeat"] = beat[-1]
                for i, value in enumerate(status[name] for name in self.leds):
                    try:
                        led = platform.request("led", i, dir="-")
                    except ResourceError:  # fewer LEDs on this board
                        break
                    m.submodules[f"led_{i}"] = led_buf = io.Buffer("o", led)
                    m.d.comb += led_buf.o.eq(value)
        return m
