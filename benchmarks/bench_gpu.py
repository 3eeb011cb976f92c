"""Benchmark: the cuda target against cuBLAS and cuDNN (through torch, TF32 off), measured in the same run.

* fp32 matmul N x N x N (N = 1024, 2048, 4096 by default; ``--sizes 1024 8192``) with
  ``schedules.schedule_matmul`` against ``torch.matmul`` (cuBLAS SGEMM): GFLOP/s and the ratio.
  Issue 15's floor: 4096³ at least 50% of cuBLAS.
* ResNet-18 conv layers C2–C12 (batch 1, NCHW, fp32) with ``schedules.schedule_conv2d_nchw``
  against ``torch.nn.functional.conv2d`` (cuDNN): per layer and the geometric mean of the
  ratios (floor: 50%).

Both sides are timed with CUDA events on the same GPU, after a warm-up; every vdla result is
checked against torch's. The GPU's model is printed first. Without a GPU (or without torch)
the script says so and exits 0; ``--build-only`` builds every kernel and assembles its PTX with
ptxas for the GPU architecture given (``--arch sm_90``), which needs no GPU.
Run ``python benchmarks/bench_gpu.py`` (``--sizes 1024 4096 --layers C2 C9 --repeat 20 --json``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any

import numpy as np

from vdla.compiler import build, te, topi
from vdla.compiler.targets.cuda import runtime, schedules
from vdla.compiler.targets.cuda.ptxas import assemble, find_ptxas
from vdla.compiler.targets.vdla.resnet import RESNET18

LAYERS = {layer.name: layer for layer in RESNET18[1:]}  # C2..C12


def matmul_tiles(n: int) -> schedules.MatmulTiles:
    """Bigger tiles for bigger matrices (more reuse per shared-memory load), 256 threads either way."""
    if n >= 2048 and n % 128 == 0:
        return schedules.MatmulTiles(bm=128, bn=128, bk=8, tm=8, tn=8, vec=4)
    return schedules.MatmulTiles(bm=64, bn=64, bk=16, tm=4, tn=4, vec=4)


def build_matmul(n: int, arch: str) -> Any:
    A, B, C = schedules.matmul(n, n, n)
    return build(schedules.schedule_matmul(C, matmul_tiles(n)), [A, B, C], target=f"cuda -arch={arch}", name=f"mm{n}")


def build_conv(name: str, arch: str) -> Any:
    layer = LAYERS[name]
    x = te.placeholder((1, layer.ic, layer.size, layer.size), name="x")
    w = te.placeholder((layer.oc, layer.ic, layer.k, layer.k), name="w")
    y = topi.conv2d_nchw(x, w, layer.stride, layer.pad)
    return build(schedules.schedule_conv2d_nchw(y), [x, w, y], target=f"cuda -arch={arch}", name=name)


def torch_time(torch: Any, fn: Any, repeat: int) -> float:
    fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / 1e3 / repeat


def bench_matmul(torch: Any, n: int, arch: str, repeat: int) -> dict[str, Any]:
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal((n, n), np.float32), rng.standard_normal((n, n), np.float32)
    t0 = time.perf_counter()
    f = build_matmul(n, arch)
    compile_s = time.perf_counter() - t0
    da, db, dc = runtime.to_device(a), runtime.to_device(b), runtime.empty((n, n), "float32")
    f(da, db, dc)
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    want = torch.matmul(ta, tb).cpu().numpy()
    err = float(np.abs(dc.numpy() - want).max() / np.abs(want).max())
    t_vdla = f.time_evaluator(number=repeat)(da, db, dc)
    t_torch = torch_time(torch, lambda: torch.matmul(ta, tb), repeat)
    flop = 2.0 * n**3
    return {"bench": f"matmul {n}", "vdla_gflops": flop / t_vdla / 1e9, "cublas_gflops": flop / t_torch / 1e9,
            "ratio": t_torch / t_vdla, "rel_err": err, "compile_s": compile_s}  # fmt: skip


def bench_conv(torch: Any, name: str, arch: str, repeat: int) -> dict[str, Any]:
    layer = LAYERS[name]
    rng = np.random.default_rng(int(name[1:]))
    x = rng.standard_normal((1, layer.ic, layer.size, layer.size), np.float32)
    w = rng.standard_normal((layer.oc, layer.ic, layer.k, layer.k), np.float32) / math.sqrt(layer.ic * layer.k**2)
    t0 = time.perf_counter()
    f = build_conv(name, arch)
    compile_s = time.perf_counter() - t0
    oh = layer.out_size
    dx, dw, dy = runtime.to_device(x), runtime.to_device(w), runtime.empty((1, layer.oc, oh, oh), "float32")
    f(dx, dw, dy)
    tx, tw = torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda()
    conv = torch.nn.functional.conv2d

    def run() -> Any:
        return conv(tx, tw, stride=layer.stride, padding=layer.pad)

    want = run().cpu().numpy()
    err = float(np.abs(dy.numpy() - want).max() / max(np.abs(want).max(), 1e-6))
    t_vdla = f.time_evaluator(number=repeat)(dx, dw, dy)
    t_torch = torch_time(torch, run, repeat)
    flop = 2.0 * layer.macs()
    return {"bench": f"conv {name}", "vdla_gflops": flop / t_vdla / 1e9, "cudnn_gflops": flop / t_torch / 1e9,
            "ratio": t_torch / t_vdla, "rel_err": err, "compile_s": compile_s}  # fmt: skip


def build_only(args: argparse.Namespace) -> int:
    if find_ptxas() is None:
        print("bench_gpu --build-only: ptxas not found (pip install nvidia-cuda-nvcc)")
        return 1
    for what, make in [(f"matmul {n}", lambda n=n: build_matmul(n, args.arch)) for n in args.sizes] + [
        (f"conv {c}", lambda c=c: build_conv(c, args.arch)) for c in args.layers
    ]:
        t0 = time.perf_counter()
        f = make()
        rep = assemble(f.ptx, args.arch).report
        regs = [ln.split("Used ")[1].split(",")[0] for ln in rep.splitlines() if "Used " in ln]
        k = f.kernels[0]
        print(f"{what:<14} {time.perf_counter() - t0:5.2f} s  grid {tuple(int(str(g)) for g in k.grid)} "
              f"block {k.block}  shared {k.shared_bytes} B  {', '.join(regs)}  ptxas {args.arch} ok")  # fmt: skip
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1024, 2048, 4096])
    ap.add_argument("--layers", nargs="*", default=list(LAYERS))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--build-only", action="store_true", help="build and ptxas-check every kernel (no GPU needed)")
    ap.add_argument("--arch", default="sm_90", help="GPU architecture for --build-only")
    args = ap.parse_args()
    if args.build_only:
        return build_only(args)
    if runtime.device_count() == 0:
        print("bench_gpu: skipped: no CUDA device on this machine (no NVIDIA driver or GPU)")
        return 0
    try:
        import torch
    except ImportError:
        print("bench_gpu: skipped: torch is not installed (the cuBLAS/cuDNN baseline)")
        return 0
    if not torch.cuda.is_available():
        print("bench_gpu: skipped: torch sees no CUDA device")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = runtime.get_device(0)
    arch = dev.arch if dev.arch in ("sm_80", "sm_86", "sm_89", "sm_90") else "sm_80"
    print(f"GPU: {dev.name} ({dev.arch}; PTX for {arch}); torch {torch.__version__}, TF32 off")
    rows = [bench_matmul(torch, n, arch, args.repeat) for n in args.sizes]
    rows += [bench_conv(torch, c, arch, args.repeat) for c in args.layers]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'benchmark':<14} {'vdla GFLOP/s':>13} {'torch GFLOP/s':>14} {'ratio':>7} {'rel err':>9} {'compile':>8}")
    for r in rows:
        base = r.get("cublas_gflops", r.get("cudnn_gflops"))
        print(f"{r['bench']:<14} {r['vdla_gflops']:13.0f} {base:14.0f} {r['ratio']:7.2f} {r['rel_err']:9.1e} "
              f"{r['compile_s']:7.2f}s")  # fmt: skip
    convs = [r["ratio"] for r in rows if r["bench"].startswith("conv")]
    if convs:
        gm = math.exp(sum(math.log(x) for x in convs) / len(convs))
        print(f"conv geometric mean vs cuDNN: {gm:.2f} (floor 0.50: {'met' if gm >= 0.5 else 'NOT met'})")
    for r in rows:
        if r["bench"] == "matmul 4096":
            print(f"matmul 4096 vs cuBLAS: {r['ratio']:.2f} (floor 0.50: {'met' if r['ratio'] >= 0.5 else 'NOT met'})")
    print("ResNet-18 end to end on cuda: not measured (the graph executor has no cuda target yet)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
