"""Benchmark: the TVM paper's tuner comparison (§5 / Fig. 12) on ResNet-18 layers, llvm and vdla.

For each target and layer (default C2 C5 C8 C11; conv2d_NCHWc.x86 on llvm, conv2d_packed.vdla
on vdla) every tuner (xgb, ga, random, grid) runs ``--trials`` measurements with each of
``--seeds`` seeds; the curves are the best score found so far against trials, averaged over
the seeds and scaled to the best point any tuner found on that layer. Reported:

* the trials each tuner needs to reach 95% of that best (a tuner that never does counts as
  ``--trials``), and XGB's against random's (floor: XGB in at most a third of random's,
  mean over the layers); ``xgb+transfer`` is XGB whose base model is trained on the points
  XGB measured on the other layers of the run (as ``vdla tune MODEL`` passes a model's other
  workloads; ``--no-transfer`` skips it);
* per layer: the hand-picked template (the fallback) against the best tuned point; on vdla
  in cycles of the golden simulator's cycle model (floor: tuned <= hand on every layer);
* llvm: GFLOP/s of hand and tuned with 1 and 2 threads against the CPU's computed peak
  (``bench_cpu_peak.computed_peak``: lanes x 2 x FMA pipes x clock x threads).

``--table DIR`` (vdla): every point of each layer's space measured once and kept as
``DIR/<layer>.json`` (``{index: cycles or null}``; missing points are measured and added).
The best of the whole space is then the reference, and random search's expected trials to
a 95% point are exact, not sampled: ``(N + 1) / (K + 1)`` for K such points among N drawn
without replacement, and ``(Nv + 1) / (K + 1)`` for a random search that, like XGBTuner,
skips the Nv-complement the template rejects before measuring.

``--model-total MODEL`` (default resnet18; ``none`` skips it): the floor "ResNet-18's total
cycles drop". ``vdla tune MODEL --target vdla`` tunes every distinct VDLA workload of the
model (``--model-trials`` each, XGB, the hand pick measured and logged first), then the model
is compiled and run on the golden simulator without and with ``--tuning-log``: total cycles,
and per VDLA layer the hand and tuned cycles (every layer's output checked against the int8
numpy reference in both runs).

vdla cycles are deterministic and a llvm point is timed once, so a point several tuners or
seeds meet is measured once (``measure_option(cache=...)``). Measurements run on a local Dask
cluster (or ``VDLA_SCHEDULER``). Writes ``--out`` (PNG) and prints a table (``--json``: JSON).
Run ``python benchmarks/bench_tuning.py --trials 24 --seeds 3`` (a reduced form: see the README).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cpu_peak import computed_peak  # noqa: E402

TUNERS = ("xgb", "ga", "random", "grid")


def _curve(history: list[tuple[int, float]], n: int) -> np.ndarray:
    best, out = 0.0, []
    for _, s in history[:n]:
        best = max(best, s)
        out.append(best)
    out += [best] * (n - len(out))
    return np.asarray(out)


def _reach(curve: np.ndarray, target: float) -> int:
    hit = np.nonzero(curve >= target)[0]
    return int(hit[0]) + 1 if hit.size else len(curve)


def space_table(task: Any, path: str, option: Any) -> dict[int, float | None]:
    """Cycles of every point of a vdla task (None: invalid), read from ``path`` and completed by
    measuring the missing points (in batches of 64 on the cluster); ``option.cache`` is filled."""
    import json as _json

    from vdla.compiler.autotvm.measure import MeasureInput, measure_batch

    tab: dict[int, float | None] = {}
    if os.path.exists(path):
        with open(path) as f:
            tab = {int(k): v for k, v in _json.load(f).items()}
    todo = [i for i in range(len(task.config_space)) if i not in tab]
    for at in range(0, len(todo), 64):
        chunk = todo[at:at + 64]
        for i, r in zip(chunk, measure_batch([MeasureInput(task, task.config_space.get(i)) for i in chunk], option)):
            tab[i] = r.cost if r.ok else None
        with open(path, "w") as f:
            _json.dump({str(k): v for k, v in sorted(tab.items())}, f)
    from vdla.compiler.autotvm.measure import MeasureResult

    for i, c in tab.items():  # the tuners below read these instead of measuring
        key = _json.dumps([task.key(), task.config_space.get(i).knobs()])
        option.cache.setdefault(key, MeasureResult([c] if c else [], 0 if c else 1, 0.0, 0.0,
                                                   "" if c else "invalid (from the table)", "cycles"))
    return tab


def bench_layer(target: str, layer: str, trials: int, seeds: int, option: Any, tuners: tuple[str, ...] = TUNERS,
                table: str | None = None) -> dict[str, Any]:
    from vdla.compiler.autotvm.measure import MeasureInput, measure_batch
    from vdla.compiler.autotvm.tuner.tuner import score
    from vdla.compiler.autotvm.tuning import layer_task, make_tuner

    task = layer_task(layer, target)
    tab = space_table(task, os.path.join(table, f"{layer}.json"), option) if table and target == "vdla" else None
    fb = task.fallback()
    hand = measure_batch([MeasureInput(task, task.config_space.get(fb.index) if fb.index is not None else fb)],
                         option)[0]
    curves: dict[str, list[np.ndarray]] = {}
    best_cfg, best_score = None, 0.0
    t0 = time.perf_counter()
    skipped: list[int] = []
    measured: dict[int, float] = {}  # index -> score of every point XGB measured (other layers' transfer data)
    for name in tuners:
        for seed in range(seeds):
            tuner = make_tuner(name, task, seed, trials)
            tuner.tune(trials, option)
            curves.setdefault(name, []).append(_curve(tuner.history, trials))
            if tuner.best_flops > best_score:
                best_score, best_cfg = tuner.best_flops, tuner.best_config
            if name == "xgb":
                skipped.append(tuner.skipped)
                measured.update(dict(zip(tuner.xs, tuner.ys)))
            if name == "grid":  # deterministic: one seed is every seed
                curves[name] *= seeds
                break
    space_best = None
    if tab is not None:
        valid = np.array([c for c in tab.values() if c])
        space_best = task.flop / valid.min()
        k95 = int(np.sum(valid.min() / valid >= 0.95))
        best_score = max(best_score, space_best)
    top = max(best_score, 1e-30)
    mean = {k: np.mean(v, axis=0) / top for k, v in curves.items()}
    reach = {k: float(np.mean([_reach(c / top, 0.95) for c in v])) for k, v in curves.items()}
    row: dict[str, Any] = {
        "target": target, "layer": layer, "points": len(task.config_space), "trials": trials, "seeds": seeds,
        "hand_score": score(task, hand), "best_score": best_score, "hand_ok": hand.ok,
        "best_config": repr(best_cfg), "hand_config": repr(fb), "reach95": reach,
        "curves": {k: v.round(4).tolist() for k, v in mean.items()}, "tune_s": round(time.perf_counter() - t0, 1),
        "reach95_per_seed": {k: [_reach(c / top, 0.95) for c in v] for k, v in curves.items()},
        "xgb_skipped_mean": float(np.mean(skipped)) if skipped else None,
    }
    if tab is not None:
        row.update(space_valid=len(valid), space_k95=k95, random_expected=(len(tab) + 1) / (k95 + 1),
                   random_valid_expected=(len(valid) + 1) / (k95 + 1))
    row["_records"] = [(MeasureInput(task, task.config_space.get(i)), _result(task, sc)) for i, sc in measured.items()]
    row["_task"], row["_top"] = task, top
    if target == "vdla":
        row["hand_cycles"] = hand.cost if hand.ok else None
        row["best_cycles"] = task.flop / best_score if best_score else None
    else:
        row["threads"] = _llvm_threads(task, fb, best_cfg, option)
    return row


def _result(task: Any, sc: float) -> Any:
    """A measurement result with score ``sc`` (0: an invalid point)."""
    from vdla.compiler.autotvm.measure import MeasureResult

    unit = "cycles" if task.kind == "vdla" else "s"
    return MeasureResult([task.flop / sc] if sc > 0 else [], 0 if sc > 0 else 1, 0.0, 0.0, "" if sc > 0 else "invalid",
                         unit)


def bench_transfer(rows: list[dict[str, Any]], trials: int, seeds: int, option: Any) -> None:
    """XGB with transfer learning, per layer: its base model trained on the points XGB measured on
    the *other* layers of the same target (their tuning logs, as ``vdla tune MODEL`` passes them);
    adds the ``xgb+transfer`` curve and trials to 95% to each row."""
    from vdla.compiler.autotvm.tuning import make_tuner

    for r in rows:
        others = [rec for o in rows if o is not r and o["target"] == r["target"] for rec in o["_records"]]
        if not others:
            continue
        task, top = r["_task"], r["_top"]
        curves = []
        for seed in range(seeds):
            tuner = make_tuner("xgb", task, seed, trials)
            tuner.load_history(others)
            tuner.tune(trials, option)
            curves.append(_curve(tuner.history, trials))
        r["curves"]["xgb+transfer"] = (np.mean(curves, axis=0) / top).round(4).tolist()
        r["reach95"]["xgb+transfer"] = float(np.mean([_reach(c / top, 0.95) for c in curves]))
        r["reach95_per_seed"]["xgb+transfer"] = [_reach(c / top, 0.95) for c in curves]


def _llvm_threads(task: Any, fb: Any, best: Any, option: Any) -> dict[str, Any]:
    """GFLOP/s of hand and tuned with 1 and 2 threads, and of the CPU's peak."""
    from dataclasses import replace

    from vdla.compiler.autotvm.measure import MeasureInput, measure_batch
    from vdla.compiler.autotvm.tuner.tuner import score

    out: dict[str, Any] = {}
    for nt in (1, 2):
        opt = replace(option, runner=replace(option.runner, threads=nt, number=3, repeat=3), cache=None)
        cfgs = [task.config_space.get(fb.index) if fb.index is not None else fb] + ([best] if best else [])
        # one point at a time: two timed at once on two workers would share the cores
        res = [measure_batch([MeasureInput(task, c)], opt)[0] for c in cfgs]
        peak = computed_peak(nt)[0]
        g = [score(task, r) / 1e9 for r in res]
        out[str(nt)] = {"peak_gflops": round(peak, 1), "hand_gflops": round(g[0], 1),
                        "tuned_gflops": round(g[-1], 1), "tuned_of_peak": round(g[-1] / peak, 3)}
    return out


def bench_model_total(model: str, trials: int, seed: int = 0, reduced: bool = False,
                      log: str | None = None) -> dict[str, Any]:
    """Tune ``model``'s VDLA workloads with ``vdla tune``, then run it untuned and tuned (see the doc)."""
    import contextlib
    import tempfile
    import warnings

    from vdla import preset
    from vdla.cli import main as vdla_main
    from vdla.compiler.autotvm.tuning import model_tasks, tuning_context
    from vdla.compiler.graph.job import run_job

    if log is None:
        log = os.path.join(tempfile.mkdtemp(prefix="vdla-tune-"), f"{model}.log")
    n_tasks = len(model_tasks(model, "vdla", reduced=reduced))
    t0 = time.perf_counter()
    argv = ["tune", model, "--target", "vdla", "--trials", str(trials), "--tuner", "xgb", "--seed", str(seed),
            "--log", log, "-q", *(["--reduced"] if reduced else [])]
    with contextlib.redirect_stdout(sys.stderr):  # its summary table; stdout stays this benchmark's
        if vdla_main(argv) != 0:
            raise RuntimeError(f"vdla {' '.join(argv)} failed")
    tune_s = time.perf_counter() - t0
    runs = {}
    for way in ("hand", "tuned"):
        with warnings.catch_warnings(record=True) as caught, (tuning_context(log) if way == "tuned"
                                                               else contextlib.nullcontext()):
            warnings.simplefilter("always")
            runs[way] = run_job(model, "fsim", preset("default"), reduced=reduced, check_fp32=False)
        runs[way + "_warnings"] = [str(w.message) for w in caught if "tuned schedule" in str(w.message)]
    hand, tuned = runs["hand"], runs["tuned"]
    tl = {r.node: r for r in tuned.layers}
    layers = [{"node": r.node, "hand": r.cycles, "tuned": tl[r.node].cycles, "tuned_target": tl[r.node].target}
              for r in hand.vdla_layers]
    return {"model": model, "reduced": reduced, "tasks": n_tasks, "trials": trials, "seed": seed, "log": log,
            "tune_s": round(tune_s, 1), "hand_total": hand.total_cycles, "tuned_total": tuned.total_cycles,
            "hand_ok": hand.ok, "tuned_ok": tuned.ok, "layers": layers,
            "fell_back": runs["tuned_warnings"],
            "layers_slower": [ly["node"] for ly in layers if ly["tuned"] is None or ly["tuned"] > ly["hand"]]}


def print_model_total(r: dict[str, Any]) -> None:
    print(f"{r['model']}{' (reduced)' if r['reduced'] else ''} on VDLA, golden simulator cycles: {r['tasks']} "
          f"distinct workloads tuned, {r['trials']} trials each (xgb, seed {r['seed']}, {r['tune_s']} s)")
    print(f"{'layer':<28} {'hand':>10} {'tuned':>10} {'hand/tuned':>10}")
    for ly in r["layers"]:
        t = ly["tuned"]
        print(f"{ly['node']:<28} {ly['hand']:>10,} {t if t is not None else '-':>10,} "
              f"{ly['hand'] / t if t else float('nan'):>9.2f}x")
    print(f"{'total (every VDLA layer)':<28} {r['hand_total']:>10,} {r['tuned_total']:>10,} "
          f"{r['hand_total'] / r['tuned_total']:>9.2f}x")
    print(f"  outputs checked against the int8 reference: hand {r['hand_ok']}, tuned {r['tuned_ok']}; layers slower "
          f"tuned: {r['layers_slower'] or 'none'}; tuned points that did not build in the model: "
          f"{len(r['fell_back'])}")


def plot(rows: list[dict[str, Any]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(rows), figsize=(3.2 * len(rows), 3.0), squeeze=False, sharey=True)
    for ax, r in zip(axes[0], rows):
        for name, c in r["curves"].items():
            ax.plot(np.arange(1, len(c) + 1), c, label=name)
        if r["hand_score"] and r["best_score"]:
            ax.axhline(r["hand_score"] / r["best_score"], color="grey", ls=":", label="hand")
        ax.set_title(f"{r['target']} {r['layer']}", fontsize=9)
        ax.set_xlabel("trials")
        ax.set_ylim(0, 1.05)
    axes[0][0].set_ylabel("best so far / best found")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--targets", nargs="+", default=["vdla", "llvm"], choices=["vdla", "llvm"])
    ap.add_argument("--layers", nargs="*", default=["C2", "C5", "C8", "C11"], help="(none: only --model-total)")
    ap.add_argument("--trials", type=int, default=32)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default="bench_tuning.png")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the tables")
    ap.add_argument("--json-out", default=None, help="also write the rows as JSON to this file")
    ap.add_argument("--tuners", nargs="+", default=list(TUNERS), choices=list(TUNERS))
    ap.add_argument("--table", default=None, help="vdla: directory of whole-space cycle tables (see above)")
    ap.add_argument("--model-total", default="resnet18", help="vdla: a model tuned and run untuned and tuned "
                    "(total cycles); none: skip")
    ap.add_argument("--model-trials", type=int, default=32, help="trials per workload of --model-total")
    ap.add_argument("--reduced", action="store_true", help="--model-total at the model's reduced size")
    ap.add_argument("--no-transfer", action="store_true", help="skip xgb+transfer (XGB trained on the other layers)")
    args, _ = ap.parse_known_args()  # nox -s bench passes its posargs to every script
    if args.trials <= 0 or args.seeds <= 0:
        ap.error("--trials and --seeds must be positive")
    from vdla.compiler.autotvm import LocalBuilder, LocalRunner, measure_option

    cache: dict[str, Any] = {}
    rows = []
    for target in args.targets:
        option = measure_option(LocalBuilder(timeout=60), LocalRunner(number=3 if target == "llvm" else 1,
                                                                      repeat=3 if target == "llvm" else 1,
                                                                      timeout=60), cache=cache)
        mine = []
        for layer in args.layers:
            mine.append(bench_layer(target, layer, args.trials, args.seeds, option, tuple(args.tuners), args.table))
            print(f"  {target} {layer}: {mine[-1]['tune_s']} s", file=sys.stderr)
        if "xgb" in args.tuners and not args.no_transfer:
            bench_transfer(mine, args.trials, args.seeds, option)
        rows += mine
    for r in rows:
        for k in ("_records", "_task", "_top"):
            r.pop(k, None)
    total = None
    if "vdla" in args.targets and args.model_total != "none":
        total = bench_model_total(args.model_total, args.model_trials, reduced=args.reduced)
    if rows:
        plot(rows, args.out)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"tuners": rows, "model_total": total}, f, indent=1)
    if args.json:
        print(json.dumps({"tuners": rows, "model_total": total}, indent=2))
        return
    if total is not None:
        print_model_total(total)
    if not rows:
        return
    print(f"best-so-far vs trials: {args.out}; {args.trials} trials, mean of {args.seeds} seeds")
    names = tuple(args.tuners) + (("xgb+transfer",) if any("xgb+transfer" in r["reach95"] for r in rows) else ())
    print(f"{'target':>6} {'layer':>5} {'points':>6} " + " ".join(f"{t + ' 95%':>9}" for t in names)
          + f" {'hand':>11} {'tuned':>11} {'tuned/hand':>10}")
    ratios, exact, exact_valid, xfer = [], [], [], []
    for r in rows:
        hv = r["hand_cycles"] if r["target"] == "vdla" else r["hand_score"] / 1e9
        tv = r["best_cycles"] if r["target"] == "vdla" else r["best_score"] / 1e9
        unit = "cyc" if r["target"] == "vdla" else "GF/s"
        gain = (hv / tv if r["target"] == "vdla" else tv / hv) if hv and tv else float("nan")
        if "random" in names and "xgb" in names:
            ratios.append(r["reach95"]["random"] / max(r["reach95"]["xgb"], 1e-9))
        print(f"{r['target']:>6} {r['layer']:>5} {r['points']:>6} "
              + " ".join(f"{r['reach95'].get(t, float('nan')):>9.1f}" for t in names)
              + f" {hv or 0:>7.4g}{unit:>4} {tv or 0:>7.4g}{unit:>4} {gain:>9.2f}x")
        if "random_expected" in r and "xgb" in names:
            x = r["reach95"]["xgb"]
            exact.append(r["random_expected"] / x)
            exact_valid.append(r["random_valid_expected"] / x)
            print(f"{'':>13} whole space: {r['space_valid']} valid, {r['space_k95']} within 95% of the best; "
                  f"random needs {r['random_expected']:.1f} trials (exact; {r['random_valid_expected']:.1f} skipping "
                  f"rejected points); XGB {x:.1f} (seeds {r['reach95_per_seed']['xgb']}, "
                  f"{r['xgb_skipped_mean']:.0f} rejected points skipped) -> {exact[-1]:.2f}x ({exact_valid[-1]:.2f}x)")
            if "xgb+transfer" in r["reach95"]:
                xt = r["reach95"]["xgb+transfer"]
                xfer.append(r["random_valid_expected"] / xt)
                print(f"{'':>13} XGB with the other layers' XGB points as its base model: {xt:.1f} (seeds "
                      f"{r['reach95_per_seed']['xgb+transfer']}) -> {r['random_expected'] / xt:.2f}x ({xfer[-1]:.2f}x)")
    if ratios:
        print(f"random's trials to 95% / XGB's (sampled, capped at {args.trials}), mean over layers: "
              f"{np.mean(ratios):.2f} (floor: >= 3)")
    if exact:
        print(f"random's exact expected trials / XGB's, mean over layers: {np.mean(exact):.2f} (floor: >= 3); "
              f"against a random search that also skips rejected points: {np.mean(exact_valid):.2f}")
    if xfer:
        print(f"the same with transfer learning (xgb+transfer), against the skipping random search: {np.mean(xfer):.2f}")
    for r in rows:
        if r["target"] == "llvm":
            t = r["threads"]
            print(f"  llvm {r['layer']}: " + "; ".join(
                f"{n} thread(s): hand {t[n]['hand_gflops']} / tuned {t[n]['tuned_gflops']} GFLOP/s "
                f"of peak {t[n]['peak_gflops']} ({t[n]['tuned_of_peak']:.0%})" for n in ("1", "2")))


if __name__ == "__main__":
    main()
