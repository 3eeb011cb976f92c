"""ULX3S (Lattice ECP5, CABGA381, speed 6, 25 MHz oscillator, FT231X USB-serial): 85F, 45F and 25F.

Configs are sized to the part (`peers.md` E.1): DSP blocks (MULT18X18D) go first to the
tensor ALU's MUL (3 per 32-bit lane) and then to GEMM lanes; the remaining GEMM lanes
are LUT multipliers (`Board.lut_lanes`). Block RAM (DP16KD, 2 KiB of bytes each) holds
the buffers, the three 128-bit command queues and the program/data memory.
"""

from __future__ import annotations

from ...config import Config
from . import Board

__all__ = ["BOARDS", "ULX3S_85F", "ULX3S_45F", "ULX3S_25F"]


def _platform(size: str):
    def make():
        from amaranth_boards import ulx3s  # the `fpga` extra; imported only to build

        return getattr(ulx3s, f"ULX3S_{size}_Platform")()

    return make

#: VTA's 1x16x16 GEMM with the buffers cut to the 85F's 208 DP16KD (VTA's 448 KiB do not fit):
#: uop 8 KiB, inp 16 KiB, wgt 128 KiB (512 rows of 256 B: 57 DP16KD), acc 64 KiB (two read copies).
CONFIG_85F = Config(
    name="ulx3s-85f", batch=1, block_in=16, block_out=16,
    uop_buff_size=8 << 10, inp_buff_size=16 << 10, wgt_buff_size=128 << 10, acc_buff_size=64 << 10,
    bus_width=64, cmd_queue_depth=512, dep_queue_depth=512, clock_mhz=75.0,
    # the INP/WGT reads registered once more (inside the block RAMs, `Board.bram_output_registers`),
    # so that a read's route across the die has a cycle of its own; the GEMM adder tree cut by a
    # register halfway (the far DSP lanes' products and the whole tree did not fit in a period);
    # the INP word copied once per WGT slice before the lanes (one register drove every lane's
    # multipliers, 13-16 ns of route); the ALU's MIN/MAX compare registered before its select
    operand_read_register=True, gemm_sum_register=True, inp_fanout_register=True, alu_compare_register=True,
    # CFG's GEMM epilogue and GEMM init are not in the committed bitstream (built before them):
    # on once a build with them closes timing (`vdla synth ulx3s-85f`), as every ECP5 board's
    gemm_epilogue=False,
)

#: 1x8x8 on the 45F (72 MULT18X18D, 108 DP16KD).
CONFIG_45F = Config(
    name="ulx3s-45f", batch=1, block_in=8, block_out=8,
    uop_buff_size=4 << 10, inp_buff_size=8 << 10, wgt_buff_size=32 << 10, acc_buff_size=16 << 10,
    # 70 MHz with the 85F's tensor-pipeline options (78.8 routed); builds at 75 routed 72.3 and 72.1
    # (seeds 1, 3; README, timing closure)
    bus_width=64, cmd_queue_depth=512, dep_queue_depth=512, clock_mhz=70.0,
    operand_read_register=True, inp_fanout_register=True, alu_compare_register=True,
    gemm_epilogue=False,  # as the 85F's
)

#: 1x4x4 on the 25F (28 MULT18X18D, 56 DP16KD).
CONFIG_25F = Config(
    name="ulx3s-25f", batch=1, block_in=4, block_out=4,
    uop_buff_size=4 << 10, inp_buff_size=2 << 10, wgt_buff_size=8 << 10, acc_buff_size=8 << 10,
    bus_width=32, cmd_queue_depth=512, dep_queue_depth=512, clock_mhz=75.0,
    gemm_epilogue=False,  # as the 85F's
)

ULX3S_85F = Board(
    name="ulx3s-85f", description="ULX3S with LFE5U-85F: 1x16x16 GEMM, 96 DSP + 160 LUT MACs, 64 KiB memory",
    family="ecp5", platform=_platform("85F"), config=CONFIG_85F, memory="bram", mem_size=64 << 10,
    # the WGT buffer's block RAMs spread over the die: four read-address copies (and no more block RAM)
    lut_lanes=10, wgt_slices=4,
    # the read, operand (and product) registers inside the block RAMs and multipliers (`.outreg`)
    bram_output_registers=True, dsp_input_registers=True,
    # at 75 MHz seeds 1-4 routed 74.9, 67.1, 75.8 and (placed) 61.1 MHz: seed 3 closes (README)
    seed=3,
)
ULX3S_45F = Board(
    name="ulx3s-45f", description="ULX3S with LFE5U-45F: 1x8x8 GEMM, 40 DSP + 24 LUT MACs, 64 KiB memory",
    family="ecp5", platform=_platform("45F"), config=CONFIG_45F, memory="bram", mem_size=64 << 10,
    lut_lanes=3, wgt_slices=2, bram_output_registers=True, dsp_input_registers=True,
)
ULX3S_25F = Board(
    name="ulx3s-25f", description="ULX3S with LFE5U-25F: 1x4x4 GEMM, 12 DSP + 4 LUT MACs, 32 KiB memory",
    family="ecp5", platform=_platform("25F"), config=CONFIG_25F, memory="bram", mem_size=32 << 10,
    lut_lanes=1,
)

BOARDS = (ULX3S_85F, ULX3S_45F, ULX3S_25F)
