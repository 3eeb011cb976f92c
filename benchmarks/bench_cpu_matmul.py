"""Benchmark: vdla's scheduled float32 matmul (llvm target) against numpy's BLAS, same run.

For N in 512/1024/2048 it reports GFLOP/s of both, with 1 thread and with all threads,
their ratio, and the fraction of this CPU's peak computed as lanes x 2 x FMA pipes x
measured clock (``bench_cpu_peak.py``); an inline-asm probe of independent vector FMAs
is reported beside it.  Run: ``python benchmarks/bench_cpu_matmul.py``
(``--sizes 1024 --repeat 10 --json`` to change).  The floor of issue 3 is a ratio of at
least 0.5 at 1024³.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import time
from collections.abc import Callable, Iterator

import llvmlite.binding as llvm
import numpy as np

from vdla.compiler import build, get_num_threads, set_num_threads
from vdla.compiler.targets.llvm import jit
from vdla.compiler.targets.llvm.schedules import MatmulConfig, schedule_matmul_cpu
from vdla.compiler.topi.matmul import matmul

# ---------------------------------------------------------------------------- numpy BLAS threads


def _openblas_setter() -> Callable[[int], None] | None:
    try:
        from threadpoolctl import threadpool_limits  # type: ignore[import-not-found]

        def set_with_tpc(n: int) -> None:
            threadpool_limits(n, user_api="blas")

        return set_with_tpc
    except ImportError:
        pass
    np.ones((8, 8), np.float32) @ np.ones((8, 8), np.float32)  # numpy loads OpenBLAS lazily
    with open("/proc/self/maps") as fh:
        libs = sorted({ln.split()[-1] for ln in fh if "openblas" in ln.lower() and ln.rstrip().endswith(".so")})
    for path in libs:
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", "openblas_set_num_threads"):
            fn = getattr(lib, name, None)
            if fn is not None:
                return lambda n, fn=fn: fn(int(n))
    return None


_SET_BLAS = _openblas_setter()


@contextlib.contextmanager
def threads(n: int) -> Iterator[None]:
    """Run vdla kernels and numpy's BLAS with ``n`` threads."""
    old = get_num_threads()
    set_num_threads(n)
    if _SET_BLAS is not None:
        _SET_BLAS(n)
    try:
        yield
    finally:
        set_num_threads(old)
        if _SET_BLAS is not None:
            _SET_BLAS(os.cpu_count() or 1)


def best_time(fn: Callable[[], object], repeat: int) -> float:
    fn()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts)


# ---------------------------------------------------------------------------- FMA peak probe


def nominal_peak() -> tuple[float, str]:
    """Peak from vector width x 2 (FMA) x 2 FMA pipes x nominal clock (per core), with its basis."""
    mhz = 0.0
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as fh:
        for ln in fh:
            if ln.startswith("cpu MHz"):
                mhz = float(ln.split(":")[1])
                break
    lanes = 16 if "+avx512f" in jit.host_info()["features"] else 8
    return lanes * 2 * 2 * mhz / 1e3, f"{lanes} fp32 lanes x 2 (FMA) x 2 pipes x {mhz:.0f} MHz nominal"


# ---------------------------------------------------------------------------- the benchmark


def run(sizes: list[int], repeat: int, cfg: MatmulConfig) -> dict[str, object]:
    ncpu = os.cpu_count() or 1
    info = jit.host_info()
    from bench_cpu_peak import computed_peak, fma_peak

    probe1 = fma_peak(1)
    probe_all = fma_peak(ncpu)
    nom, basis = nominal_peak()

    peak1, _, peak_basis = computed_peak(1)
    peak_all = computed_peak(ncpu)[0]
    rows = []
    for n in sizes:
        t = time.perf_counter()
        A, B, C = matmul(n, n, n)
        s = schedule_matmul_cpu(C, cfg)
        f = build(s, [A, B, C])
        compile_s = time.perf_counter() - t
        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        c = np.zeros((n, n), np.float32)
        f(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-2 * np.sqrt(n))
        flop = 2.0 * n**3
        for nt in sorted({1, ncpu}):
            with threads(nt):
                t_v = best_time(lambda: f(a, b, c), repeat)  # noqa: B023
                t_np = best_time(lambda: np.matmul(a, b, out=c), repeat)  # noqa: B023
            gv, gn = flop / t_v / 1e9, flop / t_np / 1e9
            peak = peak1 if nt == 1 else peak_all
            rows.append(
                {
                    "n": n,
                    "threads": nt,
                    "vdla_gflops": round(gv, 1),
                    "numpy_gflops": round(gn, 1),
                    "ratio": round(gv / gn, 2),
                    "vdla_of_peak": round(gv / peak, 2),
                    "compile_s": round(compile_s, 3),
                }
            )
    return {
        "cpu": info["cpu"],
        "features_avx512": "+avx512f" in info["features"],
        "cores": ncpu,
        "peak_gflops_1thread": round(peak1, 1),
        "peak_gflops_all": round(peak_all, 1),
        "peak_basis": peak_basis,
        "fma_probe_gflops_1thread": round(probe1, 1),
        "fma_probe_gflops_all": round(probe_all, 1),
        "nominal_peak_gflops_per_core": round(nom, 1),
        "nominal_basis": basis,
        "blas_threads_controlled": _SET_BLAS is not None,
        "config": cfg.__dict__,
        "rows": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[512, 1024, 2048])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--mr", type=int, default=MatmulConfig.mr)
    ap.add_argument("--kc", type=int, default=MatmulConfig.kc)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args()
    res = run(args.sizes, args.repeat, MatmulConfig(mr=args.mr, kc=args.kc))
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(f"CPU {res['cpu']} ({res['cores']} cores), llvm {'.'.join(map(str, llvm.llvm_version_info))}")
    print(
        f"peak: {res['peak_gflops_1thread']} GFLOP/s on 1 thread, {res['peak_gflops_all']} on "
        f"{res['cores']} ({res['peak_basis']}); FMA probe {res['fma_probe_gflops_1thread']} / "
        f"{res['fma_probe_gflops_all']}; nominal {res['nominal_peak_gflops_per_core']} per core ({res['nominal_basis']})"
    )
    if not res["blas_threads_controlled"]:
        print("warning: could not control numpy's BLAS threads; its 1-thread rows use all threads")
    hdr = f"{'N':>5} {'thr':>3} {'vdla GF/s':>10} {'numpy GF/s':>11} {'ratio':>6} {'of peak':>8} {'compile s':>9}"
    print(hdr)
    print("-" * len(hdr))
    for r in res["rows"]:  # type: ignore[attr-defined]
        print(
            f"{r['n']:>5} {r['threads']:>3} {r['vdla_gflops']:>10.1f} {r['numpy_gflops']:>11.1f} "
            f"{r['ratio']:>6.2f} {r['vdla_of_peak']:>8.0%} {r['compile_s']:>9.3f}"
        )


if __name__ == "__main__":
    main()
