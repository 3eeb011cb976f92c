"""The cycle model (vdla.simulator.timing): formulas from its docstring recomputed here; fetch
streaming and load/compute overlap."""

from __future__ import annotations

import numpy as np
import pytest
from support.sim import DramImage, run_insns
from support.simref import (
    DEFAULT,
    PRESET_NAMES,
    SMALL,
    Prog,
    depth_of,
    rng_fill,
    sync_load_to_compute,
)

from vdla import isa
from vdla.config import PRESETS, Config
from vdla.isa import AluOp, Mem


def _span(report, k):
    (entry,) = [t for t in report.trace if t[0] == k]
    return entry


def dma_formula(c: Config, rows: int, row_bytes: int, pad_elems: int, write: bool = False) -> int:
    """timing.py's docstring, written out:
    overhead + pads + (read or write) latency + rows*(beats + bursts*gap) + tail."""
    t = c.timing
    beats = -(-row_bytes // (c.bus_width // 8))
    bursts = -(-beats // t.max_burst_beats)
    latency = t.dram_write_latency if write else t.dram_latency
    return t.insn_overhead + pad_elems + latency + rows * (beats + bursts * t.burst_gap) + t.dma_tail


L, G, S = isa.Stage.LOAD, isa.Stage.COMPUTE, isa.Stage.STORE


def run_flags(c: Config, insns, strict: bool = True):
    return run_insns(c, insns + [isa.finish()], DramImage(1 << 16), strict=strict)[0]


def _stalls(c: Config, uops: int, io: int, ii: int, tensor: bool) -> int:
    """Stall cycles of the ALU loops below, by brute force: each iteration issues `ii` after
    the one before, and no sooner than `alu_raw_distance` after any earlier one that writes a
    row it reads (dst, or src if `tensor`). Uop k is (k, k, k), dst_factor_out = uops, src
    factors 0."""
    t = c.timing
    step = t.alu_ii_tensor if tensor else t.alu_ii_imm
    rows = [(k + i * uops, k) for i in range(io) for _ in range(ii) for k in range(uops)]
    issue: list[int] = []
    for m, (d, s) in enumerate(rows):
        at = issue[-1] + step if issue else 0
        for p in range(m):
            if rows[p][0] == d or (tensor and rows[p][0] == s):
                at = max(at, issue[p] + t.alu_raw_distance)
        issue.append(at)
    return issue[-1] - (len(rows) - 1) * step


@pytest.mark.parametrize("registers", [(), ("operand_read_register",), ("gemm_sum_register",),
                                       ("operand_read_register", "gemm_sum_register"), ("inp_fanout_register",),
                                       ("operand_read_register", "gemm_sum_register", "inp_fanout_register")],
                         ids=["", "operand-read-register", "gemm-sum-register", "both", "inp-fanout-register", "all"])
@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("n_iters", [(1, 1, 1), (5, 3, 2), (1, 17, 4)])
def test_gemm_and_alu_cycles(preset, n_iters, registers):
    c = PRESETS[preset].replace(**{r: True for r in registers})
    # each extra stage drains one cycle later: both latencies grow by one per stage
    extra = len(registers)
    t = c.timing.replace(gemm_latency=c.timing.gemm_latency + extra, alu_latency=c.timing.alu_latency + extra)
    uops, io, ii = n_iters
    p = Prog(c)
    p.uops([(k, k, k) for k in range(uops)])
    p.add(isa.gemm(uop_bgn=0, uop_end=uops, iter_out=io, iter_in=ii, dst_factor_out=uops))
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=uops, iter_out=io, iter_in=ii, dst_factor_out=uops, use_imm=1))
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=uops, iter_out=io, iter_in=ii, dst_factor_out=uops))
    p.add(isa.gemm(uop_bgn=0, uop_end=0, iter_out=io, iter_in=ii))  # no iterations
    report, *_ = p.run()
    n = uops * io * ii
    _, kind, s, e = _span(report, 1)
    assert kind == "compute" and e - s == t.insn_overhead + n + t.gemm_latency
    _, _, s, e = _span(report, 2)
    stalls = _stalls(c, uops, io, ii, tensor=False)
    assert e - s == t.insn_overhead + n * t.alu_ii_imm + stalls + t.alu_latency
    _, _, s, e = _span(report, 3)
    stalls = _stalls(c, uops, io, ii, tensor=True)
    assert e - s == t.insn_overhead + n * t.alu_ii_tensor + stalls + t.alu_latency
    _, _, s, e = _span(report, 4)
    assert e - s == t.insn_overhead
    _, _, s, e = _span(report, 5)  # FINISH
    assert e - s == t.insn_overhead
    # compute runs its instructions back to back once they are fetched
    assert report.modules["compute"].insns == 6
    assert report.cycles == report.trace[-1][3]


def test_gemm_cycles_literal_default():
    """Default timing (overhead 2, gemm_latency 9): 3 uops x 4 x 5 iterations = 60 -> 71 cycles."""
    p = Prog(DEFAULT)
    p.uops([(0, 0, 0), (1, 0, 0), (2, 0, 0)])
    p.add(isa.gemm(uop_bgn=0, uop_end=3, iter_out=4, iter_in=5))
    report, *_ = p.run()
    _, _, s, e = _span(report, 1)
    assert e - s == 71


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize(("mem", "y", "x", "pads"), [
    (Mem.INP, 3, 40, (1, 1, 2, 2)),
    (Mem.INP, 1, 1, (0, 0, 0, 0)),
    (Mem.WGT, 2, 3, (0, 0, 0, 0)),
    (Mem.ACC, 2, 9, (0, 1, 0, 0)),
    (Mem.ACC_8BIT, 1, 7, (0, 0, 0, 3)),
    (Mem.UOP, 1, 100, (0, 0, 0, 0)),
])
def test_dma_cycles(preset, mem, y, x, pads):
    c = PRESETS[preset]
    p = Prog(c)
    rng = np.random.default_rng(0)
    yp0, yp1, xp0, xp1 = pads
    while (yp0 + y + yp1) * (xp0 + x + xp1) > depth_of(c, mem):
        x //= 2
    p.load(mem, rng_fill(rng, c, mem, y * x), x_size=x, y_size=y, y_pad_0=yp0, y_pad_1=yp1, x_pad_0=xp0, x_pad_1=xp1)
    if isa.stage_of(p.insns[-1]) == isa.Stage.LOAD:
        sync_load_to_compute(p)
        p.add(isa.nop(isa.Stage.COMPUTE, pop_prev=1))
    report, *_ = p.run()
    _, _, s, e = _span(report, 0)
    pad = (yp0 + y + yp1) * (xp0 + x + xp1) - x * y
    assert e - s == dma_formula(c, y, x * p.elem_bytes(mem), pad)


def test_dma_cycles_literal_small():
    """small: 4-byte bus. INP 3 rows x 20 elements of 4 B = 20 beats per row, no burst gap,
    pads (1,1,2,2): 5 x 24 - 60 = 60 pad elements -> 2 + 60 + 32 + 3 * 20 + 1 (tail) = 155."""
    p = Prog(SMALL)
    p.load(Mem.INP, np.zeros((60, 1, 4), np.int8), x_size=20, y_size=3, y_pad_0=1, y_pad_1=1, x_pad_0=2, x_pad_1=2)
    sync_load_to_compute(p)
    p.add(isa.nop(isa.Stage.COMPUTE, pop_prev=1))
    report, *_ = p.run()
    _, kind, s, e = _span(report, 0)
    assert kind == "load" and e - s == 155


def test_store_and_nop_cycles():
    c = DEFAULT
    p = Prog(c)
    p.add(isa.nop(isa.Stage.COMPUTE, push_next=1))
    base = p.space(64, Mem.OUT)
    p.add(isa.store(sram_base=0, dram_base=base, y_size=4, x_size=8, x_stride=16, pop_prev=1, push_prev=1))
    p.add(isa.nop(isa.Stage.COMPUTE, pop_next=1))
    report, *_ = p.run()
    _, _, s, e = _span(report, 0)
    assert e - s == c.timing.insn_overhead
    _, kind, s, e = _span(report, 1)
    assert kind == "store" and e - s == dma_formula(c, 4, 8 * 16, 0, write=True)
    # the store waited for the compute NOP's token; the final NOP for the store's
    assert s >= _span(report, 0)[3] and _span(report, 2)[2] >= e


@pytest.mark.parametrize("gaps", [False, True], ids=["no-gap", "gap"])
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_fetch_streams_the_instructions(preset, gaps):
    """Fetch starts launch_latency after start and reads the stream as one DMA: instruction k
    arrives after dram_latency + its bus beats (+ burst_gap per finished burst); it dispatches
    at most one instruction per cycle and the NOPs then run back to back (insn_overhead each)."""
    c = PRESETS[preset]
    if gaps:
        c = c.replace(timing=c.timing.replace(burst_gap=3, max_burst_beats=4))
    t = c.timing
    n = 20
    bus = c.bus_width // 8

    def arrive(k: int) -> int:
        beats = -(-(k + 1) * 16 // bus)
        return t.launch_latency + t.dram_latency + beats + (beats - 1) // t.max_burst_beats * t.burst_gap

    report = run_flags(c, [isa.nop(G) for _ in range(n)])
    starts = {k: s for k, _, s, _ in report.trace}
    expect, free, fetch = [], 0, 0
    for k in range(n + 1):
        dispatch = max(fetch, arrive(k))
        fetch = dispatch + 1
        expect.append(max(free, dispatch))
        free = expect[-1] + t.insn_overhead
    assert [starts[k] for k in range(n + 1)] == expect
    assert starts[0] == arrive(0)


def test_load_and_compute_overlap():
    """Independent load and compute work runs concurrently: total < sum of busy times."""
    c = DEFAULT
    p = Prog(c)
    p.load(Mem.INP, np.zeros((1024, 1, 16), np.int8), x_size=1024)
    p.insns[-1] = p.insns[-1].replace(push_next=1)
    p.uops([(0, 0, 0), (1, 0, 0)])
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=2, iter_out=600, iter_in=1, dst_factor_out=2, use_imm=1, imm=1))
    p.add(isa.nop(isa.Stage.COMPUTE, pop_prev=1))  # join before FINISH
    report, *_ = p.run()
    busy_l, busy_g = report.modules["load"].busy, report.modules["compute"].busy
    assert busy_l > 1000 and busy_g > 1000
    assert report.cycles < busy_l + busy_g
    assert report.cycles >= max(busy_l, busy_g)
    # the ALU did not wait for the load
    assert _span(report, 2)[2] < _span(report, 0)[3]


def test_dependency_orders_execution():
    """With a token, compute starts only after the load has completed."""
    c = DEFAULT
    p = Prog(c)
    p.load(Mem.INP, np.zeros((256, 1, 16), np.int8), x_size=256)
    sync_load_to_compute(p)
    p.uops([(0, 0, 0)], pop_prev=1)
    p.add(isa.gemm(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1))
    report, *_ = p.run()
    assert _span(report, 1)[2] >= _span(report, 0)[3]
    assert report.modules["compute"].stall > 0
