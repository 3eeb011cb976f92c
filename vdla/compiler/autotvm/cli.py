"""``vdla tune MODEL|OP``: tune every distinct workload of a model, or one operator.

    vdla tune resnet18 --target vdla --trials 64 --tuner xgb --log resnet18.log [--reduced]
    vdla tune C5 --target llvm --trials 32 --tuner ga --log c5.log          (a ResNet-18 layer)
    vdla tune conv2d_packed.vdla --args '[[1,4,56,56,1,16], ...]' --target vdla ...

A model's workloads are the ones its compiled kernels ask for (the model is compiled once
with a collecting dispatch context; on ``--target llvm`` the float32 model's nodes are
scheduled for the CPU too, as ``vdla run MODEL --compare`` builds them). Each task is tuned
with a progress bar (best so far, trials/s, errors), its measurements appended to ``--log``
(an existing log resumes: its points are not measured again and count towards
``--trials``), and a summary table compares the best point with the hand-picked schedule
(the fallback, measured once per task and logged as one of the trials, so the log's best
is never worse than today's schedule). XGB
learns across a model's workloads: the records of the template's other workloads (from the
log and from the tasks tuned before in this run) train its base model (transfer learning).
Measurements run on the Dask cluster of ``--scheduler`` (or ``VDLA_SCHEDULER``; else a local
cluster, one worker per core).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from .dispatch import DispatchContext, workload_key
from .task import Task, TaskError, create

__all__ = ["add_parser", "run", "tune_tasks", "tuning_context", "model_tasks", "layer_task", "TUNERS"]

TUNERS = ("xgb", "ga", "random", "grid")


class _Collector(DispatchContext):
    """Records every workload a compilation asks for (answers none: the hand picks build)."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[str, Any]] = {}

    def query(self, target: str, workload: Any) -> None:
        if workload is not None:
            self.seen.setdefault(workload_key([target, workload]), (target, workload))


def layer_task(name: str, target: str, config: str = "default") -> Task:
    """A ResNet-18 layer (C1-C12) as a task: conv2d_NCHWc.x86 on llvm, conv2d_packed.vdla on vdla."""
    from ...config import preset
    from ..targets.vdla.resnet import RESNET18

    layer = next((lay for lay in RESNET18 if lay.name == name), None)
    if layer is None:
        raise TaskError(f"unknown layer {name!r} (C1 ... C12)")
    if target == "llvm":
        return create("conv2d_NCHWc.x86", [1, layer.ic, layer.size, layer.size, layer.oc, layer.k, layer.stride,
                                           layer.pad], "llvm")
    c = preset(config)
    if layer.ic % c.block_in:
        raise TaskError(f"layer {name}: {layer.ic} input channels are not whole blocks of {c.block_in} (runs on the CPU)")
    p = layer.pad
    return create("conv2d_packed.vdla", [[1, layer.ic // c.block_in, layer.size, layer.size, c.batch, c.block_in],
                                         [layer.oc // c.block_out, layer.ic // c.block_in, layer.k, layer.k,
                                          c.block_out, c.block_in], [layer.stride] * 2, [p] * 4, True, False, config],
                  "vdla")


def model_tasks(model: str, target: str, config: str = "default", reduced: bool = False,
                size: int | None = None) -> list[Task]:
    """The distinct tunable workloads of a model's kernels on ``target``, as tasks."""
    from ...config import preset
    from ..graph.job import build_model, load_model

    spec = load_model(model, reduced=reduced, size=size)
    col = _Collector()
    with col:
        build_model(spec, preset(config))  # the VDLA build (and its float CPU nodes)
        if target == "llvm":  # the whole float32 model on this CPU (`vdla run MODEL --compare`'s llvm row)
            _schedule_float_graph(spec.graph)
    return [create(wl[0], wl[1], target) for tgt, wl in col.seen.values() if tgt == target]


def _schedule_float_graph(graph: Any) -> None:
    """Schedule (without building) every node of the float graph that the llvm strategy maps,
    so the schedules ask for their workloads."""
    from ..graph.fuse import fuse
    from ..graph.passes import simplify
    from ..targets.llvm import strategy

    g = fuse(simplify(graph))
    for node in g.topo_order():
        decl = strategy.declare(node, g)
        if not isinstance(decl, str):
            strategy.schedule(node, g, decl[2])


@contextlib.contextmanager
def tuning_context(log: str | None, target: str | None = None) -> Any:
    """``apply_history_best(log)`` when a log is given, else nothing (for ``vdla build|run --tuning-log``)."""
    if not log:
        yield None
        return
    from .record import apply_history_best

    if not Path(log).exists():
        raise FileNotFoundError(f"tuning log {log!r} does not exist")
    with apply_history_best(log, target) as ctx:
        yield ctx


def _tuner(kind: str, task: Task, seed: int, trials: int = 64) -> Any:
    """A tuner by name; XGB refits after every quarter of a short run (at most every 8 trials)."""
    from . import tuner as T

    plan = max(4, min(8, trials // 4))
    return {"xgb": lambda: T.XGBTuner(task, plan_size=plan, seed=seed), "ga": lambda: T.GATuner(task, seed=seed),
            "random": lambda: T.RandomTuner(task, seed=seed), "grid": lambda: T.GridSearchTuner(task, seed=seed)}[kind]()


def add_parser(sub: Any) -> None:
    """Register ``vdla tune`` on the ``vdla`` command's subparsers."""
    q = sub.add_parser("tune", help="auto-tune a model's (or one operator's) schedules; log the measurements")
    q.add_argument("model", help="built-in model, .onnx, a ResNet-18 layer (C1-C12) or a template name (with --args)")
    q.add_argument("--target", choices=("llvm", "vdla"), default="vdla")
    q.add_argument("--device", default="fsim", help="vdla measurements: fsim (cycle model) or verilator")
    q.add_argument("--trials", type=int, default=64, help="measurements per task (an existing log's count)")
    q.add_argument("--tuner", choices=TUNERS, default="xgb")
    q.add_argument("--log", required=True, help="JSON-lines log to append to (resumes when it exists)")
    q.add_argument("--scheduler", default=None, help="Dask scheduler address (default: VDLA_SCHEDULER or local)")
    q.add_argument("--args", default=None, help="a template's arguments as JSON (with a template name)")
    q.add_argument("--config", default="default", help="VDLA configuration preset")
    q.add_argument("--reduced", action="store_true", help="the model's reduced size")
    q.add_argument("--size", type=int, default=None, help="input height/width of the model")
    q.add_argument("--threads", type=int, default=None, help="llvm: threads of the measured kernels")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    q.set_defaults(fn=run)


def _tasks(args: argparse.Namespace) -> list[Task]:
    if args.args is not None:
        try:
            targs = json.loads(args.args)
        except json.JSONDecodeError as e:
            raise TaskError(f"--args is not JSON: {e.msg} at column {e.colno}") from None
        return [create(args.model, targs, args.target)]
    if args.model.startswith("C") and args.model[1:].isdigit():
        return [layer_task(args.model, args.target, args.config)]
    return model_tasks(args.model, args.target, args.config, args.reduced, args.size)


def _prepare_device(tasks: list[Task], device: str, quiet: bool = False) -> None:
    """Open ``device`` once here for every configuration the tasks build for: a device that does
    not exist fails now rather than in every measurement, and a Verilator model is built here
    (minutes, once; cached under ``sim_build/``, where the local workers find it) rather than
    inside a measurement's time limit."""
    from ...runtime import Device

    configs = {}
    for task in tasks:
        s, _ = task.instantiate(task.fallback())
        cfg = getattr(s, "vdla_config", None)
        if cfg is not None:
            configs[repr(cfg)] = cfg
    for cfg in configs.values():
        dev = Device(device, config=cfg)
        try:
            if dev.backend.name == "verilator":
                from ...simulator.rtl.verilator import build_library

                if not quiet:
                    print(f"vdla tune: the Verilator model of config {cfg.name!r} (built once, cached in sim_build/)",
                          file=sys.stderr)
                build_library(cfg)
        finally:
            dev.close()


def tune_tasks(tasks: list[Task], option: Any, log: str | Path, trials: int, tuner: str = "xgb", seed: int = 0,
               quiet: bool = True) -> list[tuple[Task, Any, float]]:
    """Tune each task in turn, appending to ``log``: (task, its tuner, the hand pick's score) each.

    Every record of the log and of this run is the history of each tuner: a task's own records
    resume it (they count towards ``trials``), the template's other workloads train XGB's base
    model (transfer learning). The hand pick is measured and logged first when the log lacks it."""
    from .callback import log_to_file, progress_bar
    from .measure import MeasureInput, measure_batch
    from .record import load_from_file
    from .tuner.tuner import score

    log = Path(log)
    target = tasks[0].kind if tasks else "llvm"
    history = list(load_from_file(log, target)) if log.exists() else []
    rows = []
    for n, task in enumerate(tasks, 1):
        tun = _tuner(tuner, task, seed, trials)
        mine = [(i, r) for i, r in history if i.task.key() == task.key()]
        tun.load_history(history)
        fb = task.fallback()
        got = [r for i, r in mine if fb.index is not None and i.config.index == fb.index]
        if got:
            hand = got[0]
        else:  # the hand pick, measured once and logged (the best record is then never worse than it)
            inp = MeasureInput(task, task.config_space.get(fb.index) if fb.index is not None else fb)
            hand = measure_batch([inp], option)[0]
            if fb.index is not None:
                log_to_file(log)(tun, [inp], [hand])
                tun._account(inp, hand)
                tun.update([inp], [hand])
                mine.append((inp, hand))
                history.append((inp, hand))
        left = trials - len(mine)
        cbs = [log_to_file(log), lambda _t, ins, res: history.extend(zip(ins, res))]
        if not quiet:
            cbs.append(progress_bar(left, prefix=f"[{n}/{len(tasks)}] {task.name}", file=sys.stderr))
        if left > 0:
            tun.tune(left, option, callbacks=cbs)
        rows.append((task, tun, score(task, hand)))
    return rows


def run(args: argparse.Namespace) -> int:
    """The ``vdla tune`` job; returns the exit status."""
    from .callback import format_score
    from .measure import LocalBuilder, LocalRunner, measure_option

    if args.trials <= 0:
        print(f"vdla tune: error: --trials must be a positive number of trials, got {args.trials}", file=sys.stderr)
        return 2
    try:
        tasks = _tasks(args)
    except TaskError as e:
        print(f"vdla tune: error: {e}", file=sys.stderr)
        return 2
    if not tasks:
        print(f"vdla tune: error: {args.model} has no tunable workload on {args.target}", file=sys.stderr)
        return 2
    if args.target == "vdla":
        try:
            _prepare_device(tasks, args.device, args.quiet)
        except Exception as e:  # noqa: BLE001 - a device name, a missing simulator, a failed Verilator build
            print(f"vdla tune: error: --device {args.device}: {type(e).__name__}: {e}", file=sys.stderr)
            return 2
    from ... import cluster

    try:
        client = cluster.get_client(args.scheduler)
    except cluster.ClusterError as e:
        print(f"vdla tune: error: {e}", file=sys.stderr)
        return 2
    option = measure_option(LocalBuilder(timeout=30), LocalRunner(number=3 if args.target == "llvm" else 1, repeat=3
                                                                  if args.target == "llvm" else 1, timeout=60,
                                                                  device=args.device, threads=args.threads),
                            client=client)
    log = Path(args.log)
    print(f"vdla tune: {len(tasks)} task(s) on {args.target}, {args.trials} trials each, tuner {args.tuner}, "
          f"{len(client.scheduler_info().get('workers', {}))} Dask worker(s)", file=sys.stderr)
    rows = tune_tasks(tasks, option, log, args.trials, args.tuner, args.seed, quiet=args.quiet)
    w = max(len(t.name) for t, _, _ in rows)
    print(f"{'#':>2} {'task':<{w}} {'points':>7} {'trials':>6} {'errors':>6} {'hand':>20} {'best':>20} {'speedup':>7}")
    for k, (task, tuner, hs) in enumerate(rows, 1):
        sp = f"{tuner.best_flops / hs:.2f}x" if hs > 0 and tuner.best_flops > 0 else "-"
        print(f"{k:>2} {task.name:<{w}} {len(task.config_space):>7} {tuner.trials:>6} {tuner.errors:>6} "
              f"{format_score(task, hs):>20} {format_score(task, tuner.best_flops):>20} {sp:>7}")
    print(f"log: {log} (use it with --tuning-log {log})")
    return 0
