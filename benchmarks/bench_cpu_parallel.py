"""Benchmark: the cost of one parallel region on the llvm target (the JIT runtime's thread pool).

Two kernels whose parallel loops do almost nothing (one int32 store per iteration):

* ``regions``: an outer serial loop of ``R`` iterations around a parallel loop of ``threads``
  iterations, so one call launches ``R`` regions back to back from compiled code; the time per
  region is the pool's own overhead (hand-over, the workers' chunks, the join);
* ``call``: one region per Python call, the way a single-kernel operator is timed (the ctypes
  call, argument checks and the region);
* ``work``: as ``regions`` but each iteration computes a 4096-term dot product (a few us), so
  the workers must take part: the speedup of ``threads`` threads over one is the hand-over's
  share of a region that is worth splitting.

Each is timed with 1 thread (the region runs in the caller) and with every core, on the
runtime this process loaded (``jit.parallel_backend()``: the native pool, or the Python
fallback) and, in a child process started with ``VDLA_NATIVE_POOL=0``, on the Python
fallback, so the two are compared in the same run. The load average is printed: the
machine may be shared. Run ``python benchmarks/bench_cpu_parallel.py`` (``--regions 2000
--repeat 20 --json``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cpu_matmul import best_time, threads  # noqa: E402

from vdla.compiler import build, te  # noqa: E402
from vdla.compiler.targets.llvm import jit  # noqa: E402


def _kernel(rows: int, width: int, name: str) -> object:
    a = te.compute((rows, width), lambda r, i: (r * width + i).astype("int32"), name="A")
    s = te.create_schedule(a.op)
    s[a].parallel(a.op.axis[1])
    return build(s, [a], name=name)


def _work_kernel(rows: int, width: int, terms: int) -> object:
    v = te.placeholder((terms,), name="v")
    k = te.reduce_axis((0, terms), name="k")
    a = te.compute((rows, width), lambda r, i: te.sum(v[k] * (r + i + k).astype("float32"), axis=k), name="A")
    s = te.create_schedule(a.op)
    s[a].parallel(a.op.axis[1])
    return build(s, [v, a], name="par_work")


def measure(regions: int, repeat: int) -> dict[str, object]:
    ncpu = os.cpu_count() or 1
    f_many = _kernel(regions, ncpu, "par_regions")
    f_one = _kernel(1, ncpu, "par_call")
    terms, work_regions = 4096, max(1, regions // 10)
    f_work = _work_kernel(work_regions, ncpu, terms)
    out: dict[str, object] = {"backend": jit.parallel_backend(), "rows": []}
    a_many = np.zeros((regions, ncpu), np.int32)
    a_one = np.zeros((1, ncpu), np.int32)
    v = np.ones(terms, np.float32)
    a_work = np.zeros((work_regions, ncpu), np.float32)
    t_work_1 = 0.0
    for nt in sorted({1, ncpu}):
        with threads(nt):
            t_many = best_time(lambda: f_many(a_many), repeat)
            t_one = best_time(lambda: f_one(a_one), repeat * 50)
            t_work = best_time(lambda: f_work(v, a_work), repeat)
        assert (a_many.ravel() == np.arange(a_many.size)).all()
        t_work_1 = t_work_1 or t_work
        out["rows"].append({"threads": nt, "us_per_region": round(t_many / regions * 1e6, 3),  # type: ignore[union-attr]
                            "us_per_call": round(t_one * 1e6, 2),
                            "work_us_per_region": round(t_work / work_regions * 1e6, 2),
                            "work_speedup": round(t_work_1 / t_work, 2)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--regions", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args, _ = ap.parse_known_args()  # nox -s bench passes its posargs to every script
    if args.child:
        print(json.dumps(measure(args.regions, args.repeat)))
        return
    load = os.getloadavg()
    t0 = time.perf_counter()
    here = measure(args.regions, args.repeat)
    runs = [here]
    if here["backend"] != "python":
        env = dict(os.environ, VDLA_NATIVE_POOL="0")
        child = subprocess.run([sys.executable, __file__, "--child", "--regions", str(args.regions),
                                "--repeat", str(args.repeat)], env=env, capture_output=True, text=True, check=True)
        runs.append(json.loads(child.stdout.strip().splitlines()[-1]))
    res = {"load_average": [round(x, 2) for x in load], "cores": os.cpu_count(), "runs": runs,
           "seconds": round(time.perf_counter() - t0, 1)}
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(f"{res['cores']} cores, load average before the run {res['load_average']}")
    print(f"{'backend':>8} {'threads':>7} {'us/region':>10} {'us/call':>8} {'work us/region':>15} {'speedup':>8}")
    for run in runs:
        for r in run["rows"]:  # type: ignore[union-attr]
            print(f"{run['backend']:>8} {r['threads']:>7} {r['us_per_region']:>10.3f} {r['us_per_call']:>8.2f} "
                  f"{r['work_us_per_region']:>15.2f} {r['work_speedup']:>7.2f}x")


if __name__ == "__main__":
    main()
