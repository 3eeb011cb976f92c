"""``vdla tune MODEL|OP``: tune every distinct workload of a model, or one operator.

    vdla tune resnet18 --target vdla --trials 64 --tuner xgb --log resnet18.log [--reduced]
    vdla tune C5 --target llvm --trials 32 --tuner ga --log c5.log          (a ResNet-18 layer)
    vdla tune conv2d_packed.vdla --args '[[1,4,56,56,1,16], ...]' --target vdla ...
    vdla tune resnet18 --target cuda --trials 200 --log r18_cuda.log --scheduler tcp://gpu-host:8786

The tasks and the tuning are `vdla.compiler.autotvm.tuning`'s (`model_tasks`, `layer_task`,
`tune_tasks`): each task is tuned with a progress bar (best so far, trials/s, errors), its
measurements appended to ``--log`` (an existing log resumes), and a summary table compares
the best point with the hand-picked schedule. Measurements run on the Dask cluster of
``--scheduler`` (or ``VDLA_SCHEDULER``; else a local cluster, one worker per core). On
``cuda`` the points are built on every worker and timed on a worker holding a GPU (a Dask
resource ``GPU=1``, or this machine's GPU with a local cluster); the tasks are created for
that GPU's architecture; with no GPU anywhere it stops before measuring, in one line. A model's
cuda tasks are those of every implementation of each convolution (the direct template, and
Winograd for a 3x3 stride-1 one, the 1x1 GEMM for a 1x1 stride-1 one), so that building with
the log (``vdla build|run --tuning-log``) runs the fastest (:mod:`vdla.compiler.graph.strategy.cuda`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..compiler.autotvm.tuning import TUNERS
from .common import check_threads
from .errors import CommandError

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``vdla tune``."""
    q = sub.add_parser("tune", help="auto-tune a model's (or one operator's) schedules; log the measurements")
    q.add_argument("model", help="built-in model, .onnx, a ResNet-18 layer (C1-C12) or a template name (with --args)")
    q.add_argument("--target", choices=("llvm", "cuda", "vdla"), default="vdla")
    q.add_argument("--device", default="fsim", help="vdla measurements: fsim (cycle model) or verilator")
    q.add_argument("--trials", type=int, default=64, help="measurements per task (an existing log's count)")
    q.add_argument("--tuner", choices=TUNERS, default="xgb")
    q.add_argument("--log", required=True, help="JSON-lines log to append to (resumes when it exists)")
    q.add_argument("--scheduler", default=None, help="Dask scheduler address (default: VDLA_SCHEDULER or local)")
    q.add_argument("--args", default=None, help="a template's arguments as JSON (with a template name)")
    q.add_argument("--config", default="default", help="VDLA configuration preset")
    q.add_argument("--reduced", action="store_true", help="the model's reduced size")
    q.add_argument("--size", type=int, default=None, help="input height/width of the model")
    q.add_argument("--threads", type=int, default=None, metavar="N",
                   help="llvm: threads of the measured kernels (more than the cores: used, with a warning)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    q.set_defaults(fn=run)


def _tasks(args: argparse.Namespace) -> list[Any]:
    """The tasks the arguments name: a template with ``--args``, a ResNet-18 layer, or a model's."""
    from ..compiler.autotvm.task import TaskError, create
    from ..compiler.autotvm.tuning import layer_task, model_tasks

    target = args.target
    if args.args is not None:
        try:
            targs = json.loads(args.args)
        except json.JSONDecodeError as e:
            raise TaskError(f"--args is not JSON: {e.msg} at column {e.colno}") from None
        return [create(args.model, targs, target)]
    if args.model.startswith("C") and args.model[1:].isdigit():
        return [layer_task(args.model, target, args.config)]
    return model_tasks(args.model, target, args.config, args.reduced, args.size)


def _gpu_target(client: Any) -> str:
    """``cuda -arch=...`` of the cluster's GPU worker; a one-line CommandError when there is none."""
    from ..compiler.autotvm.measure_cuda import NoCudaDevice, gpu_workers
    from ..compiler.targets.cuda.target import for_device

    try:
        gpus = gpu_workers(client)
    except NoCudaDevice as e:
        raise CommandError(str(e)) from None
    return str(for_device("cuda", gpus.arch))


def _prepare_device(tasks: list[Any], device: str, quiet: bool = False) -> None:
    """Open ``device`` once here for every configuration the tasks build for: a device that does
    not exist fails now rather than in every measurement, and a Verilator model is built here
    (minutes, once; cached under ``sim_build/``, where the local workers find it) rather than
    inside a measurement's time limit."""
    from ..runtime import Device

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
                from ..simulator.rtl.verilator import build_library

                if not quiet:
                    print(f"vdla tune: the Verilator model of config {cfg.name!r} (built once, cached in sim_build/)",
                          file=sys.stderr)
                build_library(cfg)
        finally:
            dev.close()


def run(args: argparse.Namespace) -> int:
    """The ``vdla tune`` job: tune, then print the summary table; returns the exit status."""
    from .. import cluster
    from ..compiler.autotvm.callback import format_score
    from ..compiler.autotvm.measure import LocalBuilder, LocalRunner, measure_option
    from ..compiler.autotvm.tuning import tune_tasks

    if args.trials <= 0:
        raise CommandError(f"--trials must be a positive number of trials, got {args.trials}")
    check_threads(args.threads)  # 1 or more; beyond the cores, said once (the workers do not repeat it)
    tasks = _tasks(args)  # a TaskError goes to vdla.cli.errors.report
    client = None
    target = args.target
    if args.target == "cuda" and tasks:  # the GPU worker's architecture names the tasks (and none: one line)
        from ..compiler.autotvm.task import create

        client = cluster.get_client(args.scheduler)
        target = _gpu_target(client)
        tasks = [create(t.name, t.args, target) for t in tasks]
    if not tasks:
        raise CommandError(f"{args.model} has no tunable workload on {args.target}")
    if args.target == "vdla":
        try:
            _prepare_device(tasks, args.device, args.quiet)
        except Exception as e:  # noqa: BLE001 - a device name, a missing simulator, a failed Verilator build
            raise CommandError(f"--device {args.device}: {type(e).__name__}: {e}") from e
    workers = None
    if args.target == "llvm":  # a CPU measurement runs its threads on the cores: one at a time per core set
        from ..compiler.targets.llvm.threadpool import available_cores

        workers = max(1, available_cores() // (args.threads or available_cores()))
    client = client or cluster.get_client(args.scheduler, n_workers=workers)  # a ClusterError: errors.report
    if args.target == "cuda":  # TVM's GPU tutorial's runner: CUDA events, a few repeats of >= 1 ms
        runner = LocalRunner(number=4, repeat=3, min_repeat_ms=1.0, timeout=10)
    else:
        runner = LocalRunner(number=3 if args.target == "llvm" else 1, repeat=3 if args.target == "llvm" else 1,
                             timeout=60, device=args.device, threads=args.threads)
    option = measure_option(LocalBuilder(timeout=30), runner, client=client)
    log = Path(args.log)
    print(f"vdla tune: {len(tasks)} task(s) on {target}, {args.trials} trials each, tuner {args.tuner}, "
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
