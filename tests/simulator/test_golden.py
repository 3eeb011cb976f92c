"""The golden scheduler (vdla.simulator.golden): counters per run, and deadlocks, token underflow,
leftover tokens, races and full queues reported precisely, never a hang."""

from __future__ import annotations

import numpy as np
import pytest
from support.sim import DramImage, Geometry, place_insns, run_insns
from support.simref import (
    DEFAULT,
    PRESET_NAMES,
    SMALL,
    Prog,
    rng_acc,
    rng_inp,
    rng_wgt,
    sync_load_to_compute,
)

from vdla import isa
from vdla.config import PRESETS, Config
from vdla.isa import AluOp, Mem
from vdla.simulator import (
    DeadlockError,
    Machine,
    RaceError,
    TokenError,
    TokenUnderflowError,
    run,
)


def _span(report, k):
    (entry,) = [t for t in report.trace if t[0] == k]
    return entry


L, G, S = isa.Stage.LOAD, isa.Stage.COMPUTE, isa.Stage.STORE


def run_flags(c: Config, insns, strict: bool = True):
    return run_insns(c, insns + [isa.finish()], DramImage(1 << 16), strict=strict)[0]


def test_token_underflow():
    insns = [isa.nop(G), isa.nop(G, pop_prev=1)]
    with pytest.raises(TokenUnderflowError) as ei:
        run_flags(SMALL, insns)
    msg = str(ei.value)
    assert "instruction 1" in msg and "compute" in msg and "l2g" in msg and "underflow" in msg
    assert ei.value.index == 1
    assert ei.value.waits[0]["module"] == "compute" and ei.value.waits[0]["queue"] == "l2g"


@pytest.mark.parametrize(("stage", "flag", "queue"), [
    (L, "pop_next", "g2l"), (G, "pop_next", "s2g"), (S, "pop_prev", "g2s"), (G, "pop_prev", "l2g"),
])
def test_token_underflow_every_queue(stage, flag, queue):
    with pytest.raises(TokenUnderflowError, match=queue) as ei:
        run_flags(SMALL, [isa.nop(stage, **{flag: 1})])
    assert ei.value.index == 0 and ei.value.waits[0]["queue"] == queue


def test_cyclic_wait_is_a_deadlock_naming_both_modules():
    insns = [
        isa.nop(L, pop_next=1),  # 0: load waits g2l
        isa.nop(L, push_next=1),  # 1: ... and would then push l2g
        isa.nop(G, pop_prev=1),  # 2: compute waits l2g
        isa.nop(G, push_prev=1),  # 3: ... and would then push g2l
    ]
    with pytest.raises(DeadlockError) as ei:
        run_flags(SMALL, insns)
    e = ei.value
    assert type(e) is DeadlockError  # not an underflow: pushes exist, queued behind blocked instructions
    msg = str(e)
    assert "deadlock" in msg and "load" in msg and "compute" in msg
    assert "instruction 0" in msg and "instruction 2" in msg and "g2l" in msg and "l2g" in msg
    assert {(w["module"], w["index"]) for w in e.waits} == {("load", 0), ("compute", 2)}


def test_leftover_tokens():
    insns = [isa.nop(L), isa.nop(L, push_next=1), isa.nop(G, push_next=1), isa.nop(S, pop_prev=1, push_prev=1)]
    with pytest.raises(TokenError) as ei:
        run_flags(SMALL, insns)
    e = ei.value
    assert e.leftover == {"l2g": [1], "s2g": [3]}
    msg = str(e)
    assert "l2g" in msg and "s2g" in msg and "instruction(s) 1" in msg and "instruction(s) 3" in msg


def test_leftover_tokens_non_strict_are_warnings():
    report = run_flags(SMALL, [isa.nop(L, push_next=1)], strict=False)
    assert len(report.warnings) == 1 and "l2g" in report.warnings[0]
    assert "warning" in report.table()


def test_unsynchronised_store_is_a_race():
    c = DEFAULT
    image = DramImage()
    base = image.reserve(2048 * 16) // 16
    insns = [isa.store(sram_base=0, dram_base=base, y_size=1, x_size=2048, x_stride=2048), isa.finish()]
    with pytest.raises(RaceError) as ei:
        run_insns(c, insns, image)
    msg = str(ei.value)
    assert ei.value.index == 0 and "instruction 0" in msg and "store" in msg and "FINISH" in msg
    report, *_ = run_insns(c, insns, image, strict=False)
    assert any("FINISH" in w for w in report.warnings)


def test_synchronised_store_is_not_a_race():
    c = DEFAULT
    image = DramImage()
    base = image.reserve(2048 * 16) // 16
    insns = [isa.nop(G, push_next=1),
             isa.store(sram_base=0, dram_base=base, y_size=1, x_size=2048, x_stride=2048, pop_prev=1, push_prev=1),
             isa.nop(G, pop_next=1), isa.finish()]
    report, *_ = run_insns(c, insns, image)
    assert report.warnings == [] and report.cycles >= _span(report, 1)[3]


def test_full_dependency_queue_deadlocks():
    c = SMALL  # dep_queue_depth 16
    assert c.dep_queue_depth == 16
    insns = [isa.nop(L, push_next=1) for _ in range(17)]
    with pytest.raises(DeadlockError) as ei:
        run_flags(c, insns)
    msg = str(ei.value)
    assert "full" in msg and "l2g" in msg and "instruction 16" in msg


def test_full_dependency_queue_drains_with_pops():
    """17 pushes are fine when compute pops them: the 17th push waits for the first pop."""
    c = SMALL
    insns = [isa.nop(L, push_next=1) for _ in range(17)] + [isa.nop(G, pop_prev=1) for _ in range(17)]
    report = run_flags(c, insns)
    assert report.warnings == []


def test_full_command_queue_deadlocks():
    c = SMALL  # cmd_queue_depth 16
    insns = [isa.nop(G, pop_prev=1)] + [isa.nop(G) for _ in range(16)] + [isa.nop(L, push_next=1)]
    with pytest.raises(DeadlockError) as ei:
        run_flags(c, insns)
    msg = str(ei.value)
    assert "full" in msg and "compute command queue is full (16 instructions)" in msg
    assert "instruction 16" in msg and "instruction 0" in msg
    assert any(w["module"] == "fetch" for w in ei.value.waits)


def test_command_queue_depth_alone_is_not_a_deadlock():
    c = SMALL
    insns = [isa.nop(G) for _ in range(40)] + [isa.nop(L, push_next=1), isa.nop(G, pop_prev=1)]
    report = run_flags(c, insns)
    assert report.instructions == 43


L, G, S = isa.Stage.LOAD, isa.Stage.COMPUTE, isa.Stage.STORE


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_counters(preset):
    c = PRESETS[preset]
    g = Geometry.of(c)
    rng = np.random.default_rng(0)
    p = Prog(c)
    p.load(Mem.INP, rng_inp(rng, c, 12), x_size=3, y_size=2, x_stride=5, y_pad_0=1, x_pad_1=2)  # 6 elements moved
    p.load(Mem.WGT, rng_wgt(rng, c, 4), x_size=4)
    sync_load_to_compute(p)
    p.load(Mem.ACC, rng_acc(rng, c, 5), x_size=5, pop_prev=1)
    p.load(Mem.ACC_8BIT, rng.integers(-5, 5, (3, c.batch, c.block_out), dtype=np.int8), sram_base=8)
    p.uops([(0, 0, 0), (1, 1, 1), (2, 2, 2)])
    p.add(isa.gemm(uop_bgn=0, uop_end=3, iter_out=2, iter_in=1, dst_factor_out=3, src_factor_out=1))  # 6
    p.add(isa.gemm(reset=1, uop_bgn=0, uop_end=3, iter_out=1, iter_in=1))  # not counted
    p.add(isa.alu(AluOp.MAX, uop_bgn=0, uop_end=2, iter_out=2, iter_in=2, dst_factor_in=4, use_imm=1))  # 8
    p.insns[-1] = p.insns[-1].replace(push_next=1)
    base = p.space(20, Mem.OUT)
    p.add(isa.store(sram_base=0, dram_base=base, y_size=3, x_size=2, x_stride=4, pop_prev=1, push_prev=1))
    p.add(isa.nop(isa.Stage.COMPUTE, pop_next=1))
    report, _, _, _, _ = p.run()
    assert report.counters == {
        "inp_load_nbytes": 6 * g.inp_bytes,
        "wgt_load_nbytes": 4 * g.wgt_bytes,
        "acc_load_nbytes": 5 * g.acc_bytes + 3 * g.acc_bytes,  # ACC_8BIT counts full ACC elements (fsim)
        "uop_load_nbytes": 3 * 4,
        "out_store_nbytes": 6 * g.out_bytes,
        "gemm_counter": 6,
        "alu_counter": 8,
    }


def test_counters_are_per_run():
    c = SMALL
    p = Prog(c)
    p.uops([(0, 0, 0)])
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=1, iter_out=3, iter_in=1, use_imm=1, imm=1))
    insns = p.insns + [isa.finish()]
    addr, n = place_insns(p.image, insns, c)
    m = Machine(c)
    r1 = run(c, p.image.dram, addr, n, machine=m)
    r2 = run(c, p.image.dram, addr, n, machine=m)
    assert r1.counters == r2.counters and r1.counters["alu_counter"] == 3
    assert m.acc[0, 0, 0] == 6  # SRAM persists across runs on one machine
