"""Comparisons, logic and selection: ``equal`` / ``less`` / ``less_equal`` / ``greater`` /
``greater_equal`` (float32 or int32 operands), ``logical_not`` / ``logical_and`` /
``logical_or`` and ``where(cond, x, y)``, with their numpy semantics (ONNX's Equal, Less, ...,
Not, And, Or, Where).

The graph level has no bool type: a condition is ``uint8`` holding 0 or 1 (what the
comparisons and logic ops produce); ``where`` reads any non-zero byte as true. All of them
broadcast every operand both ways, as ONNX does (the output has the broadcast shape).
Each op registers itself (:func:`.registry.register`) when this module is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import TensorType
from .registry import _err, register

__all__ = ["COMPARE", "LOGIC"]

#: graph op -> numpy comparison (uint8 0/1 out)
COMPARE = {"equal": np.equal, "less": np.less, "less_equal": np.less_equal, "greater": np.greater,
           "greater_equal": np.greater_equal}
#: graph op -> numpy logic on uint8 conditions (uint8 0/1 out)
LOGIC = {"logical_not": np.logical_not, "logical_and": np.logical_and, "logical_or": np.logical_or}


def _shape(ts: list[TensorType], op: str) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*(t.shape for t in ts)))
    except ValueError:
        raise _err(f"{op}: shapes {', '.join(str(t) for t in ts)} do not broadcast") from None


def _compare_infer(op: str):
    def infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
        a, b = ts
        if a.dtype != b.dtype or a.dtype not in ("float32", "int32"):
            raise _err(f"{op} compares two float32 or two int32 values, got {a} and {b}")
        return TensorType(_shape(ts, op), "uint8")

    return infer


def _compare(fn):
    return lambda at, xs: fn(xs[0], xs[1]).astype(np.uint8)


for _op, _fn in COMPARE.items():
    register(_op, "elemwise", (2, 2))((_compare_infer(_op), _compare(_fn)))


def _logic_infer(op: str):
    def infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
        if any(t.dtype != "uint8" for t in ts):
            raise _err(f"{op} takes uint8 conditions (0 or 1), got {', '.join(str(t) for t in ts)}")
        return TensorType(_shape(ts, op), "uint8")

    return infer


register("logical_not", "elemwise", (1, 1))(
    (_logic_infer("logical_not"), lambda at, xs: np.logical_not(xs[0]).astype(np.uint8))
)
for _op in ("logical_and", "logical_or"):
    register(_op, "elemwise", (2, 2))((_logic_infer(_op), _compare(LOGIC[_op])))


def _where_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    c, x, y = ts
    if c.dtype != "uint8":
        raise _err(f"where: the condition must be uint8 (0 or 1: a comparison's output), got {c}")
    if x.dtype != y.dtype:
        raise _err(f"where: the two branches differ in dtype ({x} vs {y})")
    return TensorType(_shape(ts, "where"), x.dtype)


#: ``cond ? x : y`` element-wise, all three broadcast to the output
register("where", "injective", (3, 3))(
    (_where_infer, lambda at, xs: np.ascontiguousarray(np.where(xs[0] != 0, xs[1], xs[2])))
)
