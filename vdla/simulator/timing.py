"""The golden simulator's cycle model: how long each instruction keeps its module busy.

The model, with parameters from `Config.timing` (all in core clock cycles):

- DMA (LOAD, STORE, and fetch): a transfer of `rows` rows of `row_bytes` each pays
  `dram_latency` once (requests are pipelined), one cycle per bus beat
  (`ceil(row_bytes / bus_bytes)` beats per row), and `burst_gap` per AXI burst of at
  most `max_burst_beats` beats; each zero-padding element costs one SRAM write cycle.
- GEMM: one uop-iteration per cycle (II = 1) plus `gemm_latency` to drain the pipeline.
- ALU: `alu_ii_tensor` (tensor operand) or `alu_ii_imm` (immediate) cycles per
  uop-iteration, plus `alu_latency`.
- Every instruction pays `insn_overhead` for decode and issue; a NOP or FINISH only that.
- Fetch reads the stream in bursts of `fetch_burst` instructions and dispatches at most
  one instruction per cycle into the load/compute/store command queues.

Each module has its own memory port: contention between modules on one DRAM port is
not modelled. Queue waits (tokens, full queues) come from the scheduler in `golden.py`.
"""

from __future__ import annotations

from ..config import Config
from ..isa import INSN_BYTES

__all__ = ["dma_cycles", "gemm_cycles", "alu_cycles", "fetch_ready"]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def dma_cycles(config: Config, rows: int, row_bytes: int, pad_elems: int = 0) -> int:
    t = config.timing
    cycles = t.insn_overhead + pad_elems
    if rows and row_bytes:
        beats = _ceil_div(row_bytes, config.bus_bytes)
        bursts = _ceil_div(beats, t.max_burst_beats)
        cycles += t.dram_latency + rows * (beats + bursts * t.burst_gap)
    return cycles


def gemm_cycles(config: Config, uop_iters: int) -> int:
    t = config.timing
    return t.insn_overhead + (uop_iters + t.gemm_latency if uop_iters else 0)


def alu_cycles(config: Config, uop_iters: int, use_imm: bool) -> int:
    t = config.timing
    ii = t.alu_ii_imm if use_imm else t.alu_ii_tensor
    return t.insn_overhead + (uop_iters * ii + t.alu_latency if uop_iters else 0)


def fetch_ready(config: Config, index: int) -> int:
    """Cycle at which instruction `index` has arrived from DRAM in fetch."""
    t = config.timing
    beats = _ceil_div(t.fetch_burst * INSN_BYTES, config.bus_bytes)
    burst = index // t.fetch_burst
    return t.dram_latency + (burst + 1) * (beats + t.burst_gap)
