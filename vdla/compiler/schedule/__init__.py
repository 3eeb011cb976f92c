"""Schedules: *how* to compute the tensors declared with ``te``, and how that becomes loops.

Modules, in the order the driver uses them: :mod:`.primitives` (Schedule, Stage and
the primitives that record split/fuse/reorder/compute_at/cache/bind ...),
:mod:`.bound` (the region of a tensor each stage needs), :mod:`.loop_nest` (the
schedule turned into loop nests of the loop IR, with guards, inlining and scans) and
:mod:`.tensorize` (a stage's inner loops replaced by a declared tensor intrinsic).
"""

from .primitives import Fuse, Schedule, ScheduleError, Split, Stage, create_schedule
from .tensorize import TensorIntrin, call_extern, decl_tensor_intrin

__all__ = [
    "Schedule", "Stage", "ScheduleError", "Split", "Fuse", "create_schedule", "TensorIntrin", "decl_tensor_intrin",
    "call_extern",
]
