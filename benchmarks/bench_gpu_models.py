"""Benchmark: torchvision's classifiers as PyTorch's exporter writes them, on vdla's cuda target
against torch eager (and torch.compile's reduce-overhead mode) on the same GPU, in one run.

Each model is built by torchvision (random weights, ``eval()``), exported with
``torch.onnx.export(model, (x,), dynamo=True, opset_version=20)`` (a batch-1 224x224 input,
299x299 for Inception-v3), imported by vdla and compiled for ``cuda -arch=<the GPU's>``. The
table gives per model: the nodes of the plan and how many are left on the host (the op-coverage
floor: 0), vdla's latency (a whole-GPU plan replays as one CUDA graph), torch eager's, their
ratio, optionally torch.compile's (``--compile``: minutes per model), and the largest error
of vdla's output relative to torch's largest logit (floor 1e-4). Latencies are the fastest of
five rounds of at least 50 ms each, timed with CUDA events after a warm-up (as bench_gpu.py),
input already on the GPU, output copied back for vdla (its run returns host arrays).

``--build-only`` needs no GPU (torch's CPU build is enough): it exports and compiles every model
for llvm and for cuda (PTX assembled by ptxas for ``--arch``) and prints the host nodes of each,
the check the op-coverage issue asks for. ``--out FILE`` writes the table as Markdown
(default ``docs/bench_gpu_models.md`` for a GPU run). Without torch/torchvision, or without a GPU
for the timing run, the script says so and exits 0.

    python benchmarks/bench_gpu_models.py                       # every model, about 4 minutes on an H100
    python benchmarks/bench_gpu_models.py --models resnet18 mobilenet_v3_small --compile
    python benchmarks/bench_gpu_models.py --build-only --arch sm_90
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

#: torchvision name -> input size (the classifiers of the op-coverage issue)
MODELS = {
    "resnet18": 224, "resnet50": 224, "resnext50_32x4d": 224, "mobilenet_v2": 224, "mobilenet_v3_small": 224,
    "efficientnet_b0": 224, "mnasnet0_5": 224, "shufflenet_v2_x0_5": 224, "squeezenet1_1": 224,
    "googlenet": 224, "inception_v3": 299, "densenet121": 224, "regnet_y_400mf": 224, "convnext_tiny": 224,
    "swin_t": 224,
}  # fmt: skip

MIN_ROUND_MS, ROUNDS = 50.0, 5


def export(torch: Any, torchvision: Any, name: str, folder: Path) -> tuple[Path, np.ndarray, Any]:
    """``name`` exported as torch.onnx writes it today (dynamo, opset 20), its input and the model."""
    size = MODELS[name]
    kwargs = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
    model = getattr(torchvision.models, name)(weights=None, **kwargs).eval()
    x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(0))
    path = folder / f"{name}.onnx"
    with torch.no_grad():
        torch.onnx.export(model, (x,), str(path), dynamo=True, opset_version=20, verbose=False)
    return path, x.numpy(), model


def plan_counts(m: Any) -> dict[str, Any]:
    host = m.host_steps()
    return {"nodes": len(m.kernels), "host": len(host),
            "host_nodes": [f"{n} ({m.kernels[n].host_reason})" for n in host]}


def fastest(timer: Any) -> float:
    """Seconds per call: calls per round doubled until a round lasts MIN_ROUND_MS, fastest of ROUNDS."""
    n = 1
    while timer(n) * 1e3 < MIN_ROUND_MS and n < 1 << 14:
        n *= 2
    return min(timer(n) for _ in range(ROUNDS)) / n


def cuda_timer(torch: Any, fn: Any) -> Any:
    def timer(n: int) -> float:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(n):
            fn()
        stop.record()
        torch.cuda.synchronize()
        return start.elapsed_time(stop) / 1e3
    fn()
    return timer


def build_only(args: argparse.Namespace, torch: Any, torchvision: Any) -> int:
    from vdla.compiler.graph.executor import compile_model
    from vdla.compiler.graph.onnx_import import from_onnx
    from vdla.compiler.targets.cuda.ptxas import assemble, find_ptxas

    rows, failed = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            t0 = time.perf_counter()
            path, _, _ = export(torch, torchvision, name, Path(tmp))
            t1 = time.perf_counter()
            g = from_onnx(path)
            row: dict[str, Any] = {"model": name, "export_s": round(t1 - t0, 1)}
            for target in ("llvm", f"cuda -arch={args.arch}"):
                t2 = time.perf_counter()
                m = compile_model(g, target=target)
                kind = target.split()[0]
                row[kind] = plan_counts(m)
                row[f"{kind}_compile_s"] = round(time.perf_counter() - t2, 1)
                if kind == "cuda" and find_ptxas() is not None:
                    for k in m.kernels.values():
                        if k.target == "cuda":
                            assemble(k.kernel.func.ptx, args.arch)
            failed += bool(row["llvm"]["host"] or row["cuda"]["host"])
            rows.append(row)
            print(f"{name:20s} {row['llvm']['nodes']:4d} nodes  host: llvm {row['llvm']['host']}, cuda "
                  f"{row['cuda']['host']}  (export {row['export_s']} s, llvm {row['llvm_compile_s']} s, cuda "
                  f"{row['cuda_compile_s']} s)", flush=True)
            for kind in ("llvm", "cuda"):
                for h in row[kind]["host_nodes"]:
                    print(f"    {kind} host: {h}")
    if args.json:
        print(json.dumps(rows, indent=2))
    if args.out:
        lines = ["| model | nodes | host (llvm) | host (cuda) |", "|---|---:|---:|---:|"]
        lines += [f"| {r['model']} | {r['llvm']['nodes']} | {r['llvm']['host']} | {r['cuda']['host']} |" for r in rows]
        Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"{len(rows) - failed} of {len(rows)} models with every node compiled for llvm and cuda")
    return 1 if failed else 0


def bench_model(torch: Any, torchvision: Any, name: str, arch: str, folder: Path, with_compile: bool) -> dict[str, Any]:
    """One model: export, compile for the GPU, check against torch, time vdla, eager (and compiled)."""
    from vdla.compiler.graph.executor import compile_model
    from vdla.compiler.graph.onnx_import import from_onnx
    from vdla.runtime.cuda_driver import to_device

    path, x, model = export(torch, torchvision, name, folder)
    t0 = time.perf_counter()
    m = compile_model(from_onnx(path), target=f"cuda -arch={arch}")
    row: dict[str, Any] = {"model": name, **plan_counts(m), "compile_s": round(time.perf_counter() - t0, 1)}
    model = model.cuda()  # the exported model itself: the same weights
    tx = torch.from_numpy(x).cuda()
    xd = {next(iter(m.graph.inputs)): to_device(x)}
    with torch.no_grad():
        ref = model(tx).float().cpu().numpy()
        row["eager_ms"] = fastest(cuda_timer(torch, lambda: model(tx))) * 1e3
        if with_compile:
            cm = torch.compile(model, mode="reduce-overhead")
            row["compile_ms"] = fastest(cuda_timer(torch, lambda: cm(tx))) * 1e3
    got = m.run(xd).outputs[0]
    row["rel_err"] = float(np.abs(got - ref).max() / max(float(np.abs(ref).max()), 1e-6))
    row["vdla_ms"] = fastest(cuda_timer(torch, lambda: m.run(xd, sync=False))) * 1e3
    row["ratio"] = row["vdla_ms"] / row["eager_ms"]
    return row


def bench(args: argparse.Namespace, torch: Any, torchvision: Any) -> int:
    from vdla.runtime.cuda_driver import get_device

    dev = get_device(0)
    print(f"GPU: {dev.name} ({dev.arch}); torch {torch.__version__}, TF32 off", flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            row = bench_model(torch, torchvision, name, dev.arch, Path(tmp), args.compile)
            rows.append(row)
            print(f"{name:20s} vdla {row['vdla_ms']:7.3f} ms  eager {row['eager_ms']:7.3f} ms  "
                  f"x{row['ratio']:.2f}  host {row['host']}  err {row['rel_err']:.1e}", flush=True)
    med = statistics.median(r["ratio"] for r in rows)
    print(f"median vdla/eager: {med:.2f}x over {len(rows)} models")
    out = Path(args.out or "docs/bench_gpu_models.md")
    lines = [f"GPU: {dev.name} ({dev.arch}), torch {torch.__version__}, TF32 off, batch 1; "
             f"{time.strftime('%Y-%m-%d')}", "",
             "| model | nodes | host | vdla ms | eager ms | vdla/eager | torch.compile ms | rel. err |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['model']} | {r['nodes']} | {r['host']} | {r['vdla_ms']:.3f} | {r['eager_ms']:.3f} | "
              f"{r['ratio']:.2f} | {r.get('compile_ms', float('nan')):.3f} | {r['rel_err']:.1e} |" for r in rows]
    lines += ["", f"Median vdla/eager: {med:.2f}x."]
    out.write_text("\n".join(lines) + "\n")
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS), metavar="MODEL")
    p.add_argument("--build-only", action="store_true", help="no GPU: export, compile for llvm and cuda, count host nodes")
    p.add_argument("--arch", default="sm_90", help="GPU architecture of --build-only's PTX")
    p.add_argument("--compile", action="store_true", help="also time torch.compile(mode='reduce-overhead')")
    p.add_argument("--out", default=None, help="the table as Markdown (GPU run: docs/bench_gpu_models.md)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        import torch
        import torchvision
    except ImportError as e:
        print(f"bench_gpu_models: needs torch and torchvision ({e}); skipped")
        return 0
    if args.build_only:
        return build_only(args, torch, torchvision)
    if not torch.cuda.is_available():
        print("bench_gpu_models: no GPU; skipped (--build-only checks the plans without one)")
        return 0
    return bench(args, torch, torchvision)


if __name__ == "__main__":
    sys.exit(main())
