"""The vdla compiler: tensor expressions, schedules, loop IR, passes and code generators.

Public entry points (re-exported by ``vdla``)::

    from vdla.compiler import te            # te.placeholder / te.compute / te.create_schedule ...
    from vdla.compiler import lower, build  # lower(s, args) -> PrimFunc; build(s, args, "llvm")
"""

from . import te
from .build import ArgumentError, BuiltFunction, build
from .codegen.jit import get_num_threads, set_num_threads
from .codegen.target import CrossModule, Target
from .lower import lower
from .schedule import Schedule, ScheduleError, Stage, create_schedule

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
