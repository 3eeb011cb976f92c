"""iCEBreaker (Lattice iCE40 UP5K, SG48, 12 MHz oscillator, FT2232H USB-serial).

The core runs at 18 MHz from the UP5K's PLL (`vdla.hardware.boards.clocks`): nextpnr's fmax
was 21.1 MHz when it ran from the oscillator.

The UP5K has 5,280 logic cells, 8 SB_MAC16 and 30 4-Kbit block RAMs, plus four 32 KiB
SPRAM blocks, which hold programs and data (128 KiB). The core is the smallest useful
one: a 1x2x2 GEMM on DSPs with 16-bit accumulators (so the ALU's MUL takes one SB_MAC16
per lane), buffers of a few hundred bytes in block RAM, one-deep command queues and
short instruction fields; only the cycle counter gets a register (the others are
optimised away). It fills about 96 % of the logic cells: what made it fit was one DMA
engine per stage (`vdla.hardware.dma.Loader2D`), block RAM read ports without read-first
emulation (`build._NO_COLLISION`) and no instruction holding register in fetch.
"""

from __future__ import annotations

from ...config import Config
from . import Board

__all__ = ["BOARDS", "ICEBREAKER"]


def _platform():
    from amaranth_boards.icebreaker import ICEBreakerPlatform  # the `fpga` extra; imported only to build

    return ICEBreakerPlatform()

CONFIG = Config(
    name="icebreaker", batch=1, block_in=2, block_out=2, acc_width=16,
    uop_buff_size=512, inp_buff_size=256, wgt_buff_size=256, acc_buff_size=256,
    bus_width=32, cmd_queue_depth=1, dep_queue_depth=4,
    dram_addr_width=16, loop_iter_width=8, alu_imm_width=8, clock_mhz=18.0,
    acc_read_register=False,  # the UP5K's logic cells are all used
    # CFG's GEMM epilogue and GEMM init took the core to 5707 of the 5280 LCs: illegal here
    # (ILLEGAL_OPCODE), and the compiler requantises on the ALU for this Config, as VTA does
    gemm_epilogue=False,
)

ICEBREAKER = Board(
    name="icebreaker", description="iCEBreaker with iCE40 UP5K: 1x2x2 GEMM on DSPs, 128 KiB SPRAM memory",
    family="ice40", platform=_platform, config=CONFIG, memory="spram", spram_blocks=4,
    counters=("cycles",),
    # Its two LEDs show running and done: the heartbeat's 25-bit counter is what kept the PLL's
    # 18 MHz build (5,290 of 5,280 logic cells) from fitting.
    leds=("running", "done"),
    # The UP5K is 96 % full without the stages' index checks, which take about 280 LCs (5351 of
    # its 5280 with them, 5144 without); the host validates every program first (Device.run).
    range_checks=False,
    io_registers=False,  # fetch's instruction register and the DMA write registers: about 350 LCs
)

BOARDS = (ICEBREAKER,)
