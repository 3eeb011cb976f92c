"""Benchmark: the cuda target against cuBLAS and cuDNN (through torch, TF32 off), measured in the same run.

* fp32 matmul N x N x N (N = 1024, 2048, 4096 by default; ``--sizes 1024 8192``) with
  ``schedules.schedule_matmul`` against ``torch.matmul`` (cuBLAS SGEMM): GFLOP/s and the ratio.
  Issue 15's floor: 4096³ at least 50% of cuBLAS.
* ResNet-18 conv layers C2–C12 (batch 1, NCHW, fp32) with ``schedules.schedule_conv2d_nchw``
  against ``torch.nn.functional.conv2d`` (cuDNN): per layer and the geometric mean of the
  ratios (floor: 50%).
* ResNet-18 224x224 end to end: the cuda graph executor (values kept on the GPU, flatten on
  the host) against the same graph run as torch eager calls with the same weights (floor:
  at most 2x torch's latency).

Both sides are timed with CUDA events on the same GPU, after a warm-up, as the fastest of five
rounds of at least 50 ms each (short kernels otherwise time the GPU's clocks rising from idle);
every vdla result is checked against torch's. The GPU's model is printed first. Without a GPU
(or without torch) the script says so and exits 0; ``--build-only`` builds every kernel and assembles its PTX with
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
from vdla.compiler.topi.workloads import RESNET18

LAYERS = {layer.name: layer for layer in RESNET18[1:]}  # C2..C12


def matmul_tiles(n: int) -> schedules.MatmulTiles:
    """Bigger tiles for bigger matrices (more reuse per shared-memory load), 256 threads either way."""
    if n >= 2048 and n % 128 == 0:
        return schedules.MatmulTiles(bm=128, bn=128, bk=8, tm=8, tn=8, vec=4, vt=2)
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


#: Each side's time: the fastest of ROUNDS rounds, each of at least MIN_ROUND_MS (a short kernel
#: then runs thousands of times, after the GPU's clocks have risen from idle).
ROUNDS, MIN_ROUND_MS = 5, 50.0


def fastest_round(seconds_per_call: Any, repeat: int) -> float:
    """The fastest of ROUNDS rounds of ``seconds_per_call(n)`` (seconds per call over ``n`` calls),
    ``n`` starting at ``repeat`` and doubled until a round lasts MIN_ROUND_MS (as vdla's
    ``time_evaluator(number, repeat, min_repeat_ms)`` times its side)."""
    best, n = math.inf, repeat
    for _ in range(ROUNDS):
        while (t := seconds_per_call(n)) * n * 1e3 < MIN_ROUND_MS and n < 1 << 16:
            n *= 2
        best = min(best, t)
    return best


def torch_time(torch: Any, fn: Any, repeat: int) -> float:
    """Seconds per ``fn()`` by CUDA events, after a warm-up call (:func:`fastest_round`)."""
    fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def seconds_per_call(n: int) -> float:
        start.record()
        for _ in range(n):
            fn()
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) / 1e3 / n

    return fastest_round(seconds_per_call, repeat)


def vdla_time(f: Any, args: tuple, repeat: int) -> float:
    """Seconds per call of the built function `f` (its kernels, by CUDA events), as :func:`torch_time` times."""
    return min(f.time_evaluator(number=repeat, repeat=ROUNDS, min_repeat_ms=MIN_ROUND_MS)(*args).results)


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
    t_vdla = vdla_time(f, (da, db, dc), repeat)
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
    t_vdla = vdla_time(f, (dx, dw, dy), repeat)
    t_torch = torch_time(torch, run, repeat)
    flop = 2.0 * layer.macs()
    return {"bench": f"conv {name}", "vdla_gflops": flop / t_vdla / 1e9, "cudnn_gflops": flop / t_torch / 1e9,
            "ratio": t_torch / t_vdla, "rel_err": err, "compile_s": compile_s}  # fmt: skip


def torch_graph(torch: Any, graph: Any, consts: dict[str, Any]) -> Any:
    """The float graph as torch eager calls (the same weights): ``run(x) -> output``."""
    F = torch.nn.functional
    order = graph.topo_order()

    def run(x: Any) -> Any:
        env = dict(consts)
        env[next(iter(graph.inputs))] = x
        for n in order:
            a = [env[i] for i in n.inputs]
            at = n.attrs
            if n.op == "conv2d":
                pt, pl, pb, pr = at["padding"]
                if (pt, pl) != (pb, pr):
                    a[0], pt, pl = F.pad(a[0], (pl, pr, pt, pb)), 0, 0
                y = F.conv2d(a[0], a[1], a[2] if len(a) > 2 else None, tuple(at["strides"]), (pt, pl),
                             tuple(at["dilation"]), at.get("groups", 1))  # fmt: skip
            elif n.op == "relu":
                y = F.relu(a[0])
            elif n.op == "add":
                y = a[0] + a[1]
            elif n.op == "max_pool2d":
                y = F.max_pool2d(a[0], tuple(at["kernel"]), tuple(at["strides"]), tuple(at["padding"][:2]))
            elif n.op == "global_avg_pool2d":
                y = a[0].mean(dim=(2, 3), keepdim=True)
            elif n.op == "flatten":
                y = torch.flatten(a[0], int(at.get("axis", 1)))
            elif n.op == "dense":
                y = F.linear(a[0], a[1], a[2] if len(a) > 2 else None)
            else:
                raise NotImplementedError(f"torch_graph: no torch call for {n.op}")
            env[n.name] = y
        return env[graph.outputs[0]]

    return run


def bench_resnet18(torch: Any, arch: str, repeat: int) -> dict[str, Any]:
    """ResNet-18 (224x224, batch 1, fp32) end to end: the cuda graph executor vs torch eager."""
    from vdla.compiler.graph import models
    from vdla.compiler.graph.executor import compile_model
    from vdla.compiler.graph.passes import simplify
    from vdla.compiler.graph.zoo import load_model

    spec = load_model("resnet18")
    g = simplify(spec.graph)
    t0 = time.perf_counter()
    m = compile_model(g, target=f"cuda -arch={arch}")
    compile_s = time.perf_counter() - t0
    x = models.sample_input(g, 0)
    xin = next(iter(x.values()))
    dx = runtime.to_device(xin)
    name = next(iter(x))
    out = m.run({name: dx}).outputs[0]
    consts = {k: torch.from_numpy(np.ascontiguousarray(v)).cuda() for k, v in g.consts.items()}
    tg = torch_graph(torch, g, consts)
    tx = torch.from_numpy(xin).cuda()
    with torch.no_grad():
        want = tg(tx).cpu().numpy()
        t_torch = torch_time(torch, lambda: tg(tx), repeat)
    err = float(np.abs(out - want).max() / max(np.abs(want).max(), 1e-6))
    dev = runtime.get_device(0)
    t_vdla = fastest_round(lambda n: dev.time(lambda: m.run({name: dx}, sync=False), n), repeat)
    return {"bench": "resnet18 e2e", "vdla_ms": t_vdla * 1e3, "torch_ms": t_torch * 1e3, "ratio": t_torch / t_vdla,
            "rel_err": err, "compile_s": compile_s,
            "numpy_nodes": [n for n, k in m.kernels.items() if k.target != "cuda"]}  # fmt: skip


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
    if args.e2e:
        from vdla.compiler.graph.executor import compile_model
        from vdla.compiler.graph.passes import simplify
        from vdla.compiler.graph.zoo import load_model

        m = compile_model(simplify(load_model("resnet18").graph), target=f"cuda -arch={args.arch}")
        ptx = {id(k.kernel.func): k.kernel.func.ptx for k in m.kernels.values() if k.target == "cuda"}
        for text in ptx.values():
            assemble(text, args.arch)
        print(f"resnet18 e2e   {m.info['compile_s']:5.2f} s  "
              f"{sum(k.target == 'cuda' for k in m.kernels.values())} of {len(m.kernels)} "
              f"nodes on the GPU, {len(ptx)} functions, ptxas {args.arch} ok; not on the GPU: "
              f"{[n for n, k in m.kernels.items() if k.target != 'cuda']}")  # fmt: skip
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1024, 2048, 4096])
    ap.add_argument("--layers", nargs="*", default=list(LAYERS))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--no-e2e", dest="e2e", action="store_false", help="skip ResNet-18 end to end")
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
    e2e = bench_resnet18(torch, arch, args.repeat) if args.e2e else None
    if args.json:
        print(json.dumps(rows + ([e2e] if e2e else []), indent=1))
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
    if e2e:
        print(f"ResNet-18 end to end: vdla {e2e['vdla_ms']:.2f} ms, torch eager {e2e['torch_ms']:.2f} ms, "
              f"latency ratio {1 / e2e['ratio']:.2f}x torch (floor 2.00x: {'met' if 1 / e2e['ratio'] <= 2 else 'NOT met'}), "
              f"rel err {e2e['rel_err']:.1e}, numpy nodes {e2e['numpy_nodes']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
