"""The golden simulator's cycle model: how long each instruction keeps its module busy.

The model, with parameters from `Config.timing` (all in core clock cycles):

- DMA (LOAD, STORE): a transfer of `rows` rows of `row_bytes` each costs one cycle per
  bus beat (`ceil(row_bytes / bus_bytes)` beats per row; requests are pipelined, so rows
  follow each other without a gap) and `burst_gap` per AXI burst of at most
  `max_burst_beats` beats. A LOAD also waits `dram_latency` once for its first beat, a
  STORE `dram_write_latency` for its acknowledgement; each zero-padding element costs
  one SRAM write cycle; `dma_tail` cycles drain the datapath at the end.
- GEMM: one uop-iteration per cycle (II = 1) plus `gemm_latency` to drain the pipeline.
- ALU: `alu_ii_tensor` (tensor operand) or `alu_ii_imm` (immediate) cycles per
  uop-iteration, plus `alu_latency`; `Config.operand_read_register`,
  `Config.gemm_sum_register` and `Config.inp_fanout_register` add a stage, and a cycle,
  each to both latencies
  (`pipeline_latency`); an iteration that reads a row an earlier one writes
  issues no sooner than `alu_raw_distance` cycles after it (the ALU's result is registered
  twice before write-back), and the iterations after it wait with it (`alu_stall_cycles`).
- Every instruction pays `insn_overhead` for decode and issue; a NOP, CFG or FINISH only that
  (the GEMM epilogue and GEMM init cost no cycle: OUT is written as the pipeline drains).
- Fetch starts `launch_latency` after start and reads the whole stream as one DMA:
  instruction k has arrived once the `dram_latency` and its bus beats (and burst gaps)
  have passed; it dispatches at most
  one instruction per cycle into the load/compute/store command queues.

Each module has its own memory port: contention between modules on one DRAM port is
not modelled. Queue waits (tokens, full queues) come from the scheduler in `golden.py`.
The defaults are calibrated against the Amaranth core; `benchmarks/bench_cycle_model.py`
prints the comparison.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np

from ..config import Config
from ..isa import INSN_BYTES

__all__ = ["dma_cycles", "pipeline_latency", "gemm_cycles", "alu_window", "alu_stall_cycles", "alu_cycles", "fetch_ready"]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def dma_cycles(config: Config, rows: int, row_bytes: int, pad_elems: int = 0, write: bool = False) -> int:
    t = config.timing
    cycles = t.insn_overhead + pad_elems
    if rows and row_bytes:
        beats = _ceil_div(row_bytes, config.bus_bytes)
        bursts = _ceil_div(beats, t.max_burst_beats)
        latency = t.dram_write_latency if write else t.dram_latency
        cycles += latency + rows * (beats + bursts * t.burst_gap) + t.dma_tail
    return cycles


def pipeline_latency(config: Config, op: str) -> int:
    """Cycles the tensor pipeline takes to drain after its last issue, `op` "gemm" or "alu":
    the Timing's latency, plus the stages the optional tensor registers add
    (`Config.tensor_stages`)."""
    return getattr(config.timing, f"{op}_latency") + config.tensor_stages


def gemm_cycles(config: Config, uop_iters: int) -> int:
    t = config.timing
    return t.insn_overhead + (uop_iters + pipeline_latency(config, "gemm") if uop_iters else 0)


def _alu_ii(config: Config, use_imm: bool) -> int:
    """Cycles between two ALU uop-iterations that do not wait for each other."""
    return config.timing.alu_ii_imm if use_imm else config.timing.alu_ii_tensor


def alu_window(config: Config, use_imm: bool) -> int:
    """How many iterations back a read-after-write can still make an ALU iteration wait."""
    return (config.timing.alu_raw_distance - 1) // _alu_ii(config, use_imm)


def alu_stall_cycles(config: Config, use_imm: bool, hits: Sequence[np.ndarray]) -> int:
    """Cycles an ALU instruction's iterations wait for the rows they read: ``hits[k - 1][m]``
    says iteration m reads a row iteration m - k writes (k = 1 ... `alu_window`).

    Iteration m issues at ``L[m] = max(L[m-1] + ii, L[m-k] + alu_raw_distance for each hit)``;
    the delay ``L[m] - m*ii`` only grows, and only at a hit, so only hits are visited."""
    distance, ii = config.timing.alu_raw_distance, _alu_ii(config, use_imm)
    at = np.flatnonzero(np.logical_or.reduce(hits)) if hits else []
    positions, delays = [-1], [0]  # the delay from each position on (a step function)
    for m in (int(x) for x in at):
        d = delays[-1]
        for k, h in enumerate(hits, start=1):
            if h[m]:
                before = delays[bisect.bisect_right(positions, m - k) - 1]
                d = max(d, before + distance - k * ii)
        if d > delays[-1]:
            positions.append(m)
            delays.append(d)
    return delays[-1]


def alu_cycles(config: Config, uop_iters: int, use_imm: bool, stalls: int = 0) -> int:
    """`stalls`: `alu_stall_cycles` of the instruction."""
    t = config.timing
    latency = pipeline_latency(config, "alu")
    return t.insn_overhead + (uop_iters * _alu_ii(config, use_imm) + stalls + latency if uop_iters else 0)


def fetch_ready(config: Config, index: int) -> int:
    """Cycle at which instruction `index` has arrived from DRAM in fetch."""
    t = config.timing
    beats = _ceil_div((index + 1) * INSN_BYTES, config.bus_bytes)
    return t.launch_latency + t.dram_latency + beats + (beats - 1) // t.max_burst_beats * t.burst_gap
