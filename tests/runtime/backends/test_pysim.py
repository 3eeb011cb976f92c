"""RTL timing in Amaranth's simulator (issue 4): the per-cycle trace hook of the testbench and
the per-instruction timeline the pysim backend derives from it; the load of the next tile
overlapping the compute of the current one (examples/blocked_matmul.py, small config) with
every dependency token consumed only after it was produced; and the default config's GEMM
core sustaining one uop-iteration per cycle, from the RTL counters."""

from __future__ import annotations

import importlib.util

import numpy as np
from support import REPO

import vdla.simulator.rtl.pysim  # noqa: F401  (registers the backend)
from vdla.config import PRESETS, Config
from vdla.hardware.stage import State
from vdla.hardware.testbench import TRACE_FIELDS
from vdla.isa import Op, Stage, decode, stage_of
from vdla.runtime import CommandStream, Device, Loop, Mem, Program, UopKernel

DRAM = 1 << 20
_MODULE = {Stage.LOAD: "load", Stage.COMPUTE: "compute", Stage.STORE: "store"}
#: token queue -> (producer stage and flag, consumer stage and flag): VTA's protocol
_QUEUES = {
    "l2g": (("load", "push_next"), ("compute", "pop_prev")),
    "g2l": (("compute", "push_prev"), ("load", "pop_next")),
    "g2s": (("compute", "push_next"), ("store", "pop_prev")),
    "s2g": (("store", "push_prev"), ("compute", "pop_next")),
}


def _example(name: str):  # type: ignore[no-untyped-def]
    path = REPO / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}_timeline", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run_matmul(m: int, n: int, k: int):  # type: ignore[no-untyped-def]
    ex = _example("blocked_matmul")
    c = PRESETS["small"]
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    dev = Device("pysim", config=c, dram_size=DRAM)
    dev.backend.trace = True
    a_buf = dev.array(ex.pack(a, c.batch, c.block_in), "A")
    w_buf = dev.array(ex.pack(w, c.block_out, c.block_in), "W")
    c_buf = dev.alloc(m * n, "C")
    prog, tiles = ex.matmul_program(c, a_buf, w_buf, c_buf, m, n, k, 4, -128, 127)
    report = dev.run(prog)
    got = c_buf.read(np.int8, (m // c.batch, n // c.block_out, c.batch, c.block_out)).transpose(0, 2, 1, 3)
    ref = np.clip((a.astype(np.int64) @ w.astype(np.int64).T) >> 4, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(got.reshape(m, n), ref)
    return prog, tiles, report


def test_trace_hook_rows_and_timeline() -> None:
    prog, _, report = _run_matmul(8, 8, 32)
    rows = report.rtl_trace
    assert rows is not None and len(rows[0]) == len(TRACE_FIELDS)
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
    col = {f: i for i, f in enumerate(TRACE_FIELDS)}
    for s in ("load", "compute", "store"):  # retire counts never go back and end at the counters
        counts = [r[col[f"{s}_insns"]] for r in rows]
        assert counts == sorted(counts)
        assert counts[-1] <= report.modules[s].insns <= counts[-1] + 1
    insns = decode(prog.insns, prog.config)
    timeline = {k: (mod, start, end) for k, mod, start, end in report.trace}
    retired = sum(m.insns for m in report.modules.values())
    assert len(timeline) >= retired - 1  # FINISH's own retire may land after done
    for k, (mod, start, end) in timeline.items():
        assert mod == _MODULE[stage_of(insns[k])]
        assert 0 < start <= end <= report.cycles + 1
    for s in ("load", "compute", "store"):  # a stage executes one instruction at a time, in order
        spans = sorted((k, st, e) for k, (mod, st, e) in timeline.items() if mod == s)
        for (_, _, e0), (_, s1, _) in zip(spans, spans[1:]):
            assert e0 <= s1


def test_load_of_next_tile_overlaps_compute_with_tokens_respected() -> None:
    """blocked_matmul at 16x16x64 on the small config: 4 output tiles whose INP/WGT tiles
    alternate between two buffer slots, so the load stage fetches tile t+1 while the GEMM
    core works on tile t."""
    prog, tiles, report = _run_matmul(16, 16, 64)
    insns = decode(prog.insns, prog.config)
    assert prog.config.name == "small" and tiles == (4, 4, 16)
    # (1) from the counters alone: the two stages were busy for more cycles than the run had
    busy_load, busy_compute = report.modules["load"].busy, report.modules["compute"].busy
    assert report.cycles < busy_load + busy_compute, (report.cycles, busy_load, busy_compute)
    # (2) from the per-instruction timeline: the loads of tile t+1 run during the GEMM of tile t
    span = {k: (start, end) for k, _, start, end in report.trace}
    gemms = [k for k, x in enumerate(insns) if x.opcode == Op.GEMM and not x.reset]
    loads = [k for k, x in enumerate(insns) if stage_of(x) == Stage.LOAD and x.x_size]  # NOPs aside
    assert len(gemms) == 4 and len(loads) == 8  # one GEMM, one INP + one WGT load per tile
    overlap = 0
    for t in range(len(gemms) - 1):
        g0, g1 = span[gemms[t]]
        for ld in loads[2 * t + 2 : 2 * t + 4]:
            l0, l1 = span[ld]
            overlap += max(0, min(g1, l1) - max(g0, l0))
        assert any(min(g1, span[ld][1]) > max(g0, span[ld][0]) for ld in loads[2 * t + 2 : 2 * t + 4]), (
            f"tile {t}: GEMM {span[gemms[t]]} does not overlap the next tile's loads "
            f"{[span[ld] for ld in loads[2 * t + 2 : 2 * t + 4]]}")
    assert overlap > 0.25 * sum(span[g][1] - span[g][0] for g in gemms)
    # (3) per cycle: cycles in which load and compute both execute
    col = {f: i for i, f in enumerate(TRACE_FIELDS)}
    both = sum(1 for r in report.rtl_trace
               if r[col["load_state"]] == State.EXEC and r[col["compute_state"]] == State.EXEC)
    assert both >= overlap > 0
    # (4) the token protocol: the n-th pop of a queue starts after the n-th push's instruction ended
    checked = 0
    for q, ((ps, pflag), (cs, cflag)) in _QUEUES.items():
        pushes = [k for k, x in enumerate(insns) if _MODULE[stage_of(x)] == ps and getattr(x, pflag, 0)]
        pops = [k for k, x in enumerate(insns) if _MODULE[stage_of(x)] == cs and getattr(x, cflag, 0)]
        assert len(pops) <= len(pushes), q
        for n, kc in enumerate(pops):
            kp = pushes[n]
            assert span[kp][1] <= span[kc][0], (
                f"{q}: instruction {kc} ({cs}) started at {span[kc][0]} before instruction {kp} ({ps}) "
                f"pushed its token (ended {span[kp][1]})")
            checked += 1
    assert checked >= 10


def _long_gemm(c: Config, inp, wgt, n_iter: int) -> Program:  # type: ignore[no-untyped-def]
    s = CommandStream(c, "long gemm")
    s.load_2d(Mem.INP, 0, inp, x_size=16)
    s.load_2d(Mem.WGT, 0, wgt, x_size=16)
    s.dep_push(Stage.LOAD, Stage.COMPUTE)
    s.dep_pop(Stage.LOAD, Stage.COMPUTE)
    loops = (Loop(n_iter // 16), Loop(16, dst=1, src=1, wgt=1))
    s.gemm(UopKernel.single(0, 0, 0, loops=loops), reset=False)
    s.dep_push(Stage.COMPUTE, Stage.STORE)
    s.dep_pop(Stage.COMPUTE, Stage.STORE)
    s.store_2d(0, inp, x_size=16)
    return s.finish()


def test_default_config_gemm_sustains_one_uop_iteration_per_cycle() -> None:
    """The default config (16x16 GEMM array): the GEMM instruction's execution in the RTL
    timeline lasts its uop-iterations plus a fixed pipeline latency, and the compute stage's
    busy counter grows by exactly one cycle per extra uop-iteration; results match fsim."""
    c = PRESETS["default"]
    rng = np.random.default_rng(1)
    data_inp = rng.integers(-128, 128, 16 * c.inp_elem_bytes, dtype=np.int8)
    data_wgt = rng.integers(-128, 128, 16 * c.wgt_elem_bytes, dtype=np.int8)
    pysim, fsim = Device("pysim", config=c, dram_size=DRAM), Device("fsim", config=c, dram_size=DRAM)
    pysim.backend.trace = True
    busy, length = {}, {}
    for n in (256, 1024):
        out = []
        for dev in (fsim, pysim):
            inp, wgt = dev.array(data_inp), dev.array(data_wgt)
            prog = _long_gemm(c, inp, wgt, n)
            report = dev.run(prog)
            out.append(inp.read(np.int8))
            assert report.counters["gemm_counter"] == n
        assert np.array_equal(out[0], out[1]), f"{n} iterations: RTL result differs from fsim"
        busy[n] = report.modules["compute"].busy
        k = next(i for i, x in enumerate(decode(prog.insns, c)) if x.opcode == Op.GEMM)
        length[n] = next(e - s for j, _, s, e in report.trace if j == k)
        assert report.rtl_counters["gemm_iters"] == n
    assert (busy[1024] - busy[256]) / (1024 - 256) == 1.0, busy
    assert length[1024] - length[256] == 1024 - 256, length
    assert length[256] < 256 + 16, f"GEMM of 256 iterations took {length[256]} cycles"
