"""Benchmark: ResNet-18 conv2d layers C2–C12 (TVM paper, Table 2) on the llvm target vs numpy.

Each layer is declared with ``topi.conv2d_NCHWc`` (16-channel blocks in and out, the
layout TVM's x86 schedules use; inputs are pre-packed, as in the paper's operator
benchmarks) and scheduled with ``schedules.schedule_conv2d_NCHWc``.  numpy's convolution is
measured in the same run: zero padding + im2col + one BLAS matmul (float32), timed as a
whole.  The vdla output is checked against it.

Reported per layer, with 1 thread and with all threads:

* GFLOP/s of vdla and numpy (``2 * OC * IC * KH * KW * OH * OW`` flop) and their ratio;
* the fraction of the CPU's peak reached by vdla, the peak being computed as
  ``fp32 lanes x 2 (an FMA is two flop) x FMA pipes x clock x threads`` (see
  ``bench_cpu_peak.py``: lanes and pipes from the CPU model, the clock measured on one
  thread with chains of dependent register-register adds and imuls, checked against the
  nominal clock);
* compile time (lowering + LLVM O3 + MCJIT) of each layer — issue 3's floor is < 2 s.

Shapes: TVM's VTA ResNet-18 workloads (``vta/tests/python/integration/
test_benchmark_topi_conv2d.py``: ``Workload(1, H, W, IC, OC, K, K, pad, pad, S, S)``).
Run ``python benchmarks/bench_cpu_conv2d.py`` (``--layers C2 C9 --repeat 20 --json``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import llvmlite.binding as llvm
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cpu_matmul import best_time, threads  # noqa: E402
from bench_cpu_peak import computed_peak, measure_clock_ghz  # noqa: E402

from vdla.compiler import build, te, topi  # noqa: E402
from vdla.compiler.targets.llvm import jit, schedules  # noqa: E402
from vdla.compiler.targets.vdla.resnet import RESNET18 as LAYERS  # noqa: E402  (the C1-C12 table)
from vdla.compiler.targets.vdla.resnet import ConvLayer as Layer  # noqa: E402

# ---------------------------------------------------------------------------- numpy reference


def numpy_conv(x: np.ndarray, w2d: np.ndarray, k: int, stride: int, pad: int) -> np.ndarray:
    """NCHW (batch 1) convolution as zero padding + im2col + one BLAS matmul."""
    _, c, h, _ = x.shape
    xp = np.pad(x[0], ((0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - k) // stride + 1
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(1, 2))[:, ::stride, ::stride]
    cols = win.transpose(0, 3, 4, 1, 2).reshape(c * k * k, oh * oh)  # copies: the im2col matrix
    return (w2d @ cols).reshape(1, -1, oh, oh)


# ---------------------------------------------------------------------------- the benchmark


def bench_layer(layer: Layer, repeat: int, thread_counts: list[int], block: int = 16) -> list[dict[str, object]]:
    cb = block if layer.ic % block == 0 else layer.ic
    ob = block
    x = te.placeholder((1, layer.ic // cb, layer.size, layer.size, cb), name="data")
    w = te.placeholder((layer.oc // ob, layer.ic // cb, layer.k, layer.k, cb, ob), name="kernel")
    t0 = time.perf_counter()
    y = topi.conv2d_NCHWc(x, w, layer.stride, layer.pad)
    s = schedules.schedule_conv2d_NCHWc(y)
    f = build(s, [x, w, y], name=f"conv_{layer.name}")
    compile_s = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((1, layer.ic, layer.size, layer.size)).astype(np.float32)
    wn = rng.standard_normal((layer.oc, layer.ic, layer.k, layer.k)).astype(np.float32)
    w2d = np.ascontiguousarray(wn.reshape(layer.oc, -1))
    xa, wa = topi.pack_nchwc(xn, cb), topi.pack_kernel(wn, cb, ob)
    ya = np.zeros([int(d.value) for d in y.shape], np.float32)
    f(xa, wa, ya)
    want = numpy_conv(xn, w2d, layer.k, layer.stride, layer.pad)
    np.testing.assert_allclose(topi.unpack_nchwc(ya), want, rtol=1e-3, atol=1e-3 * np.sqrt(layer.ic * layer.k**2))
    rows = []
    for nt in thread_counts:
        with threads(nt):
            t_v = best_time(lambda: f(xa, wa, ya), repeat)
            t_n = best_time(lambda: numpy_conv(xn, w2d, layer.k, layer.stride, layer.pad), repeat)
        rows.append(
            {
                "layer": layer.name,
                "shape": f"{layer.size}x{layer.size} {layer.ic}->{layer.oc} k{layer.k} s{layer.stride}",
                "threads": nt,
                "vdla_gflops": round((2.0 * layer.macs()) / t_v / 1e9, 1),
                "numpy_gflops": round((2.0 * layer.macs()) / t_n / 1e9, 1),
                "ratio": round(t_n / t_v, 2),
                "vdla_ms": round(t_v * 1e3, 3),
                "compile_s": round(compile_s, 3),
            }
        )
    return rows


def run(names: list[str], repeat: int) -> dict[str, object]:
    ncpu = os.cpu_count() or 1
    counts = sorted({1, ncpu})
    peaks = {nt: computed_peak(nt)[0] for nt in counts}
    basis = computed_peak(1)[2].replace(" x 1 core(s)", " x cores")
    clocks = {nt: measure_clock_ghz(nt) for nt in counts}  # with nt threads busy: shows other load
    rows: list[dict[str, object]] = []
    for layer in LAYERS:
        if layer.name in names:
            for r in bench_layer(layer, repeat, counts):
                r["vdla_of_peak"] = round(float(r["vdla_gflops"]) / peaks[int(r["threads"])], 3)  # type: ignore[arg-type]
                rows.append(r)
    return {
        "cpu": jit.host_info()["cpu"],
        "cores": ncpu,
        "llvm": ".".join(map(str, llvm.llvm_version_info)),
        "peak_basis": basis,
        "clock_ghz": {str(k): round(v, 2) for k, v in clocks.items()},
        "peak_gflops": {str(k): round(v, 1) for k, v in peaks.items()},
        "rows": rows,
        "max_compile_s": max(float(r["compile_s"]) for r in rows) if rows else 0.0,  # type: ignore[arg-type]
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--layers", nargs="+", default=[f"C{k}" for k in range(2, 13)], help="C1 ... C12")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args()
    unknown = set(args.layers) - {layer.name for layer in LAYERS}
    if unknown:
        ap.error(f"unknown layers {sorted(unknown)}; choose from C1 ... C12")
    res = run(args.layers, args.repeat)
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(f"CPU {res['cpu']} ({res['cores']} cores), llvm {res['llvm']}")
    print(f"peak = {res['peak_basis']}")
    for k, g in res["clock_ghz"].items():  # type: ignore[attr-defined]
        print(f"  {k} thread(s): peak {res['peak_gflops'][k]} GFLOP/s; clock seen with {k} busy thread(s) {g} GHz")  # type: ignore[index]
    hdr = (
        f"{'layer':>5} {'shape':>24} {'thr':>3} {'vdla GF/s':>10} {'numpy GF/s':>11} {'ratio':>6} "
        f"{'of peak':>8} {'ms':>8} {'compile s':>9}"
    )
    print(hdr)
    print("-" * len(hdr))
    for r in res["rows"]:  # type: ignore[attr-defined]
        print(
            f"{r['layer']:>5} {r['shape']:>24} {r['threads']:>3} {r['vdla_gflops']:>10.1f} {r['numpy_gflops']:>11.1f} "
            f"{r['ratio']:>6.2f} {r['vdla_of_peak']:>8.0%} {r['vdla_ms']:>8.3f} {r['compile_s']:>9.3f}"
        )
    print(f"max compile time (lowering + LLVM JIT): {res['max_compile_s']:.3f} s (floor: < 2 s)")


if __name__ == "__main__":
    main()
