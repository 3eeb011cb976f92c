"""Tensor expressions: declare *what* to compute, as in TVM's ``tvm.te``::

    A = te.placeholder((n, k), "float32", name="A")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[j, r], axis=r), name="C")
    s = te.create_schedule(C.op)

Modules: :mod:`.operation` (tensors, placeholder/compute/scan), :mod:`.reduction`
(sum/max/min, comm_reducer), :mod:`.intrinsics` (scalar helpers and math calls). The
schedule-level names TVM users reach through ``te`` (``create_schedule``,
``decl_tensor_intrin``, ``call_extern``) come from :mod:`vdla.compiler.schedule`,
which builds on this package; they are looked up when first used.
"""

from __future__ import annotations

from typing import Any

from .intrinsics import (
    abs,
    all,
    any,
    ceil,
    exp,
    floor,
    floordiv,
    floormod,
    if_then_else,
    log,
    max_value,
    min_value,
    power,
    select,
    sigmoid,
    sqrt,
    tanh,
    truncdiv,
    truncmod,
)
from .operation import (
    ComputeOp,
    ExternOp,
    IterVar,
    Operation,
    PlaceholderOp,
    Range,
    ScanOp,
    Tensor,
    TensorError,
    compute,
    const,
    extern,
    placeholder,
    reduce_axis,
    scan,
    size_var,
    thread_axis,
    var,
)
from .reduction import CommReducer, comm_reducer, max, min, sum

# name -> (module, attribute): schedule-level names, imported on first use because
# the schedule package itself imports this one.
_SCHEDULE_NAMES = {
    "create_schedule": ("..schedule.primitives", "create_schedule"),
    "decl_tensor_intrin": ("..schedule.tensorize", "decl_tensor_intrin"),
    "call_extern": ("..schedule.tensorize", "call_extern"),
}


def __getattr__(name: str) -> Any:
    if name in _SCHEDULE_NAMES:
        import importlib

        module, attr = _SCHEDULE_NAMES[name]
        value = getattr(importlib.import_module(module, __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Range", "IterVar", "Tensor", "Operation", "PlaceholderOp", "ComputeOp", "ScanOp", "ExternOp", "extern", "CommReducer", "TensorError",
    "placeholder", "compute", "scan", "reduce_axis", "thread_axis", "var", "size_var", "const", "comm_reducer",
    "sum", "max", "min", "if_then_else", "select", "floordiv", "floormod", "truncdiv", "truncmod", "exp", "log",
    "sqrt", "tanh", "sigmoid", "abs", "power", "floor", "ceil", "all", "any", "max_value", "min_value",
    "create_schedule", "decl_tensor_intrin", "call_extern",
]
