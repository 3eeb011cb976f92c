"""What `vdla run MODEL` and `vdla build` share: the model options, the Config, progress on stderr.

`add_model_arguments` adds the model options (``--config``, ``--reduced``, ``--size``,
``--calib``, ``--per-channel``, ``--calibration``, ``--offload``, ``-q``, ``--shape``, ``--tuning-log``,
``--no-host-ops``, ``--threads``); `model_config` is the Config they name; `threads` the thread
count of the job's parallel loops (``--threads``); `stderr_progress` the compiler's progress
callback (one updating stderr line, or None with ``-q``). ``--shape`` is read by
`vdla.compiler.graph.zoo.parse_shapes` (the library reads the same text back from a model file).
`one_line_warnings` prints the warnings of vdla's own classes (a tuning log measured on another
CPU, more threads than cores) as one ``vdla CMD: warning: ...`` line each, as `warn_host_steps` does.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from ..config import Config, preset
from .errors import CommandError, count

__all__ = ["warn_host_steps", "Progress", "add_model_arguments", "model_config", "stderr_progress", "threads",
           "check_threads", "one_line_warnings"]

#: A progress callback: takes one message.
Progress = Callable[[str], None]


def add_model_arguments(q: argparse.ArgumentParser) -> None:
    """The options of a model job (``vdla run MODEL``, ``vdla build``)."""
    q.add_argument("--config", default=None, help="configuration preset or JSON file (models; default: default)")
    q.add_argument("--reduced", action="store_true", help="the model's reduced size (for RTL simulation and tests)")
    q.add_argument("--size", type=count("--size", 1), default=None, help="input height/width of the model")
    q.add_argument("--calib", type=count("--calib", 1), default=1, help="calibration inputs for int8 quantisation")
    q.add_argument("--per-channel", action=argparse.BooleanOptionalAction, default=None,
                   help="int8 weight scales per output channel (default: the model's setting)")
    q.add_argument("--calibration", choices=("max", "percentile", "kl"), default=None,
                   help="activation calibration (default: the model's setting)")
    q.add_argument("--offload", choices=("all", "vta"), default=None,
                   help="what goes on VDLA: 'all' (every conv and dense it can map, first conv and classifier "
                   "included: ONNX files and the mobile models) or 'vta' (VTA's flow: those two stay float32 on "
                   "the CPU; ResNet-18/50, MobileNet v1) (default: the model's setting)")
    q.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    q.add_argument("--shape", action="append", default=[], metavar="NAME=d0,d1,...",
                   help="bind an ONNX input's dynamic dimensions (repeat per input)")
    q.add_argument("--tuning-log", default=None, help="a `vdla tune` log: build with its best schedules (llvm: by "
                   "default the committed log of this CPU family when there is one; 'none': the hand picks)")
    q.add_argument("--no-host-ops", action="store_true",
                   help="refuse a plan with nodes on the host's numpy kernels (exit 2) instead of warning")
    q.add_argument("--threads", type=int, default=None, metavar="N",
                   help="threads of the parallel loops on llvm (default: VDLA_NUM_THREADS or every core)")


def check_threads(n: int | None, option: str = "--threads") -> None:
    """``--threads N``: a CommandError unless 1 <= N <= the pool's most; beyond this process's cores,
    one warning (the count is still used: oversubscription is the user's call)."""
    if n is None:
        return
    from ..compiler.targets.llvm.threadpool import MAX_THREADS, check_cores

    if not 1 <= n <= MAX_THREADS:
        raise CommandError(f"{option} must be a number of threads from 1 to {MAX_THREADS}, got {n}")
    check_cores(n, f"{option} {n}")


@contextlib.contextmanager
def threads(n: int | None, option: str = "--threads") -> Iterator[None]:
    """Parallel loops on ``n`` threads for this command (None: as they are); the count before is
    restored after (`vdla.cli.main` is also called in-process)."""
    if n is None:
        yield
        return
    check_threads(n, option)
    from ..compiler.targets.llvm.threadpool import get_num_threads, set_num_threads

    old = get_num_threads()
    set_num_threads(n)
    try:
        yield
    finally:
        set_num_threads(old)


@contextlib.contextmanager
def one_line_warnings(cmd: str) -> Iterator[None]:
    """While ``vdla CMD`` runs, a warning of one of vdla's own classes is one stderr line,
    ``vdla CMD: warning: MESSAGE``; other warnings are shown as before."""
    before = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None,
             line: str | None = None) -> None:
        if (category.__module__ or "").split(".")[0] == "vdla":
            print(f"vdla {cmd}: warning: {' '.join(str(message).split())}", file=sys.stderr)
        else:
            before(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        if warnings.showwarning is show:
            warnings.showwarning = before


def warn_host_steps(cmd: str, line: str | None) -> None:
    """Print a plan's host-step warning (:func:`vdla.compiler.graph.executor.host_warning`) on stderr, once."""
    if line:
        print(f"vdla {cmd}: warning: {line}", file=sys.stderr)


def model_config(args: argparse.Namespace) -> Config:
    """The Config of a model job: ``--config`` (default: the default preset)."""
    return preset(args.config or "default")


def stderr_progress(enabled: bool = True) -> Progress | None:
    """Progress messages on one updating stderr line (`vdla.progress.status`): None when
    ``enabled`` is false (``-q``), stderr is not a terminal, or ``VDLA_PROGRESS=0``."""
    from .. import progress

    return progress.status() if enabled else None
