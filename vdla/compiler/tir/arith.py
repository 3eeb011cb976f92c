"""Integer arithmetic analysis: structural keys, canonical linear forms, constant bounds.

* :func:`skey` gives a hashable structural key (two expressions with equal keys compute
  the same value).
* :func:`linear` splits an integer expression into ``sum(coef * atom) + const``.
* :func:`const_bound` gives a constant interval for an expression from known variable
  ranges (loop variables), or None where unbounded.
"""

from __future__ import annotations

from typing import Any

from . import dtypes
from .nodes import BinOp, Broadcast, Cast, Expr, IntImm, Ramp, Select, Var, make_const

Bound = tuple[int | None, int | None]


def skey(e: Any) -> Any:
    """A hashable structural key of an expression (Vars by identity)."""
    k = getattr(e, "_skey", None)
    if k is not None:
        return k
    if isinstance(e, Var):
        k = ("var", id(e))
    elif isinstance(e, IntImm):
        k = ("int", e.value, e.dtype)
    elif isinstance(e, Expr):
        from .visitor import child_fields

        parts: list[Any] = [type(e).__name__]
        for name in ("op", "dtype", "name", "lanes", "lazy", "dim"):
            if hasattr(e, name):
                parts.append(getattr(e, name))
        for name in child_fields(type(e)):
            v = getattr(e, name)
            if isinstance(v, Expr):
                parts.append(skey(v))
            elif isinstance(v, list):
                parts.append(tuple(skey(x) if isinstance(x, Expr) else id(x) for x in v))
            elif isinstance(v, int | float | str):  # a constant's value (FloatImm): by value, not identity
                parts.append(v)
            else:
                parts.append(id(v) if v is not None else None)
        if hasattr(e, "value") and not isinstance(getattr(e, "value", None), Expr):
            parts.append(e.value)
        if hasattr(e, "axis"):
            parts.append(tuple(id(iv) for iv in e.axis))
            parts.append(id(e.combiner))
        if hasattr(e, "tensor"):
            parts.append(id(e.tensor))
        if hasattr(e, "buffer"):
            parts.append(id(e.buffer))
        k = tuple(parts)
    else:
        return ("obj", id(e))
    try:
        object.__setattr__(e, "_skey", k)
    except AttributeError:  # pragma: no cover
        pass
    return k


def equal(a: Expr, b: Expr) -> bool:
    return a is b or skey(a) == skey(b)


class Linear:
    """``sum(coef * atom) + const`` over one integer dtype."""

    __slots__ = ("terms", "const", "dtype")

    def __init__(self, dtype: str, terms: dict[Any, list[Any]] | None = None, const: int = 0) -> None:
        self.dtype = dtype
        self.terms: dict[Any, list[Any]] = terms if terms is not None else {}  # key -> [atom, coef]
        self.const = const

    def copy(self) -> Linear:
        return Linear(self.dtype, {k: [a, c] for k, (a, c) in self.terms.items()}, self.const)

    def add(self, o: Linear, sign: int = 1) -> Linear:
        r = self.copy()
        for k, (a, c) in o.terms.items():
            if k in r.terms:
                r.terms[k][1] += sign * c
                if r.terms[k][1] == 0:
                    del r.terms[k]
            else:
                r.terms[k] = [a, sign * c]
        r.const += sign * o.const
        return r

    def scale(self, s: int) -> Linear:
        if s == 0:
            return Linear(self.dtype)
        return Linear(self.dtype, {k: [a, c * s] for k, (a, c) in self.terms.items()}, self.const * s)

    def is_const(self) -> bool:
        return not self.terms

    def to_expr(self) -> Expr:
        dt = self.dtype
        out: Expr | None = None
        neg: list[Expr] = []
        for a, c in self.terms.values():
            if c == 0:
                continue
            if c > 0:
                t = a if c == 1 else BinOp("mul", a, make_const(c, dt), dt)
                out = t if out is None else BinOp("add", out, t, dt)
            else:
                neg.append(a if c == -1 else BinOp("mul", a, make_const(-c, dt), dt))
        for t in neg:
            out = BinOp("sub", make_const(0, dt) if out is None else out, t, dt)
        if out is None:
            return make_const(self.const, dt)
        if self.const > 0:
            out = BinOp("add", out, make_const(self.const, dt), dt)
        elif self.const < 0:
            out = BinOp("sub", out, make_const(-self.const, dt), dt)
        return out


def _is_index_int(e: Expr) -> bool:
    return dtypes.is_int(e.dtype) and dtypes.lanes(e.dtype) == 1


def linear(e: Expr) -> Linear:
    """Canonical linear form of a scalar integer expression (non-linear parts become atoms)."""
    dt = e.dtype
    if isinstance(e, IntImm):
        return Linear(dt, const=e.value)
    if isinstance(e, BinOp) and e.op in ("add", "sub"):
        return linear(e.a).add(linear(e.b), 1 if e.op == "add" else -1)
    if isinstance(e, BinOp) and e.op == "mul":
        la, lb = linear(e.a), linear(e.b)
        if lb.is_const():
            return la.scale(lb.const)
        if la.is_const():
            return lb.scale(la.const)
    return Linear(dt, {skey(e): [e, 1]}, 0)


# ---------------------------------------------------------------------------- bounds


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _mul_bound(a: Bound, b: Bound) -> Bound:
    if None in a or None in b:
        # handle the common non-negative cases
        if a[0] is not None and b[0] is not None and a[0] >= 0 and b[0] >= 0:
            return (a[0] * b[0], None)
        return (None, None)
    prods = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]  # type: ignore[operator]
    return (min(prods), max(prods))


def const_bound(e: Expr, ranges: dict[Var, Bound]) -> Bound:
    """Constant (lo, hi) of a scalar integer expression; None for an unbounded side."""
    if isinstance(e, IntImm):
        return (e.value, e.value)
    if isinstance(e, Var):
        return ranges.get(e, (None, None))
    if isinstance(e, Cast):
        if dtypes.is_int(e.dtype) and (dtypes.is_int(e.value.dtype) or dtypes.is_bool(e.value.dtype)):
            if dtypes.bits(e.dtype) >= dtypes.bits(e.value.dtype):
                return const_bound(e.value, ranges)
        return (None, None)
    if isinstance(e, BinOp):
        if e.op in ("add", "sub", "mul", "min", "max", "floordiv", "floormod", "truncdiv", "truncmod"):
            a = const_bound(e.a, ranges)
            b = const_bound(e.b, ranges)
            if e.op == "add":
                return (_add(a[0], b[0]), _add(a[1], b[1]))
            if e.op == "sub":
                return (
                    None if a[0] is None or b[1] is None else a[0] - b[1],
                    None if a[1] is None or b[0] is None else a[1] - b[0],
                )
            if e.op == "mul":
                return _mul_bound(a, b)
            if e.op == "min":
                lo = None if a[0] is None or b[0] is None else min(a[0], b[0])
                hi = a[1] if b[1] is None else b[1] if a[1] is None else min(a[1], b[1])
                return (lo, hi)
            if e.op == "max":
                hi = None if a[1] is None or b[1] is None else max(a[1], b[1])
                lo = a[0] if b[0] is None else b[0] if a[0] is None else max(a[0], b[0])
                return (lo, hi)
            if b[0] is not None and b[0] == b[1] and b[0] > 0:
                c = b[0]
                if e.op in ("floordiv", "truncdiv"):
                    if e.op == "truncdiv" and (a[0] is None or a[0] < 0):
                        return (None, None)
                    return (None if a[0] is None else a[0] // c, None if a[1] is None else a[1] // c)
                if e.op == "floormod" or (a[0] is not None and a[0] >= 0):
                    if a[0] is not None and a[1] is not None and a[0] // c == a[1] // c:
                        return (a[0] % c, a[1] % c)
                    return (0, c - 1)
            return (None, None)
    if isinstance(e, Select):
        a = const_bound(e.t, ranges)
        b = const_bound(e.f, ranges)
        return (
            None if a[0] is None or b[0] is None else min(a[0], b[0]),
            None if a[1] is None or b[1] is None else max(a[1], b[1]),
        )
    if isinstance(e, Ramp | Broadcast):
        return (None, None)
    return (None, None)


def is_nonneg(e: Expr, ranges: dict[Var, Bound]) -> bool:
    lo = const_bound(e, ranges)[0]
    return lo is not None and lo >= 0
