"""Unit tests of the core's building blocks in Amaranth's simulator (async testbenches).

The tensor ALU is checked lane by lane against the golden ALU (`vdla.simulator.alu`),
the GEMM array against numpy (in window mode too), the token queue against its counting rule.
"""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from vdla.config import PRESETS
from vdla.hardware.alu import TensorAlu
from vdla.hardware.gemm import GemmArray
from vdla.hardware.tokens import TokenQueue
from vdla.isa import AluOp
from vdla.simulator import alu as golden_alu


def _pack(values, width: int) -> int:
    return sum((int(v) & ((1 << width) - 1)) << (width * i) for i, v in enumerate(np.ravel(values)))


def _unpack(word: int, width: int, n: int) -> np.ndarray:
    half = 1 << (width - 1)
    return np.array([((word >> (width * i)) & ((1 << width) - 1) ^ half) - half for i in range(n)], dtype=np.int64)


def _clocked(dut, bench) -> None:
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("compare_register", [False, True], ids=["", "compare-register"])
@pytest.mark.parametrize("op", list(AluOp))
def test_tensor_alu_matches_the_golden_alu(op, compare_register):
    """Every operation on random and edge-case operands, with and without
    `Config.alu_compare_register` (MIN/MAX pick in the second stage)."""
    c = PRESETS["small"].replace(alu_compare_register=compare_register)
    w, lanes = c.acc_width, c.batch * c.block_out
    rng = np.random.default_rng(int(op))
    edge = np.array([0, 1, -1, 2**31 - 1, -(2**31), 31, 32, 33, -31, -32, -33, 63, 64, -64, 12345, -54321])
    cases = [rng.integers(-(2**31), 2**31, (2, lanes)) for _ in range(20)]
    cases += [np.stack([rng.choice(edge, lanes), rng.choice(edge, lanes)]) for _ in range(20)]
    if op == AluOp.SHR:
        cases += [np.stack([rng.integers(-(2**31), 2**31, lanes), rng.integers(-40, 41, lanes)]) for _ in range(20)]
    dut = TensorAlu(c)

    async def bench(ctx):
        ctx.set(dut.op, int(op))
        await ctx.tick().repeat(TensorAlu.OP_LEAD)  # the op is held, and taken a cycle ahead
        for a, b in cases:
            ctx.set(dut.a, _pack(a, w))
            ctx.set(dut.b, _pack(b, w))
            await ctx.tick()  # TensorAlu.LATENCY
            got = _unpack(ctx.get(dut.out), w, lanes)
            want = golden_alu.apply(int(op), a.astype(np.int64), b.astype(np.int64), w)
            assert np.array_equal(got, want), f"{op.name}({a}, {b}): RTL {got}, golden {want}"

    _clocked(dut, bench)


@pytest.mark.parametrize(("name", "read_register", "sum_register", "fanout", "inp_groups"),
                         [("small", False, False, False, 1), ("batch2", False, False, False, 1),
                          ("small", True, False, False, 2), ("batch2", True, False, False, 4),
                          ("small", False, True, False, 1), ("default", True, True, False, 4),
                          ("batch2", False, True, False, 1), ("small", False, False, True, 2),
                          ("batch2", True, False, True, 4), ("default", True, True, True, 4)])
def test_gemm_array_matches_numpy(name, read_register, sum_register, fanout, inp_groups):
    """Operands go in every cycle; each cycle's sums belong to the operands of two cycles
    before (the operands and the products are registered), one more with
    `Config.operand_read_register` (each INP copy feeding its own group of lanes), one
    more with `Config.gemm_sum_register` (the adder tree's partial sums) and one more with
    `Config.inp_fanout_register` (the INP group copies), where WGT comes a cycle after INP."""
    c = PRESETS[name].replace(operand_read_register=read_register, gemm_sum_register=sum_register,
                              inp_fanout_register=fanout)
    delay = 2 + read_register + sum_register + fanout
    rng = np.random.default_rng(7)
    dut = GemmArray(c, inp_groups=inp_groups)
    trials = []
    for trial in range(10):
        inp = rng.integers(-128, 128, (c.batch, c.block_in))
        wgt = rng.integers(-128, 128, (c.block_out, c.block_in))
        if trial == 0:
            inp[:], wgt[:] = -128, -128  # the largest sums
        trials.append((inp, wgt))
    # what goes in at each tick: the INP of trial t with the WGT of trial t - fanout
    feed = [*trials, *[trials[-1]] * delay]
    wgts = [trials[0][1]] * fanout + [w for _, w in feed]

    async def bench(ctx):
        for tick, ((inp, _), wgt) in enumerate(zip(feed, wgts)):
            ctx.set(dut.inp, _pack(inp, c.inp_width))
            ctx.set(dut.wgt, _pack(wgt, c.wgt_width))
            await ctx.tick()
            trial = tick - delay + 1  # the INP set `delay` - 1 ticks before the last
            if 0 <= trial < len(trials):
                got = _unpack(ctx.get(dut.sums), c.acc_width, c.batch * c.block_out).reshape(c.batch, c.block_out)
                inp, wgt = trials[trial]
                assert np.array_equal(got, inp @ wgt.T), f"trial {trial}"
        assert trial >= len(trials) - 1, "not every trial was checked"

    _clocked(dut, bench)


@pytest.mark.parametrize(("name", "read_register", "fanout", "inp_groups"),
                         [("small", False, False, 1), ("batch2", True, False, 4), ("batch2", True, True, 2)])
def test_gemm_array_window_matches_numpy(name, read_register, fanout, inp_groups):
    """Window mode (`Config.gemm_window`): for a word pushed with ``push``, lane (b, o) sums
    wgt[o][t] * element (b, o) of the word pushed t pushes before, since the last ``first``
    (older ones are zeros); other words are a plain GEMM and leave the window alone. The flags
    go with INP through the optional registers."""
    c = PRESETS[name].replace(operand_read_register=read_register, inp_fanout_register=fanout)
    delay = 2 + read_register + fanout
    rng = np.random.default_rng(11)
    dut = GemmArray(c, inp_groups=inp_groups)
    # (inp, wgt, push, first): passes of several lengths, a plain word in the middle of one
    flags = [(1, 1), (1, 0), (1, 0), (0, 0), (1, 0), (1, 1), (1, 0)] + [(1, 0)] * c.block_in + [(1, 1), (0, 1), (1, 0)]
    trials = [(rng.integers(-128, 128, (c.batch, c.block_in)), rng.integers(-128, 128, (c.block_out, c.block_in)),
               push, first) for push, first in flags]
    want, window = [], []
    for inp, wgt, push, first in trials:
        if not push:
            want.append(inp @ wgt.T)
            continue
        window = [inp] + ([] if first else window)[: c.block_in - 1]
        taps = np.zeros((c.batch, c.block_out, c.block_in), np.int64)  # [b][o][t]: element (b, o) of W_t
        for t, word in enumerate(window):
            taps[:, :, t] = word[:, : c.block_out]
        want.append(np.einsum("bot,ot->bo", taps, wgt))
    feed = [*trials, *[(trials[-1][0], trials[-1][1], 0, 0)] * delay]
    wgts = [trials[0][1]] * fanout + [w for _, w, _, _ in feed]

    async def bench(ctx):
        for tick, ((inp, _, push, first), wgt) in enumerate(zip(feed, wgts)):
            ctx.set(dut.inp, _pack(inp, c.inp_width))
            ctx.set(dut.wgt, _pack(wgt, c.wgt_width))
            ctx.set(dut.push, push)
            ctx.set(dut.first, first)
            await ctx.tick()
            trial = tick - delay + 1
            if 0 <= trial < len(trials):
                got = _unpack(ctx.get(dut.sums), c.acc_width, c.batch * c.block_out).reshape(c.batch, c.block_out)
                assert np.array_equal(got, want[trial]), f"trial {trial}"
        assert trial >= len(trials) - 1, "not every trial was checked"

    _clocked(dut, bench)


@pytest.mark.parametrize("groups", [0, 3, 8])
def test_gemm_array_refuses_inp_groups_that_do_not_divide_block_out(groups):
    with pytest.raises(ValueError, match=f"inp_groups={groups} must divide block_out \\(4\\)"):
        GemmArray(PRESETS["small"], inp_groups=groups)


def test_token_queue_counts_and_saturates():
    dut = TokenQueue(depth=2)

    async def bench(ctx):
        assert ctx.get(dut.pop.valid) == 0 and ctx.get(dut.push.ready) == 1
        ctx.set(dut.push.valid, 1)
        await ctx.tick().repeat(3)  # the third push is refused: full
        assert ctx.get(dut.level) == 2 and ctx.get(dut.push.ready) == 0 and ctx.get(dut.pop.valid) == 1
        ctx.set(dut.pop.ready, 1)  # full: the pop is taken, the push refused
        await ctx.tick()
        assert ctx.get(dut.level) == 1 and ctx.get(dut.push.ready) == 1
        await ctx.tick()  # push and pop together: the level stays
        assert ctx.get(dut.level) == 1
        ctx.set(dut.push.valid, 0)
        await ctx.tick()
        assert ctx.get(dut.level) == 0 and ctx.get(dut.pop.valid) == 0

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
