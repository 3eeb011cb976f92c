"""Injective operators: relu, clip, broadcasting arithmetic, bias_add, batch_norm (inference).

All are tagged ``injective`` so consumers' schedules can inline them;
:func:`schedule_injective` is their default CPU schedule (all axes fused, a vectorised
inner split and a parallel outer loop).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import te
from ..tir.nodes import Expr, IntImm, convert
from .util import INJECTIVE

__all__ = [
    "relu",
    "clip",
    "broadcast_shape",
    "broadcast_to",
    "add",
    "subtract",
    "multiply",
    "divide",
    "maximum",
    "minimum",
    "power",
    "prelu",
    "bias_add",
    "batch_norm_inference",
]


def relu(x: te.Tensor) -> te.Tensor:
    """``max(x, 0)`` element-wise."""
    return te.compute(x.shape, lambda *i: te.max(x[i], te.const(0, x.dtype)), name="relu", tag=INJECTIVE)


def clip(x: te.Tensor, a_min: float, a_max: float) -> te.Tensor:
    """``min(max(x, a_min), a_max)`` element-wise."""
    if a_min > a_max:
        raise ValueError(f"clip: a_min={a_min} is larger than a_max={a_max}")
    lo, hi = te.const(a_min, x.dtype), te.const(a_max, x.dtype)
    return te.compute(x.shape, lambda *i: te.min(te.max(x[i], lo), hi), name="clip", tag=INJECTIVE)


def _is_one(e: Expr) -> bool:
    return isinstance(e, IntImm) and e.value == 1


def broadcast_shape(a: Sequence[Any], b: Sequence[Any]) -> list[Expr]:
    """numpy's broadcasting rule on (possibly symbolic) shapes."""
    a = [convert(x) for x in a]
    b = [convert(x) for x in b]
    out: list[Expr] = []
    for k in range(1, max(len(a), len(b)) + 1):
        da = a[-k] if k <= len(a) else None
        db = b[-k] if k <= len(b) else None
        if da is None or (_is_one(da) and db is not None):
            out.append(db)  # type: ignore[arg-type]
        elif db is None or _is_one(db):
            out.append(da)
        elif isinstance(da, IntImm) and isinstance(db, IntImm):
            if da.value != db.value:
                raise ValueError(f"shapes {tuple(a)} and {tuple(b)} cannot be broadcast: {da.value} vs {db.value}")
            out.append(da)
        elif da is db or not isinstance(db, IntImm):
            out.append(da)
        else:
            out.append(db)
    return list(reversed(out))


def _bcast_read(t: te.Tensor, out_shape: Sequence[Expr], idx: Sequence[Expr]) -> Expr:
    off = len(out_shape) - t.ndim
    sub = []
    for d, s in enumerate(t.shape):
        o = out_shape[off + d]
        sub.append(convert(0) if _is_one(convert(s)) and not _is_one(o) else idx[off + d])
    return t[tuple(sub)]


def broadcast_to(x: te.Tensor, shape: Sequence[Any]) -> te.Tensor:
    """``x`` broadcast to ``shape`` (numpy rules)."""
    out = broadcast_shape(x.shape, shape)
    return te.compute(out, lambda *i: _bcast_read(x, out, i), name="broadcast_to", tag=INJECTIVE)


def _binary(name: str, fn: Any, a: Any, b: Any) -> te.Tensor:
    if not isinstance(a, te.Tensor) and not isinstance(b, te.Tensor):
        raise ValueError(f"{name}: at least one operand must be a tensor")
    if not isinstance(b, te.Tensor):
        bc = b
        return te.compute(a.shape, lambda *i: fn(a[i], bc), name=name, tag=INJECTIVE)
    if not isinstance(a, te.Tensor):
        ac = a
        return te.compute(b.shape, lambda *i: fn(ac, b[i]), name=name, tag=INJECTIVE)
    out = broadcast_shape(a.shape, b.shape)
    return te.compute(
        out, lambda *i: fn(_bcast_read(a, out, i), _bcast_read(b, out, i)), name=name, tag=f"{INJECTIVE},broadcast"
    )


def add(a: Any, b: Any) -> te.Tensor:
    return _binary("add", lambda x, y: x + y, a, b)


def subtract(a: Any, b: Any) -> te.Tensor:
    return _binary("subtract", lambda x, y: x - y, a, b)


def multiply(a: Any, b: Any) -> te.Tensor:
    return _binary("multiply", lambda x, y: x * y, a, b)


def divide(a: Any, b: Any) -> te.Tensor:
    """Float division (floor division for integer tensors, as ``te.floordiv``)."""

    def div(x: Any, y: Any) -> Expr:
        e = convert(x) if not isinstance(x, int | float) else convert(y)
        if e.dtype.startswith("float"):
            return x / y
        return te.floordiv(x, y)

    return _binary("divide", div, a, b)


def maximum(a: Any, b: Any) -> te.Tensor:
    return _binary("maximum", te.max, a, b)


def minimum(a: Any, b: Any) -> te.Tensor:
    return _binary("minimum", te.min, a, b)


def power(a: Any, b: Any) -> te.Tensor:
    """``a ** b`` element-wise (float; numpy's NaN for a negative base and a fractional exponent)."""
    return _binary("power", te.power, a, b)


def prelu(x: te.Tensor, slope: Any) -> te.Tensor:
    """``x`` where ``x >= 0``, else ``x * slope`` (``slope`` broadcast to ``x``: ONNX PRelu)."""
    return _binary("prelu", lambda v, s: te.select(v < te.const(0.0, x.dtype), v * s, v), x, slope)


def _channel_check(x: te.Tensor, v: te.Tensor, axis: int, what: str) -> int:
    if axis < 0:
        axis += x.ndim
    if not 0 <= axis < x.ndim:
        raise ValueError(f"{what}: axis {axis} is out of range for a {x.ndim}-d tensor")
    if v.ndim != 1:
        raise ValueError(f"{what}: {v.name!r} must be 1-d, got shape {tuple(v.shape)}")
    xs, vs = convert(x.shape[axis]), convert(v.shape[0])
    if isinstance(xs, IntImm) and isinstance(vs, IntImm) and xs.value != vs.value:
        raise ValueError(f"{what}: {v.name!r} has {vs.value} elements but axis {axis} of {x.name!r} has {xs.value}")
    return axis


def bias_add(x: te.Tensor, bias: te.Tensor, axis: int = 1) -> te.Tensor:
    """``x + bias`` with ``bias`` along ``axis`` (channels of NCHW by default)."""
    ax = _channel_check(x, bias, axis, "bias_add")
    return te.compute(x.shape, lambda *i: x[i] + bias[i[ax]], name="bias_add", tag=INJECTIVE)


def batch_norm_inference(
    x: te.Tensor,
    gamma: te.Tensor,
    beta: te.Tensor,
    moving_mean: te.Tensor,
    moving_var: te.Tensor,
    epsilon: float = 1e-5,
    axis: int = 1,
) -> te.Tensor:
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` per channel (inference mode)."""
    ax = axis
    for v, n in ((gamma, "gamma"), (beta, "beta"), (moving_mean, "moving_mean"), (moving_var, "moving_var")):
        ax = _channel_check(x, v, axis, f"batch_norm_inference ({n})")
    eps = te.const(epsilon, x.dtype)

    def f(*i: Expr) -> Expr:
        c = i[ax]
        return (x[i] - moving_mean[c]) / te.sqrt(moving_var[c] + eps) * gamma[c] + beta[c]

    return te.compute(x.shape, f, name="batch_norm", tag=INJECTIVE)


