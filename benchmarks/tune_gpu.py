"""Campaign: AutoTVM on the GPU — tune ResNet-18 C2-C12 and matmul 4096, compare with cuDNN/cuBLAS.

Issue 36's measurement, in one run that fits a time budget (default 8 minutes on a 16-core
machine with one GPU):

1. **tune**: each layer's ``conv2d_nchw.cuda`` task (TVM's conv2d_direct space) and
   ``matmul.cuda`` 4096 with the XGBoost tuner (rank objective, loop-IR + GPU features,
   simulated annealing, the records of the layers tuned before as its transfer-learning base),
   points built in parallel on a local Dask cluster (one worker per core, ptxas proving each)
   and timed on the GPU with CUDA events; the hand-tiled schedule is measured first, so the log's
   best is never worse than today's. ``--curve-layers`` (three by default) are tuned a second time
   with random search for the same number of trials.
2. **re-benchmark** each task's best point and the hand tiles against torch (cuDNN conv2d,
   cuBLAS SGEMM; TF32 off) in the same process, both timed as ``bench_gpu.py`` times (CUDA events,
   fastest of five rounds of at least 50 ms); every result checked against torch's.
3. **report**: per layer GFLOP/s and the ratio to cuDNN, their geometric mean (floor 1.0x, goal
   1.2x), matmul 4096 against cuBLAS (floor 0.8x), and for the curve layers the trials XGBoost and
   random search need to reach 95 % of XGBoost's best (floor: XGBoost in at most a third of
   random's); best-so-far curves plotted with matplotlib (``--plot``), the logs written per task
   (``--log-dir``), and ``--json`` for machines.

The tuning share of the budget (``--budget-s``, less the re-benchmark's estimate) is split over
the tasks (a curve layer's random run counts as one more); ``--trials`` caps each task. Without a
GPU (or without torch, the baseline) the script says so in one line and exits 1; nothing is measured.

    python benchmarks/tune_gpu.py                         # 8 minutes: 11 layers + matmul 4096
    python benchmarks/tune_gpu.py --budget-s 1800 --trials 400 --layers C2 C6 C9 --json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

LAYERS = [f"C{i}" for i in range(2, 13)]
CURVE_LAYERS = ["C2", "C6", "C9"]
#: seconds the re-benchmark of the best points against torch takes (twelve tasks, two vdla sides each)
REBENCH_S = 75.0


def tasks_for(target: str, layers: list[str], matmul: int) -> list[Any]:
    from vdla.compiler.autotvm.task import create
    from vdla.compiler.autotvm.tuning import layer_task

    tasks = [layer_task(name, target) for name in layers]
    if matmul:
        tasks.append(create("matmul.cuda", [matmul, matmul, matmul], target))
    return tasks


def tune_one(task: Any, kind: str, option: Any, log: Path, trials: int, deadline: float, history: list[Any],
             seed: int) -> tuple[Any, list[float]]:
    """Tune ``task`` with ``kind`` (xgb or random) until ``trials`` or ``deadline``; the best-so-far
    GFLOP/s after each trial (the hand point is trial 1)."""
    from vdla.compiler.autotvm import tuner as T
    from vdla.compiler.autotvm.callback import log_to_file
    from vdla.compiler.autotvm.measure import MeasureInput, measure_batch

    tun = (T.XGBTuner(task, plan_size=16, sa_chains=16, sa_steps=10, seed=seed) if kind == "xgb"
           else T.RandomTuner(task, seed=seed))
    if kind == "xgb":
        tun.load_history(history)  # the layers tuned before: XGBoost's base model
    fb = task.fallback()
    inp = MeasureInput(task, task.config_space.get(fb.index))
    res = measure_batch([inp], option)
    log_to_file(log)(tun, [inp], res)
    tun._account(inp, res[0])
    tun.update([inp], res)
    curve = [tun.best_flops / 1e9]
    batch = option.n_parallel or 16
    while len(curve) < trials and time.monotonic() < deadline and tun.has_next():
        before = tun.trials
        tun.tune(min(batch, trials - len(curve)), option,
                 callbacks=[log_to_file(log), lambda t, i, r: history.extend(zip(i, r))])
        for _, score in tun.history[before:]:
            curve.append(max(curve[-1], score / 1e9))
        if tun.trials == before:
            break
    return tun, curve


def rebench(torch: Any, task: Any, log: Path, arch: str, repeat: int = 20) -> dict[str, Any]:
    """The best point of ``log`` and the hand tiles against torch, as bench_gpu times them."""
    from bench_gpu import torch_time, vdla_time

    from vdla.compiler import build
    from vdla.compiler.autotvm.record import apply_history_best
    from vdla.compiler.targets.cuda import runtime

    def built(best: bool) -> Any:
        if best:
            with apply_history_best(log, "cuda"):
                s, tensors = task.func(*task.args)  # outside a template: the log's best record
        else:
            s, tensors = task.instantiate(task.config_space.get(task.fallback().index))
        return build(s, tensors, target=task.target, name=task.name.split(".")[0]), tensors

    rng = np.random.default_rng(0)
    f_best, tensors = built(True)
    f_hand, _ = built(False)
    shapes = [tuple(int(getattr(d, "value", d)) for d in t.shape) for t in tensors]
    ins = [rng.standard_normal(s, np.float32) for s in shapes[:-1]]
    dev = [runtime.to_device(a) for a in ins] + [runtime.empty(shapes[-1], "float32")]
    tin = [torch.from_numpy(a).cuda() for a in ins]
    if task.name == "matmul.cuda":
        def run() -> Any:
            return torch.matmul(tin[0], tin[1])
    else:
        _, _, stride, pad, _ = task.args

        def run() -> Any:
            return torch.nn.functional.conv2d(tin[0], tin[1], stride=stride[0], padding=pad[0])
    want = run().cpu().numpy()
    out = {}
    for name, f in (("best", f_best), ("hand", f_hand)):
        f(*dev)
        err = float(np.abs(dev[-1].numpy() - want).max() / max(np.abs(want).max(), 1e-6))
        if err > 1e-3:
            raise AssertionError(f"{task.name} {task.args}: the {name} point's result differs from torch's ({err:.1e})")
        out[name] = vdla_time(f, tuple(dev), repeat)
    t_torch = torch_time(torch, run, repeat)
    return {"gflops": task.flop / out["best"] / 1e9, "hand_gflops": task.flop / out["hand"] / 1e9,
            "torch_gflops": task.flop / t_torch / 1e9, "ratio": t_torch / out["best"], "hand_ratio": t_torch / out["hand"]}


def to_95(curve: list[float], target: float) -> int | None:
    """The first trial (1-based) whose best-so-far reaches ``target``, or None."""
    return next((k + 1 for k, v in enumerate(curve) if v >= target), None)


def plot(curves: dict[str, dict[str, list[float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(4.5 * len(curves), 3.6), squeeze=False)
    for ax, (layer, cs) in zip(axes[0], curves.items()):
        for kind, ys in cs.items():
            ax.plot(range(1, len(ys) + 1), ys, label={"xgb": "XGBoost (rank)", "random": "random"}[kind])
        ax.set_title(f"ResNet-18 {layer}")
        ax.set_xlabel("trials")
        ax.set_ylabel("best GFLOP/s")
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-s", type=float, default=480.0, help="the whole run's time budget (tuning + re-benchmark)")
    ap.add_argument("--trials", type=int, default=256, help="at most this many trials per task")
    ap.add_argument("--layers", nargs="*", default=LAYERS)
    ap.add_argument("--curve-layers", nargs="*", default=CURVE_LAYERS, help="also tuned with random search")
    ap.add_argument("--matmul", type=int, default=4096, help="matmul size (0: none)")
    ap.add_argument("--scheduler", default=None, help="a Dask scheduler (default: a local cluster, a worker per core)")
    ap.add_argument("--log-dir", default="tune_gpu_logs", help="one log per task and tuner")
    ap.add_argument("--plot", default="docs/tuning/tune_gpu_curves.png", help="the curves' PNG")
    ap.add_argument("--save-best", default=None, metavar="LOG",
                    help="write each task's best record here (vdla/compiler/autotvm/logs/cuda_<arch>.log is applied "
                         "by default on a GPU of that architecture)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    t_start = time.monotonic()

    from vdla import cluster
    from vdla.compiler.autotvm.measure import LocalBuilder, LocalRunner, measure_option
    from vdla.compiler.targets.cuda import runtime
    from vdla.compiler.targets.cuda.target import for_device

    if runtime.device_count() == 0:
        print("tune_gpu: no CUDA device: this campaign measures on a GPU (none found: no NVIDIA driver or GPU); "
              "nothing was tuned")
        return 1
    try:
        import torch
    except ImportError:
        print("tune_gpu: torch is not installed (the cuDNN/cuBLAS baseline); nothing was tuned")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gpu = runtime.get_device(0)
    target = str(for_device("cuda", gpu.arch))
    client = cluster.get_client(args.scheduler)
    nworkers = len(client.scheduler_info().get("workers", {}))
    # builds of more than 15 s are points with huge unrolled bodies (they spill): not worth the wait
    option = measure_option(LocalBuilder(timeout=15), LocalRunner(number=4, repeat=3, min_repeat_ms=1.0, timeout=10),
                            client=client, n_parallel=max(8, nworkers))
    print(f"GPU: {gpu.name} ({gpu.arch}); target {target}; {nworkers} Dask workers; torch {torch.__version__}, TF32 off; "
          f"budget {args.budget_s:.0f} s", file=sys.stderr)

    tasks = tasks_for(target, args.layers, args.matmul)
    names = [*args.layers, *([f"matmul {args.matmul}"] if args.matmul else [])]
    curve_layers = [c for c in args.curve_layers if c in args.layers]
    slots = len(tasks) + len(curve_layers)
    per_slot = max(10.0, (args.budget_s - REBENCH_S - (time.monotonic() - t_start)) / slots)
    logs = Path(args.log_dir)
    logs.mkdir(parents=True, exist_ok=True)
    history: list[Any] = []
    curves: dict[str, dict[str, list[float]]] = {}
    rows = []
    for name, task in zip(names, tasks):
        log = logs / f"{name.replace(' ', '_')}_xgb.log"
        tun, curve = tune_one(task, "xgb", option, log, args.trials, time.monotonic() + per_slot, history, args.seed)
        row = {"task": name, "points": len(task.config_space), "trials": tun.trials, "errors": tun.errors, "log": str(log)}
        if name in curve_layers:
            rlog = logs / f"{name}_random.log"
            _, rcurve = tune_one(task, "random", option, rlog, len(curve), time.monotonic() + per_slot, [], args.seed)
            curves[name] = {"xgb": curve, "random": rcurve}
            target95 = 0.95 * curve[-1]
            row["xgb_to_95"], row["random_to_95"] = to_95(curve, target95), to_95(rcurve, target95)
        print(f"tuned {name}: {tun.trials} trials, {tun.errors} errors, best {tun.best_flops / 1e9:.0f} GFLOP/s",
              file=sys.stderr)
        rows.append((task, log, row))
    results = []
    for task, log, row in rows:
        row.update(rebench(torch, task, log, target))
        results.append(row)
    if curves:
        plot(curves, Path(args.plot))
    if args.save_best:
        from vdla.compiler.autotvm.record import pick_best

        merged = logs / "all_xgb.log"
        merged.write_text("".join(Path(r["log"]).read_text() for r in results))
        print(f"best records of {pick_best(merged, args.save_best)} workloads: {args.save_best}", file=sys.stderr)
    convs = [r["ratio"] for r in results if not r["task"].startswith("matmul")]
    gm = math.exp(sum(map(math.log, convs)) / len(convs)) if convs else float("nan")
    summary = {"gpu": gpu.name, "arch": gpu.arch, "elapsed_s": time.monotonic() - t_start, "conv_geomean_vs_cudnn": gm,
               "rows": results, "plot": args.plot if curves else None}
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"{'task':<12} {'trials':>6} {'errors':>6} {'hand GF/s':>10} {'tuned GF/s':>10} {'torch GF/s':>10} "
          f"{'hand/torch':>10} {'tuned/torch':>11} {'xgb to 95%':>10} {'random':>7}")
    for r in results:
        print(f"{r['task']:<12} {r['trials']:>6} {r['errors']:>6} {r['hand_gflops']:>10.0f} {r['gflops']:>10.0f} "
              f"{r['torch_gflops']:>10.0f} {r['hand_ratio']:>10.2f} {r['ratio']:>11.2f} "
              f"{str(r.get('xgb_to_95', '')):>10} {str(r.get('random_to_95', '')):>7}")
    print(f"conv geometric mean vs cuDNN: {gm:.2f} (floor 1.0, goal 1.2: {'met' if gm >= 1.0 else 'NOT met'})")
    for r in results:
        if r["task"].startswith("matmul"):
            print(f"{r['task']} vs cuBLAS: {r['ratio']:.2f} (floor 0.8: {'met' if r['ratio'] >= 0.8 else 'NOT met'})")
        if r.get("xgb_to_95") is not None:
            rand = r.get("random_to_95")
            ok = rand is None or r["xgb_to_95"] * 3 <= rand
            said = str(rand) if rand is not None else f"more than {r['trials']}"
            print(f"{r['task']}: XGBoost reaches 95% of its best in {r['xgb_to_95']} trials, random in {said} "
                  f"({'met' if ok else 'NOT met'})")
    print(f"elapsed {summary['elapsed_s']:.0f} s; curves: {summary['plot']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
