"""``vdla run FILE``: run a program file, or compile, run and check a model, and print the report.

    vdla run prog.vdla [--device fsim] [--json]
    vdla run MODEL [--device fsim] [--reduced] [--json] [--tuning-log LOG] [--threads N]
    vdla run MODEL --compare          llvm, cuda and VDLA in one table (`vdla.compiler.graph.compare`)
    vdla run MODEL --target llvm|cuda the float model on this CPU or a GPU, through the graph executor

Every model runs through the one graph executor (`vdla.compiler.graph.executor`).

MODEL is a built-in model, an .onnx file or a compiled model file (`vdla build`); the
model options are `vdla.cli.common`'s, ``--waves`` / ``--plot`` `vdla.cli.outputs`'.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from . import outputs
from .common import add_model_arguments, model_config, stderr_progress, threads, warn_host_steps
from .errors import CommandError, count

__all__ = ["add_parser", "run", "is_program", "run_model", "run_float_model", "run_compare"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``vdla run``."""
    q = sub.add_parser("run", help="run a program file, or a model (built-in name, .onnx, compiled .vdla) on a device")
    q.add_argument("file", help="program file, built-in model (resnet18, resnet50, mobilenet_v1, dqn, lstm_lm, digits, ...), "
                   ".onnx or compiled model")
    q.add_argument("--device", default="fsim", help="fsim, pysim, verilator, ...")
    q.add_argument("--json", action="store_true")
    q.add_argument("--lenient", action="store_true", help="report leftover tokens and races as warnings")
    add_model_arguments(q)
    q.add_argument("--seed", type=count("--seed"), default=0, help="seed of the synthetic input (models)")
    q.add_argument("--no-fp32-check", action="store_true", help="skip the fp32 onnxruntime cross-check (models)")
    q.add_argument("--target", default=None,
                   help="llvm or cuda (built for the GPU present; 'cuda -arch=sm_90' names one): run the float32 "
                        "model on this CPU or a GPU")
    q.add_argument("--compare", action="store_true",
                   help="one table of the model on llvm (this CPU, fp32), cuda (the GPU, if any) and VDLA (int8)")
    outputs.add_arguments(q)
    q.set_defaults(fn=run)


def is_program(path: str) -> bool:
    """Whether ``path`` is a program file (`vdla asm`'s output), by its magic bytes."""
    from ..runtime.program import MAGIC

    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def run(args: argparse.Namespace) -> int:
    """``vdla run``: a program file, or a model (compiled here unless it is a compiled model file)."""
    from ..runtime import Device, Program

    if getattr(args, "compare", False):  # vdla run MODEL --compare: llvm, cuda and VDLA in one table
        return run_compare(args)
    if getattr(args, "target", None):  # vdla run MODEL --target llvm|cuda: the float model on one target
        return run_float_model(args)
    if not is_program(args.file):
        return run_model(args)
    prog = Program.load(args.file)
    with Device(args.device, config=prog.config, **outputs.device_options(args)) as dev:
        report = dev.run(prog, strict=not args.lenient)
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.table())
    outputs.write(args, report=report, name=prog.name or Path(args.file).stem)
    return 0


def run_model(args: argparse.Namespace) -> int:
    """``vdla run MODEL``: a built-in model, an .onnx file or a compiled model file."""
    from ..compiler.autotvm.tuning import tuning_context
    from ..compiler.graph.executor import host_warning
    from ..compiler.graph.job import run_job
    from ..compiler.graph.zoo import parse_shapes
    from ..progress import close as close_progress

    progress = stderr_progress(not args.quiet)
    with threads(args.threads), tuning_context(getattr(args, "tuning_log", None)):
        res = run_job(args.file, args.device, model_config(args), reduced=args.reduced, size=args.size,
                      seed=args.seed, calib=args.calib, check_fp32=not args.no_fp32_check, progress=progress,
                      per_channel=args.per_channel, calibration=args.calibration, offload=args.offload,
                      device_options=outputs.device_options(args), shapes=parse_shapes(args.shape),
                      host_ops=not args.no_host_ops)
    close_progress(progress)
    warn_host_steps("run", host_warning([(r.node, r.op, r.target, r.reason) for r in res.layers]))
    print(json.dumps(res.to_dict(), indent=2) if args.json else res.table())
    outputs.write(args, job=res)
    return 0 if res.ok else 1


def run_float_model(args: argparse.Namespace) -> int:
    """``vdla run MODEL --target llvm|cuda``: the float model's plan and times, checked against
    the numpy fp32 reference (exit 1 on a mismatch); without a GPU a cuda model compiles, then
    the error says so."""
    from ..compiler.autotvm.tuning import tuning_context
    from ..compiler.graph.compare import run_float
    from ..compiler.targets.target import Target, TargetError

    try:  # a target that does not parse, is not a float one or names an unknown architecture
        target = Target(args.target)
        with threads(args.threads), tuning_context(getattr(args, "tuning_log", None), target):
            res = run_float(args.file, target, reduced=args.reduced, size=args.size, seed=args.seed,
                            progress=_stderr_lines(args), host_ops=not args.no_host_ops)
    except TargetError as e:
        raise CommandError(f"--target {args.target!r}: {e}") from None
    warn_host_steps("run", res.model.host_warning())
    print(res.table())
    return 0 if res.ok else 1


def run_compare(args: argparse.Namespace) -> int:
    """``vdla run MODEL --compare [--target 'cuda -arch=sm_90'] [--json]``: the table (exit 1 if a check fails)."""
    from ..compiler.autotvm.tuning import tuning_context
    from ..compiler.graph.compare import compare

    with threads(args.threads), tuning_context(getattr(args, "tuning_log", None)):
        res = compare(args.file, model_config(args), reduced=args.reduced, size=args.size, seed=args.seed,
                      calib=args.calib, cuda_target=args.target or "cuda", device=args.device,
                      progress=_stderr_lines(args))
    print(json.dumps(res.to_dict(), indent=2) if args.json else res.table())
    return 0 if res.ok else 1


def _stderr_lines(args: argparse.Namespace) -> Callable[[str], None] | None:
    """Progress as plain stderr lines (the float and compare runs are few steps; ``-q``: none)."""
    if args.quiet:
        return None
    return lambda msg: print(msg, file=sys.stderr)
