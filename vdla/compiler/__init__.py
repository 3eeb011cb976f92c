"""The vdla compiler: tensor expressions, schedules, the loop IR, targets and the graph level.

The folders follow the data::

    te/         tensor expressions and operations (placeholder, compute, scan, reducers)
    schedule/   schedule primitives, bound inference, loop-nest generation, tensorize
    tir/        the loop IR: nodes, visitor, printer, arithmetic, passes/
    driver.py   lower() and build(): the pass list in order
    targets/    llvm/ (CPU code generation, JIT) and vdla/ (the accelerator)
    topi/       operator declarations and their default schedules
    graph/      whole models: IR, ONNX, passes, quantisation, partition, executor

Public entry points (re-exported by ``vdla``)::

    from vdla.compiler import te            # te.placeholder / te.compute / te.create_schedule ...
    from vdla.compiler import lower, build  # lower(s, args) -> PrimFunc; build(s, args, "llvm")
"""

from . import te
from .driver import build, lower
from .schedule.primitives import Schedule, ScheduleError, Stage, create_schedule
from .targets.llvm.jit import get_num_threads, set_num_threads
from .targets.llvm.module import ArgumentError, BuiltFunction
from .targets.llvm.target import CrossModule
from .targets.target import Target

__all__ = [
    "te",
    "lower",
    "build",
    "BuiltFunction",
    "CrossModule",
    "Target",
    "ArgumentError",
    "Schedule",
    "Stage",
    "ScheduleError",
    "create_schedule",
    "set_num_threads",
    "get_num_threads",
]
