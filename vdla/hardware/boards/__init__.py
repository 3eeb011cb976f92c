"""Board tops for open FPGAs: the core, memory and UART host bridge on ULX3S (ECP5) and iCEBreaker (iCE40 UP5K).

    from vdla.hardware.boards import BOARDS, board
    b = board("ulx3s-85f")          # a Board: its Config, memory, clock, DSP/LUT split
    top = b.top()                   # the gateware (`soc.BoardTop`) for b.platform()
    vdla.hardware.boards.build.build(b)   # bitstream + report in bitstreams/ulx3s-85f/

Each `Board` names an amaranth-boards platform, the accelerator `Config` that fits the
part, the memory that holds programs and data (block RAM; the UP5K's SPRAM), the core
clock and the UART baud rate. See `soc` for the gateware and its register map, `build`
for the YoWASP flow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ...config import Config
from .soc import COUNTER_BASE, LEDS, REGISTERS, BoardTop, config_id

__all__ = ["Board", "BOARDS", "board", "board_config", "BoardTop", "REGISTERS", "COUNTER_BASE", "config_id"]


@dataclass(frozen=True)
class Board:
    """One buildable board: platform, Config, memory, clock; `top()` makes its gateware."""

    name: str
    description: str
    #: ``"ecp5"`` or ``"ice40"``.
    family: str
    #: Returns a fresh amaranth-boards platform instance.
    platform: Callable[[], object]
    config: Config
    #: ``"bram"`` (mem_size bytes of block RAM) or ``"spram"`` (spram_blocks SB_SPRAM256KA).
    memory: str = "bram"
    mem_size: int = 64 << 10
    spram_blocks: int = 4
    #: The clock the report checks nextpnr's fmax against (the core clock unless set). nextpnr
    #: itself times the PLL's output at the frequency it derives from the dividers: the core clock.
    constraint_mhz: float | None = None
    baud: int = 115200
    #: GEMM output lanes (block_in multipliers each) built from LUTs instead of DSP blocks.
    lut_lanes: int = 0
    #: Counters given a register (None: all of them).
    counters: tuple[str, ...] | None = None
    #: What the LEDs show, in order (`vdla.hardware.boards.soc.LEDS`).
    leds: tuple[str, ...] = LEDS
    #: The stages' run-time index checks (`vdla.hardware.core.Core`'s ``range_checks``).
    range_checks: bool = True
    #: Fetch's instruction register and the DMA engines' SRAM write registers (`Core`'s
    #: ``io_registers``): shorter paths from the memory, at a few hundred flip-flops.
    io_registers: bool = True
    #: Column slices of the WGT buffer, each with its own read address register (`Core`'s
    #: ``wgt_slices``): on a large part the buffer's block RAMs spread over the die.
    wgt_slices: int = 1
    #: Move the read registers that follow the buffers into the block RAMs' own output
    #: registers after synthesis (ECP5 only, `vdla.hardware.boards.outreg`): the paths then
    #: start at the register's clock-to-out instead of the block RAM's.
    bram_output_registers: bool = False
    #: Likewise the GEMM/ALU product registers into the MULT18X18Ds' output registers.
    dsp_output_registers: bool = False
    #: Likewise the GEMM operand registers into the MULT18X18Ds' input registers (the INP
    #: lane copies included: each stays apart inside its multiplier).
    dsp_input_registers: bool = False
    seed: int = 1
    #: Extra nextpnr options for a part whose routing needs them (e.g. the placer's maximum density,
    #: ``("--placer-heap-beta", "0.7")``); part of the flow settings, so of the source hash.
    pnr_options: tuple[str, ...] = ()
    #: Why `vdla synth all` (and so `nox -s bitstreams`) leaves the board out ("": it builds with the
    #: rest); ``vdla synth NAME`` still builds it.
    blocked: str = ""
    #: The part's capacity per nextpnr resource (for the report; nextpnr reports its own too).
    extra: dict = field(default_factory=dict)

    @property
    def memory_bytes(self) -> int:
        """Bytes of program/data memory behind the bridge."""
        return self.spram_blocks * (32 << 10) if self.memory == "spram" else self.mem_size

    @property
    def clk_mhz(self) -> float:
        """The core clock: the Config's ``clock_mhz`` (for ECP5 boards a PLL makes it from the oscillator)."""
        return self.config.clock_mhz

    @property
    def dsp_macs(self) -> int:
        c = self.config
        return c.batch * (c.block_out - self.lut_lanes) * c.block_in

    @property
    def lut_macs(self) -> int:
        return self.config.macs_per_cycle - self.dsp_macs

    def top(self, *, simulate: bool = False, **kw) -> BoardTop:
        """The board's gateware; ``simulate`` for Amaranth's simulator (no clock, SPRAM modelled).
        Keyword arguments override `BoardTop`'s (e.g. ``divisor``, ``mem_size``)."""
        from .clocks import clock_for

        args = dict(mem_size=self.mem_size, memory=self.memory, spram_blocks=self.spram_blocks,
                    clk_hz=self.clk_mhz * 1e6, baud=self.baud, counters=self.counters, leds=self.leds, range_checks=self.range_checks,
                    io_registers=self.io_registers, wgt_slices=self.wgt_slices,
                    clock=None if simulate else clock_for(self), simulate=simulate)
        args.update(kw)
        return BoardTop(self.config, **args)


def _registry() -> dict[str, Board]:
    from . import icebreaker, ulx3s

    return {b.name: b for b in (*ulx3s.BOARDS, *icebreaker.BOARDS)}


BOARDS: dict[str, Board] = _registry()


def board(name: str) -> Board:
    try:
        return BOARDS[name]
    except KeyError:
        raise KeyError(f"unknown board {name!r}; boards are {', '.join(BOARDS)}") from None


def board_config(name: str) -> Config:
    """The Config a board's bitstream is built for (for ``Device("serial:PORT", config=...)``)."""
    return board(name).config
