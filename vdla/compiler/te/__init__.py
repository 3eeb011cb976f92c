"""Tensor expressions: declare *what* to compute, as in TVM's ``tvm.te``::

    A = te.placeholder((n, k), "float32", name="A")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[j, r], axis=r), name="C")
    s = te.create_schedule(C.op)

Modules: :mod:`.operation` (tensors, placeholder/compute/scan), :mod:`.reduction`
(sum/max/min, comm_reducer); the scalar helpers and math calls (``te.exp``,
``te.if_then_else`` ...) are tir's (:mod:`vdla.compiler.tir.scalar`), as in TVM. The
schedule-level names TVM users reach through ``te`` (``create_schedule``,
``decl_tensor_intrin``, ``call_extern``) come from :mod:`vdla.compiler.schedule`,
which builds on this package; they are looked up when first used.
"""

from __future__ import annotations

from typing import Any

from ...compat.aliases import module_getattr
from ..tir.op import floordiv, floormod, truncdiv, truncmod
from ..tir.scalar import (
    abs,
    all,
    any,
    ceil,
    exp,
    floor,
    if_then_else,
    log,
    max_value,
    min_value,
    power,
    select,
    sigmoid,
    sqrt,
    tanh,
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


_compat_getattr = module_getattr(__name__)


def __getattr__(name: str) -> Any:
    if name in _SCHEDULE_NAMES:
        import importlib

        module, attr = _SCHEDULE_NAMES[name]
        value = getattr(importlib.import_module(module, __name__), attr)
        globals()[name] = value
        return value
    return _compat_getattr(name)  # TVM's names vdla does not have (te.create_prim_func) say what to use


__all__ = [
    "Range", "IterVar", "Tensor", "Operation", "PlaceholderOp", "ComputeOp", "ScanOp", "ExternOp", "extern", "CommReducer", "TensorError",
    "placeholder", "compute", "scan", "reduce_axis", "thread_axis", "var", "size_var", "const", "comm_reducer",
    "sum", "max", "min", "if_then_else", "select", "floordiv", "floormod", "truncdiv", "truncmod", "exp", "log",
    "sqrt", "tanh", "sigmoid", "abs", "power", "floor", "ceil", "all", "any", "max_value", "min_value",
    "create_schedule", "decl_tensor_intrin", "call_extern",
]
