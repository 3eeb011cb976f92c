"""Tuning jobs: a model's (or a layer's) tasks, tuning them into a log, building with a log.

`model_tasks` finds the distinct tunable workloads of a model's kernels (the model is
compiled once with a collecting dispatch context; on ``llvm`` the float32 model's nodes are
scheduled for the CPU too, as ``vdla run MODEL --compare`` builds them; on ``cuda`` only the
float32 model's nodes are scheduled, with the GPU schedules, as ``vdla run MODEL --target cuda``
builds them, and every implementation the cuda strategy may choose for a convolution is listed:
``conv2d_nchw_winograd.cuda`` beside ``conv2d_nchw.cuda`` for a 3x3 stride-1 one, ``conv2d_1x1.cuda``
for a 1x1 stride-1 one of batch 1, so that building with the tuned log runs the fastest,
:mod:`vdla.compiler.graph.strategy.cuda`); `layer_task` makes a ResNet-18 layer (C1-C12) a task. A cuda task names its
architecture (``cuda -arch=sm_90``: the GPU worker's, :func:`gpu_target`), and
`tuning_context` warns, naming both, when a log's cuda records were measured on another one. `tune_tasks` tunes each task in turn, appending its
measurements to a log (an existing log resumes: its points are not measured again and
count towards the trials), and measures the hand-picked schedule (the fallback) once per
task as one of the trials, so the log's best is never worse than today's schedule. XGB
learns across a model's workloads: the records of the template's other workloads (from the
log and from the tasks tuned before in this run) train its base model (transfer learning).
`make_tuner` makes a tuner by name (`TUNERS`); `tuning_context` is ``apply_history_best``
of a log, or nothing (``vdla build|run --tuning-log``). The ``vdla tune`` command over
these is `vdla.cli.tune`.
"""
from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path
from typing import Any

from .dispatch import DispatchContext, workload_key
from .task import Task, TaskError, backend_of, create

__all__ = ["tune_tasks", "tuning_context", "default_log", "LOGS", "model_tasks", "layer_task", "make_tuner", "TUNERS",
           "ArchMismatchWarning", "arch_mismatch"]

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
    from ..topi.workloads import RESNET18

    layer = next((lay for lay in RESNET18 if lay.name == name), None)
    if layer is None:
        raise TaskError(f"unknown layer {name!r} (C1 ... C12)")
    if backend_of(target) == "cuda":  # the GPU's direct template, on NCHW as the float model runs it
        p = layer.pad
        return create("conv2d_nchw.cuda", [[1, layer.ic, layer.size, layer.size], [layer.oc, layer.ic, layer.k, layer.k],
                                           [layer.stride] * 2, [p] * 4, [1, 1]], target)
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
    from ..graph.build import build_model
    from ..graph.zoo import load_model

    spec = load_model(model, reduced=reduced, size=size)
    col = _Collector()
    kind = backend_of(target)
    with col:
        if kind == "cuda":  # the float32 model on the GPU (`vdla run MODEL --target cuda`)
            _schedule_float_graph(spec.graph, "cuda")
        else:
            build_model(spec, preset(config))  # the VDLA build (and its float CPU nodes)
        if kind == "llvm":  # the whole float32 model on this CPU (`vdla run MODEL --compare`'s llvm row)
            _schedule_float_graph(spec.graph, "llvm")
    return [create(wl[0], wl[1], target) for tgt, wl in col.seen.values() if tgt == kind]


def _schedule_float_graph(graph: Any, kind: str = "llvm") -> None:
    """Schedule (without building) every node of the float graph that the ``kind`` strategy maps,
    laid out as compile_model lays it out for that target, so the schedules ask for their workloads."""
    from ..graph.cpu_layout import to_nchwc
    from ..graph.fuse import fuse
    from ..graph.passes import simplify
    from ..graph.strategy.cuda import select_implementations
    from ..graph.strategy.topi_ops import check, declare, schedule

    g = simplify(graph)
    if kind == "cuda":  # every implementation of each conv is asked for its record: all their workloads recorded
        select_implementations(g)
    g = fuse(to_nchwc(g) if kind == "llvm" else g)
    for node in g.topo_order():
        if kind == "cuda" and check(node, g) is not None:
            continue
        decl = declare(node, g)
        if not isinstance(decl, str):
            try:
                schedule(node, g, decl[2], kind)
            except Exception:  # noqa: BLE001 - a node this target's schedules do not take runs on the host
                if kind == "llvm":
                    raise


#: the committed tuning logs: ``llvm_<cpu>.log`` per CPU family, ``cuda_<arch>.log`` per GPU architecture
#: (``vdla tune`` / ``benchmarks/tune_gpu.py --save-best`` on that machine, the best record per workload
#: kept), applied by :func:`tuning_context` when the host's CPU or GPU matches (TVM's TopHub)
LOGS = Path(__file__).parent / "logs"


def default_log(target: str | None = "llvm") -> Path | None:
    """The committed log (:data:`LOGS`) of this host's CPU family for ``llvm`` (matched by LLVM's
    CPU name) or of its GPU's architecture for ``cuda``, or None when there is none."""
    if target == "cuda":
        from ..targets.cuda.target import present_arch

        arch = present_arch()
        path = LOGS / f"cuda_{arch}.log" if arch else None
        return path if path is not None and path.exists() else None
    if target != "llvm":
        return None
    from ..targets.llvm.jit import host_info

    path = LOGS / f"llvm_{host_info()['cpu']}.log"
    return path if path.exists() else None


class ArchMismatchWarning(UserWarning):
    """A tuning log's cuda records were measured on another GPU architecture than the build's."""


def arch_mismatch(path: str | Path, arch: str) -> str | None:
    """What to say when the cuda records of the log at ``path`` were measured on a GPU
    architecture other than ``arch`` (naming both), else None."""
    from .record import _raw_records

    seen: dict[str, int] = {}
    for d in _raw_records(path, "cuda"):
        a = _cuda_arch(d["target"])
        seen[a] = seen.get(a, 0) + 1
    other = sorted((a for a in seen if a != arch), key=lambda a: -seen[a])
    if not other:
        return None
    return (f"tuning log {str(path)!r} was measured on {', '.join(other)} but this build is for {arch}: "
            "its schedules are used, their timings may not carry over")


def _cuda_arch(target: Any) -> str:
    from ..targets.cuda.target import cuda_limits
    from ..targets.target import Target

    return cuda_limits(Target(target)).arch


def gpu_target(target: Any) -> str:
    """A cuda target for the GPU present (its architecture; the target as written without one)."""
    from ..targets.cuda.target import for_present_device

    return str(for_present_device(target))


@contextlib.contextmanager
def tuning_context(log: str | None, target: Any = None) -> Any:
    """``apply_history_best(log)`` when a log is given (``vdla build|run --tuning-log``); without
    one, on ``llvm`` or ``cuda``, the committed log of this host's CPU or GPU (:func:`default_log`)
    when there is one; else nothing. ``log="none"`` applies no log at all (the hand-picked schedules).
    ``target`` may be a kind or a Target: a cuda build (its ``-arch``, else the GPU present's,
    else the default) warns once when the log's cuda records come from another architecture."""
    if log == "none":
        yield None
        return
    kind = backend_of(target) if target is not None else None
    path = Path(log) if log else default_log(kind)
    if path is None:
        yield None
        return
    from .record import apply_history_best

    if not path.exists():
        raise FileNotFoundError(f"tuning log {str(log)!r} does not exist")
    if kind == "cuda":
        why = arch_mismatch(path, _cuda_arch(gpu_target(target)))
        if why is not None:
            warnings.warn(why, ArchMismatchWarning, stacklevel=3)
    with apply_history_best(path, kind) as ctx:
        yield ctx


def make_tuner(kind: str, task: Task, seed: int, trials: int = 64) -> Any:
    """A tuner by name; XGB refits after every quarter of a short run (at most every 8 trials)."""
    from . import tuner as T

    plan = max(4, min(8, trials // 4))
    return {"xgb": lambda: T.XGBTuner(task, plan_size=plan, seed=seed), "ga": lambda: T.GATuner(task, seed=seed),
            "random": lambda: T.RandomTuner(task, seed=seed), "grid": lambda: T.GridSearchTuner(task, seed=seed)}[kind]()


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
        tun = make_tuner(tuner, task, seed, trials)
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
