"""Hypothesis: random GEMM/ALU and DMA programs on the golden simulator against
`support.simref.Ref` (the seed is printed by hypothesis on failure)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from support.simref import (
    PRESET_NAMES,
    Prog,
    assert_same_state,
    depth_of,
    rng_acc,
    rng_fill,
    rng_inp,
    rng_wgt,
    set_out_rows,
    sync_load_to_compute,
)

from vdla import isa
from vdla.config import PRESETS
from vdla.isa import AluOp, Mem, Op

LOAD_MEMS = [Mem.INP, Mem.WGT, Mem.ACC, Mem.ACC_8BIT, Mem.UOP]


ALU_OPS = [AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR, AluOp.MUL]


ROWS = 40  # rows of INP/WGT/ACC loaded; uop indices < 16 and loop offsets <= 18 stay inside


@st.composite
def compute_programs(draw):
    preset = draw(st.sampled_from(PRESET_NAMES))
    n_uops = draw(st.integers(1, 10))
    uops = [tuple(draw(st.integers(0, 15)) for _ in range(3)) for _ in range(n_uops)]
    uop_base = draw(st.integers(0, 20))
    insns = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 3)) == 0:  # CFG: the epilogue, init_base and window for the GEMMs after it
            insns.append(isa.cfg(init_base=draw(st.integers(0, 20)), shift=draw(st.integers(0, 31)),
                                 clip_lo=draw(st.integers(-128, 127)), clip_hi=draw(st.integers(-128, 127)),
                                 epilogue=int(draw(st.booleans())), window=int(draw(st.booleans())),
                                 warmup=draw(st.integers(0, 3))))
        bgn = draw(st.integers(0, n_uops))
        end = draw(st.integers(bgn, n_uops))
        loops = dict(
            uop_bgn=uop_base + bgn, uop_end=uop_base + end,
            iter_out=draw(st.integers(0, 4)), iter_in=draw(st.integers(0, 4)),
            dst_factor_out=draw(st.integers(0, 3)), dst_factor_in=draw(st.integers(0, 3)),
            src_factor_out=draw(st.integers(0, 3)), src_factor_in=draw(st.integers(0, 3)),
        )
        if draw(st.booleans()):
            insns.append(isa.gemm(reset=int(draw(st.integers(0, 5)) == 0), init=int(draw(st.integers(0, 2)) == 0),
                                  wgt_factor_out=draw(st.integers(0, 3)),
                                  wgt_factor_in=draw(st.integers(0, 3)), **loops))
        else:
            use_imm = draw(st.booleans())
            imm = draw(st.one_of(st.integers(-40, 40), st.integers(-(1 << 15), (1 << 15) - 1))) if use_imm else 0
            insns.append(isa.alu(draw(st.sampled_from(ALU_OPS)), use_imm=int(use_imm), imm=imm, **loops))
    acc_range = draw(st.sampled_from(["full", "small"]))
    seed = draw(st.integers(0, 2**32 - 1))
    return preset, uops, uop_base, insns, acc_range, seed


@st.composite
def dma_programs(draw):
    preset = draw(st.sampled_from(PRESET_NAMES))
    mem = draw(st.sampled_from(LOAD_MEMS))
    # y_size >= 1: y_size = 0 is the known pad-only bug (test_load_pad_only)
    load = dict(y_size=draw(st.integers(1, 4)), x_size=draw(st.integers(1, 5)), x_stride=draw(st.integers(0, 8)),
                sram_base=draw(st.integers(0, 10)))
    if mem != Mem.UOP:
        load.update({k: draw(st.integers(0, 3)) for k in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")})
    store = dict(y_size=draw(st.integers(1, 3)), x_size=draw(st.integers(1, 4)), x_stride=draw(st.integers(0, 6)),
                 sram_base=draw(st.integers(0, 4)))
    return preset, mem, load, store, draw(st.integers(0, 2**32 - 1))


L, G, S = isa.Stage.LOAD, isa.Stage.COMPUTE, isa.Stage.STORE


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True)
@given(compute_programs())
def test_random_compute_programs_match_reference(prog):
    preset, uops, uop_base, insns, acc_range, seed = prog
    c = PRESETS[preset]
    rng = np.random.default_rng(seed)
    p = Prog(c)
    p.load(Mem.INP, rng_inp(rng, c, ROWS))
    p.load(Mem.WGT, rng_wgt(rng, c, ROWS))
    sync_load_to_compute(p)
    p.uops(uops, sram_base=uop_base, pop_prev=1)
    p.load(Mem.ACC, rng_acc(rng, c, ROWS) if acc_range == "full" else rng_acc(rng, c, ROWS, -300, 300))
    p.add(*insns)
    note(f"preset={preset} seed={seed} uops={uops}\n" + "\n".join(map(str, p.insns)))
    report, _, m, ref, _ = p.run()
    assert_same_state(m, ref, f"preset={preset} seed={seed}")
    n = [(i.uop_end - i.uop_bgn) * i.iter_out * i.iter_in if i.opcode != Op.CFG else 0 for i in insns]
    assert report.counters["gemm_counter"] == sum(k for k, i in zip(n, insns) if i.opcode == Op.GEMM and not i.reset)
    assert report.counters["alu_counter"] == sum(k for k, i in zip(n, insns) if i.opcode == Op.ALU)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True)
@given(dma_programs())
def test_random_dma_programs_match_reference(prog):
    preset, mem, load, store, seed = prog
    c = PRESETS[preset]
    rng = np.random.default_rng(seed)
    p = Prog(c)
    set_out_rows(p, rng_acc(rng, c, 16))
    p.load(mem, rng_fill(rng, c, mem, min(130, depth_of(c, mem))))  # non-zero background
    n_src = (load["y_size"] - 1) * load["x_stride"] + load["x_size"] + 1
    p.load(mem, rng_fill(rng, c, mem, n_src), **load)
    on_load = isa.stage_of(p.insns[-1]) == isa.Stage.LOAD
    if on_load:
        sync_load_to_compute(p)
    p.add(isa.nop(isa.Stage.COMPUTE, pop_prev=int(on_load), push_next=1))
    base = p.space((store["y_size"] - 1) * store["x_stride"] + store["x_size"] + 4, Mem.OUT, fill=0x55)
    p.add(isa.store(dram_base=base + 1, pop_prev=1, push_prev=1, **store))
    p.add(isa.nop(isa.Stage.COMPUTE, pop_next=1))
    note(f"preset={preset} seed={seed}\n" + "\n".join(map(str, p.insns)))
    _, dram, m, ref, ref_dram = p.run()
    assert_same_state(m, ref, f"preset={preset} seed={seed}")
    assert np.array_equal(dram, ref_dram), "DRAM after STORE differs from the reference"
