"""Scalar helpers of the expression language: selection, integer division, math calls, limits.

``tir.if_then_else``, ``tir.exp``, ``tir.max_value`` ... as in TVM's ``tvm.tir`` (the math
functions are calls the code generators map onto intrinsics); ``vdla.te`` re-exports them
as TVM's ``tvm.te`` does.
"""

from __future__ import annotations

from typing import Any

from . import dtypes
from .nodes import Call, Expr, Logic, Select, as_bool, binary, convert, make_const


def if_then_else(cond: Any, t: Any, f: Any) -> Expr:
    """``t`` if ``cond`` else ``f``; only the taken branch is evaluated (safe for padding)."""
    c = as_bool(cond)
    tmp = binary("add", t, f)  # promote the two branches to one dtype
    return Select(c, tmp.a, tmp.b, tmp.dtype, lazy=True)


def select(cond: Any, t: Any, f: Any) -> Expr:
    """Like :func:`if_then_else` but both branches may be evaluated."""
    c = as_bool(cond)
    tmp = binary("add", t, f)
    return Select(c, tmp.a, tmp.b, tmp.dtype, lazy=False)


def _float_call(name: str, x: Any) -> Expr:
    e = convert(x)
    if not dtypes.is_float(e.dtype):
        e = e.astype("float32")
    return Call(name, [e], e.dtype)


def exp(x: Any) -> Expr:
    return _float_call("exp", x)


def log(x: Any) -> Expr:
    return _float_call("log", x)


def sqrt(x: Any) -> Expr:
    return _float_call("sqrt", x)


def tanh(x: Any) -> Expr:
    return _float_call("tanh", x)


def floor(x: Any) -> Expr:
    return _float_call("floor", x)


def ceil(x: Any) -> Expr:
    return _float_call("ceil", x)


def sigmoid(x: Any) -> Expr:
    e = convert(x)
    if not dtypes.is_float(e.dtype):
        e = e.astype("float32")
    one = make_const(1, e.dtype)
    return one / (one + exp(-e))


def abs(x: Any) -> Expr:  # noqa: A001
    e = convert(x)
    if dtypes.is_float(e.dtype):
        return Call("fabs", [e], e.dtype)
    if dtypes.is_uint(e.dtype):
        return e
    return Select(e < 0, -e, e, e.dtype)


def power(x: Any, y: Any) -> Expr:
    t = binary("add", x, y)
    a, b = t.a, t.b
    if not dtypes.is_float(a.dtype):
        a, b = a.astype("float32"), b.astype("float32")
    return Call("pow", [a, b], a.dtype)


def all(*conds: Any) -> Expr:  # noqa: A001
    """Logical and of the arguments."""
    if not conds:
        return make_const(True, "bool")
    out = as_bool(conds[0])
    for c in conds[1:]:
        out = Logic("and", out, as_bool(c))
    return out


def any(*conds: Any) -> Expr:  # noqa: A001
    """Logical or of the arguments."""
    if not conds:
        return make_const(False, "bool")
    out = as_bool(conds[0])
    for c in conds[1:]:
        out = Logic("or", out, as_bool(c))
    return out


def max_value(dtype: str) -> Expr:
    return make_const(dtypes.max_value(dtype), dtype)


def min_value(dtype: str) -> Expr:
    return make_const(dtypes.min_value(dtype), dtype)
