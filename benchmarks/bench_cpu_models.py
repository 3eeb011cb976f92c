"""Benchmark: whole float32 models on vdla's llvm target against onnxruntime on the same CPU.

For each built-in model (ResNet-18, ResNet-50, MobileNet v1 and v2, ShuffleNet v2 x0.5,
SqueezeNet 1.1, MNASNet 0.5; weights from a seed, :mod:`vdla.compiler.graph.models`) at
``--size`` (224) square, batch 1:

* the graph is exported to ONNX (``to_onnx``) and loaded into an onnxruntime
  ``InferenceSession`` (CPUExecutionProvider, ``intra_op_num_threads = --threads``,
  ``inter_op_num_threads = 1``, ORT's default graph optimisations and thread spinning);
* vdla compiles it for ``llvm`` (``compile_model(g, target="llvm")``; under
  ``--tuning-log FILE`` with that log's best schedules applied) and runs it with the same
  number of threads (``set_num_threads``; numpy's BLAS too, for any host step);
* both get the same input (``models.sample_input``); every output must agree with
  onnxruntime's within ``max |vdla - ort| / max |ort| <= 1e-4`` (the job's fp32 check);
* both are timed in ``--rounds`` interleaved rounds (onnxruntime, then vdla; each the best of
  ``--repeat`` calls after one warm-up call, the best round kept), so load from other processes
  hits both alike. vdla's figure is a whole ``CompiledModel.run`` from Python (a plan of llvm
  kernels and views runs as one native call, :mod:`vdla.compiler.graph.executor.native`),
  onnxruntime's a whole ``InferenceSession.run``.

Reported per model: vdla and onnxruntime milliseconds and their ratio (vdla / ORT: below 1
is vdla faster), compile seconds, the plan's host steps (nodes left on numpy), the error,
the same plan run step by step from Python (``run(native=False)``: what the native call saves),
the sum of the steps' own times in the fastest timed run, and the convolutions' share.

The per-layer table covers every convolution (a step whose anchor is a conv2d of any kind:
plain, depthwise, grouped, Winograd, with its fused tail): its time inside the model (the executor
reads the clock between the steps of the native call, ``run(time_layers=True)``; the best over
all the timed runs), the GFLOP/s that
gives (``2 x MACs / seconds``; a Winograd layer counts the direct convolution's MACs, as TVM
reports it, so its rate is an effective one and may pass the peak) and its share of the CPU's computed peak
(``bench_cpu_peak.computed_peak``: lanes x 2 x FMA pipes x measured clock x threads), and the
same built kernel timed alone (called in a loop on the inputs one run left, best of
``--repeat`` calls in each of ``--rounds`` rounds): a layer much slower inside the model than alone loses to its neighbours
(cold caches, layout copies), one slow alone is the kernel's schedule.

A model that fails to build, export, compile or run, or that disagrees with onnxruntime, is
reported in its row and the script exits nonzero at the end. The tables are printed and
written as Markdown to ``--out`` (``docs/bench_cpu_models.md``) with the machine, the date
and the thread count.

    python benchmarks/bench_cpu_models.py                            # every model, 224x224, all cores
    python benchmarks/bench_cpu_models.py --models resnet18 mobilenet_v2 --threads 2 --rounds 5
    python benchmarks/bench_cpu_models.py --models mobilenet_v2 --size 32 --repeat 1 --rounds 1 --json
    python benchmarks/bench_cpu_models.py --tuning-log docs/tuning/llvm_conv2d.log --no-layers
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cpu_matmul import best_time, threads  # noqa: E402
from bench_cpu_peak import _cpuinfo, computed_peak  # noqa: E402

from vdla.compiler.graph import models  # noqa: E402
from vdla.compiler.graph.ir import Graph, Node  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: the models measured by default (all built-in, weights from a seed)
MODELS = ["resnet18", "resnet50", "mobilenet_v1", "mobilenet_v2", "shufflenet_v2", "squeezenet1_1", "mnasnet0_5"]
#: max |vdla - ort| / max |ort| allowed per output
RTOL = 1e-4


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


# ---------------------------------------------------------------------------- the convolutions of a plan


def _conv_of(n: Node, g: Graph) -> tuple[Node, Graph] | None:
    """The conv2d (of any kind) a step is anchored on, with the graph it lives in; None for other steps."""
    body = n.attrs.get("body") if n.op == "fused" else None
    if isinstance(body, Graph):
        if "conv" not in str(n.attrs.get("anchor", "")):
            return None
        c = next((b for b in body.topo_order() if "conv" in b.op), None)
        return (c, body) if c is not None else None
    return (n, g) if "conv" in n.op else None


def _describe(c: Node, g: Graph, source: Graph, source_nodes: dict[str, Node]) -> str:
    """``3x3/2 dw 32->32 @112`` (kernel/stride, depthwise or groups, channels, output size), read
    from the conv of the source graph the step was made from (the plan's own may be in a blocked
    layout); the plan's conv where the source has none of that name."""
    try:
        if c.name in source_nodes and "conv" in source_nodes[c.name].op:
            c, g = source_nodes[c.name], source
        x, w, y = g.type_of(c.inputs[0]).shape, g.type_of(c.inputs[1]).shape, c.type.shape  # type: ignore[union-attr]
        if len(x) != 4 or len(w) != 4:
            return c.op
        groups = int(c.attrs.get("groups", 1))
        s = c.attrs.get("strides", (1, 1))
        kind = "dw " if groups > 1 and groups == x[1] == y[1] else f"g{groups} " if groups > 1 else ""
        return f"{w[2]}x{w[3]}/{s[0]} {kind}{x[1]}->{y[1]} @{y[2]}"
    except Exception:  # a node the description does not know: the op's name
        return c.op


# ---------------------------------------------------------------------------- one model


def _ort_session(onnx_model: Any, nthreads: int) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = nthreads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(onnx_model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _rel_err(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    errs = [float(np.abs(a.astype(np.float64) - b).max() / max(float(np.abs(b).max()), 1e-30))
            if a.shape == b.shape else float("inf") for a, b in zip(got, want)]
    return max(errs) if errs and len(got) == len(want) else float("inf")


def _alone(m: Any, name: str, values: dict[str, Any], rng: np.random.Generator) -> Any:
    """``fn()`` calling step ``name``'s built kernel alone on the values a run left (a value whose
    buffer a later step reused: random numbers of its type), into an output of its own; None for a
    step without an llvm kernel."""
    k = m.kernels[name]
    if k.target != "llvm" or k.kernel is None:
        return None
    env: dict[str, Any] = {}
    for a in k.kernel.args:
        v = values.get(a, m.graph.consts.get(a))
        if v is None:
            t = m.graph.type_of(a)
            v = rng.standard_normal(t.shape).astype(t.dtype)
        env[a] = np.ascontiguousarray(v)
    out = np.empty(k.kernel.out_shape, k.kernel.out_dtype)
    return lambda: k.kernel(env, out)


def bench_model(name: str, size: int, nthreads: int, repeat: int, rounds: int, tuning_log: str | None,
                peak: float, layers: bool) -> dict[str, Any]:
    """One model: build, export, both sessions, check, time interleaved; the per-conv table."""
    from vdla.compiler.autotvm.tuning import tuning_context
    from vdla.compiler.graph.executor import compile_model
    from vdla.compiler.graph.executor.native import NativePlan
    from vdla.compiler.graph.onnx_export import to_onnx

    row: dict[str, Any] = {"model": name, "size": size, "status": "ok"}
    stage = "build"
    try:
        g = models.get(name, input_size=size)
        x = models.sample_input(g)
        row["input"] = "x".join(map(str, next(iter(g.inputs.values())).shape))
        row["gflop"] = None
        stage = "onnx export / onnxruntime"
        sess = _ort_session(to_onnx(g), nthreads)
        want = sess.run(None, x)
        stage = "vdla compile"
        with threads(nthreads):
            t0 = time.perf_counter()
            with tuning_context(tuning_log, "llvm"):
                m = compile_model(g, target="llvm")
            row["compile_s"] = round(time.perf_counter() - t0, 2)
            row["nodes"] = len(m.kernels)
            row["host_steps"] = len(m.host_steps())
            row["host_nodes"] = [f"{n} ({m.kernels[n].host_reason})" if m.kernels[n].host_reason else n
                                 for n in m.host_steps()]
            row["gflop"] = round(2 * sum(k.macs for k in m.kernels.values()) / 1e9, 3)
            stage = "vdla run"
            res = m.run(x)
            row["rel_err"] = _rel_err(res.outputs, want)
            if not row["rel_err"] <= RTOL:
                row["status"] = f"MISMATCH: rel. error {row['rel_err']:.1e} > {RTOL:.0e}"
            stage = "timing"
            best = {"ort": np.inf, "vdla": np.inf}
            step_best: dict[str, float] = {}
            fastest = [np.inf, 0.0]  # the fastest run: (its wall time, the sum of its steps' times)

            def step_call() -> None:  # each step timed inside the native run (the per-layer figures)
                t = time.perf_counter()
                r = m.run(x, time_layers=True)
                wall = time.perf_counter() - t
                for rec in r.layers:
                    step_best[rec.node] = min(step_best.get(rec.node, np.inf), rec.seconds)
                if wall < fastest[0]:
                    fastest[:] = [wall, sum(rec.seconds for rec in r.layers)]

            for _ in range(rounds):  # interleaved: load from elsewhere hits both alike
                best["ort"] = min(best["ort"], best_time(lambda: sess.run(None, x), repeat))
                best["vdla"] = min(best["vdla"], best_time(lambda: m.run(x), repeat))
                best_time(step_call, repeat)  # its records fill step_best and fastest
                best["steps"] = min(best.get("steps", np.inf), best_time(lambda: m.run(x, native=False), repeat))
            row["ort_ms"] = round(best["ort"] * 1e3, 3)
            row["vdla_ms"] = round(best["vdla"] * 1e3, 3)
            row["ratio"] = round(best["vdla"] / best["ort"], 2)
            row["native"] = isinstance(m.native_plan(), NativePlan)
            row["stepwise_ms"] = round(best["steps"] * 1e3, 3)
            row["steps_ms"] = round(fastest[1] * 1e3, 3)
            convs = []
            source_nodes = g.producers()
            for n in m.graph.topo_order():
                found = _conv_of(n, m.graph)
                if found is None:
                    continue
                k = m.kernels[n.name]
                convs.append({"node": n.name, "op": n.attrs.get("pattern", n.op), "layer": _describe(*found, g, source_nodes),
                              "target": k.target, "mflop": round(2 * k.macs / 1e6, 2),
                              "seconds": step_best.get(n.name, np.nan)})
            row["conv_ms"] = round(sum(c["seconds"] for c in convs) * 1e3, 3)
            if layers:
                stage = "per-layer timing"
                rng = np.random.default_rng(0)
                calls = {c["node"]: _alone(m, c["node"], res.values, rng) for c in convs}
                alone = {node: np.inf for node, fn in calls.items() if fn is not None}
                for _ in range(rounds):  # rounds, as the models: a burst of load elsewhere does not decide
                    for node in alone:
                        alone[node] = min(alone[node], best_time(calls[node], max(repeat, 3)))
                for c in convs:
                    s, t = c.pop("seconds"), alone.get(c["node"])
                    macs = m.kernels[c["node"]].macs
                    c["ms"] = round(s * 1e3, 4)
                    c["gflops"] = round(2 * macs / s / 1e9, 2) if s > 0 else None
                    c["of_peak"] = round(c["gflops"] / peak, 4) if c["gflops"] is not None else None
                    c["alone_ms"] = round(t * 1e3, 4) if t is not None else None
                    c["alone_gflops"] = round(2 * macs / t / 1e9, 2) if t else None
                row["layers"] = convs
    except Exception as e:  # reported in the row, not a crash mid-way
        row["status"] = f"FAILED at {stage}: {_error(e)}"
        _log(traceback.format_exc())
    return row


# ---------------------------------------------------------------------------- tables


def _f(v: Any, fmt: str) -> str:
    return "-" if v is None or (isinstance(v, float) and not np.isfinite(v)) else format(v, fmt)


def model_table(rows: list[dict[str, Any]], md: bool) -> list[str]:
    cols = ["model", "GFLOP", "vdla ms", "ORT ms", "vdla/ORT", "stepwise ms", "steps ms", "conv ms", "compile s",
            "nodes", "host", "rel. err", "status"]
    cells = [[r["model"], _f(r.get("gflop"), ".3f"), _f(r.get("vdla_ms"), ".3f"), _f(r.get("ort_ms"), ".3f"),
              _f(r.get("ratio"), ".2f"), _f(r.get("stepwise_ms"), ".3f"), _f(r.get("steps_ms"), ".3f"),
              _f(r.get("conv_ms"), ".3f"), _f(r.get("compile_s"), ".1f"), _f(r.get("nodes"), "d"),
              _f(r.get("host_steps"), "d"), _f(r.get("rel_err"), ".1e"), r["status"]] for r in rows]
    return _table(cols, cells, md, left={0, 12})


def layer_table(row: dict[str, Any], md: bool) -> list[str]:
    cols = ["node", "layer", "fused", "MFLOP", "ms in model", "GFLOP/s", "of peak", "ms alone", "GFLOP/s alone",
            "model/alone"]
    cells = [[c["node"], c["layer"], c["op"], _f(c["mflop"], ".2f"), _f(c["ms"], ".4f"), _f(c["gflops"], ".1f"),
              _f(c["of_peak"], ".1%"), _f(c["alone_ms"], ".4f"), _f(c["alone_gflops"], ".1f"),
              _f(c["ms"] / c["alone_ms"] if c["alone_ms"] else None, ".2f")] for c in row.get("layers", [])]
    return _table(cols, cells, md, left={0, 1, 2})


def _table(cols: list[str], cells: list[list[str]], md: bool, left: set[int]) -> list[str]:
    if md:
        out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" if i in left else "---:" for i in range(len(cols))) + "|"]
        return out + ["| " + " | ".join(c) + " |" for c in cells]
    width = [max(len(cols[i]), *(len(c[i]) for c in cells)) if cells else len(cols[i]) for i in range(len(cols))]

    def line(vals: list[str]) -> str:
        return "  ".join(v.ljust(width[i]) if i in left else v.rjust(width[i]) for i, v in enumerate(vals)).rstrip()

    return [line(cols), "-" * len(line(cols))] + [line(c) for c in cells]


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _cpu_model() -> str:
    for ln in _cpuinfo().splitlines():
        if ln.startswith("model name"):
            return ln.split(":", 1)[1].strip()
    return ""


def markdown(res: dict[str, Any]) -> str:
    lines = [
        "# vdla (llvm) vs onnxruntime on whole float32 models (CPU)", "",
        f"Written by `benchmarks/bench_cpu_models.py` on {res['date']}: {res['cpu_model'] or res['cpu']} "
        f"(LLVM cpu `{res['cpu']}`, {res['cores']} cores), **{res['threads']} thread(s)**, batch 1, "
        f"{res['size']}x{res['size']} inputs, onnxruntime {res['onnxruntime']}, vdla commit {res['commit'] or '?'}"
        + (f", tuning log `{res['tuning_log']}`" if res["tuning_log"] else "") + ".",
        f"Best of {res['repeat']} calls in each of {res['rounds']} interleaved rounds; load average before "
        f"{res['load_average_before']}, after {res['load_average_after']}.",
        f"Peak: {res['peak_gflops']} GFLOP/s ({res['peak_basis']}).", "",
        "vdla/ORT below 1: vdla is faster. *vdla ms*: a whole run (the plan as one native call); *stepwise ms*: "
        "the same plan run step by step from Python; *steps ms*: the sum of the steps' own times in the fastest "
        "timed native run (the clock read between the steps); *conv ms*: the convolutions' times (each its best "
        "over the timed runs, as in the per-layer tables).", "",
        *model_table(res["rows"], md=True),
    ]
    for r in res["rows"]:
        if r.get("layers"):
            lines += ["", f"## {r['model']}: convolutions", "", *layer_table(r, md=True)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- driver


def run(names: list[str], size: int, nthreads: int, repeat: int, rounds: int, tuning_log: str | None = None,
        layers: bool = True) -> dict[str, Any]:
    import onnxruntime as ort

    from vdla.compiler.targets.llvm import jit

    load_before = os.getloadavg()
    peak, _, basis = computed_peak(nthreads)
    rows = []
    for name in names:
        _log(f"--- {name} {size}x{size}, {nthreads} thread(s)")
        row = bench_model(name, size, nthreads, repeat, rounds, tuning_log, peak, layers)
        _log(f"{name}: vdla {row.get('vdla_ms')} ms, ORT {row.get('ort_ms')} ms, ratio {row.get('ratio')}, "
             f"{row['status']}")
        rows.append(row)
    return {
        "cpu": jit.host_info()["cpu"],
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count() or 1,
        "threads": nthreads,
        "date": time.strftime("%Y-%m-%d"),
        "commit": _commit(),
        "onnxruntime": ort.__version__,
        "size": size,
        "repeat": repeat,
        "rounds": rounds,
        "tuning_log": tuning_log,
        "peak_gflops": round(peak, 1),
        "peak_basis": basis,
        "load_average_before": [round(v, 2) for v in load_before],
        "load_average_after": [round(v, 2) for v in os.getloadavg()],
        "rows": rows,
        "failed": [r["model"] for r in rows if r["status"] != "ok"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--models", nargs="+", default=MODELS, metavar="MODEL",
                    help=f"built-in models (default: {' '.join(MODELS)})")
    ap.add_argument("--size", type=int, default=224, help="input height and width")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads of both (default: all cores)")
    ap.add_argument("--repeat", type=int, default=10, help="calls per round (the best is kept)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (the best is kept)")
    ap.add_argument("--tuning-log", default=None, help="a vdla tune log applied while compiling")
    ap.add_argument("--no-layers", action="store_true", help="skip the per-convolution table")
    ap.add_argument("--out", default=str(ROOT / "docs" / "bench_cpu_models.md"),
                    help="the tables as Markdown ('' writes none)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the tables")
    args, _ = ap.parse_known_args(argv)  # nox -s bench passes its posargs to every script
    unknown = [m for m in args.models if m not in models.MODELS]
    if unknown:
        ap.error(f"unknown models {unknown}; built-in models are {', '.join(models.MODELS)}")
    if args.tuning_log and not os.path.exists(args.tuning_log):
        ap.error(f"--tuning-log {args.tuning_log}: no such file")
    if min(args.threads, args.repeat, args.rounds) < 1:
        ap.error("--threads, --repeat and --rounds must be >= 1")
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        print("bench_cpu_models: needs onnxruntime (pip install 'vdla[graph]'); skipped")
        return 0
    res = run(args.models, args.size, args.threads, args.repeat, args.rounds, args.tuning_log, not args.no_layers)
    if args.out:
        Path(args.out).write_text(markdown(res))
    if args.json:
        print(json.dumps(res, indent=2, default=float))
    else:
        print(f"CPU {res['cpu_model'] or res['cpu']} ({res['cpu']}, {res['cores']} cores), {res['threads']} thread(s), "
              f"onnxruntime {res['onnxruntime']}, {res['date']}")
        print(f"load average before {res['load_average_before']}, after {res['load_average_after']}")
        print(f"peak = {res['peak_gflops']} GFLOP/s ({res['peak_basis']})")
        print("\n".join(model_table(res["rows"], md=False)))
        for r in res["rows"]:
            if r.get("layers"):
                print(f"\n{r['model']}: convolutions")
                print("\n".join(layer_table(r, md=False)))
        for r in res["rows"]:
            for h in r.get("host_nodes", []):
                print(f"  {r['model']} host step: {h}")
        if args.out:
            print(f"written to {args.out}")
    if res["failed"]:
        print(f"bench_cpu_models: {', '.join(res['failed'])} failed or disagreed with onnxruntime", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
