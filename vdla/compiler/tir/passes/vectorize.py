"""Vectorization: a loop marked ``vectorized`` becomes vector operations on Ramp/Broadcast.

The loop variable becomes ``ramp(min, 1, lanes)``; loop-invariant values stay scalar and
are broadcast where they meet vectors.  Contiguous accesses end up as
``buf[ramp(base, 1, n)]`` (one vector load/store).  A body that cannot be vectorized
safely (a store whose address does not depend on the loop, a guarded load under a
vector condition, allocations) keeps a serial loop annotated for LLVM's loop vectorizer.
"""

from __future__ import annotations

from typing import Any

from .. import dtypes
from ..nodes import (
    AttrStmt,
    BinOp,
    Broadcast,
    BufferLoad,
    BufferStore,
    Call,
    Cast,
    Cmp,
    Evaluate,
    Expr,
    For,
    IfThenElse,
    IntImm,
    Logic,
    Not,
    Ramp,
    Select,
    Seq,
    Stmt,
    Var,
)
from ..visitor import post_order_map, walk
from .simplify import simplify_expr


class _Cannot(Exception):
    pass


def _lanes(e: Expr) -> int:
    return dtypes.lanes(e.dtype)


def _bcast(e: Expr, n: int) -> Expr:
    if _lanes(e) == n:
        return e
    return Broadcast(e, n, dtypes.with_lanes(e.dtype, n))


class _Vectorizer:
    def __init__(self, var: Var, mn: Expr, n: int) -> None:
        self.var = var
        self.n = n
        self.ramp = Ramp(mn, IntImm(1, mn.dtype), n, dtypes.with_lanes(var.dtype, n))

    def expr(self, e: Expr) -> Expr:
        n = self.n
        if e is self.var:
            return self.ramp
        if isinstance(e, Ramp | Broadcast):
            raise _Cannot("nested vectorization")
        if isinstance(e, BinOp | Cmp | Logic):
            a, b = self.expr(e.a), self.expr(e.b)
            if a is e.a and b is e.b:
                return e
            if _lanes(a) == 1 and _lanes(b) == 1:
                return type(e)(e.op, a, b, e.dtype)
            a, b = _bcast(a, n), _bcast(b, n)
            return simplify_expr(type(e)(e.op, a, b, dtypes.with_lanes(e.dtype, n)))
        if isinstance(e, Not):
            a = self.expr(e.a)
            return e if a is e.a else Not(a, a.dtype)
        if isinstance(e, Cast):
            v = self.expr(e.value)
            if v is e.value:
                return e
            return Cast(dtypes.with_lanes(e.dtype, _lanes(v)), v)
        if isinstance(e, Select):
            c, t, f = self.expr(e.cond), self.expr(e.t), self.expr(e.f)
            if c is e.cond and t is e.t and f is e.f:
                return e
            lanes = max(_lanes(c), _lanes(t), _lanes(f))
            if e.lazy and _lanes(c) > 1:
                has_load = any(isinstance(x, BufferLoad) for x in walk(t)) or any(
                    isinstance(x, BufferLoad) for x in walk(f)
                )
                if has_load:
                    raise _Cannot("guarded load under a per-lane condition")
                return Select(c, _bcast(t, lanes), _bcast(f, lanes), dtypes.with_lanes(e.dtype, lanes), False)
            return Select(c, _bcast(t, lanes), _bcast(f, lanes), dtypes.with_lanes(e.dtype, lanes), e.lazy)
        if isinstance(e, Call):
            args = [self.expr(a) for a in e.args]
            if all(a is b for a, b in zip(args, e.args, strict=True)):
                return e
            lanes = max(_lanes(a) for a in args)
            return Call(e.name, [_bcast(a, lanes) for a in args], dtypes.with_lanes(e.dtype, lanes))
        if isinstance(e, BufferLoad):
            idx = self.expr(e.index)
            if idx is e.index:
                return e
            return BufferLoad(e.buffer, idx, dtypes.with_lanes(e.dtype, _lanes(idx)))
        if isinstance(e, Var | IntImm) or not any(x is self.var for x in walk(e)):
            return e
        raise _Cannot(f"cannot vectorize {type(e).__name__}")

    def stmt(self, s: Stmt) -> Stmt:
        if isinstance(s, BufferStore):
            idx = self.expr(s.index)
            val = self.expr(s.value)
            if _lanes(idx) == 1:
                raise _Cannot("store address does not depend on the vectorized loop")
            return BufferStore(s.buffer, idx, _bcast(val, _lanes(idx)))
        if isinstance(s, Seq):
            return Seq([self.stmt(x) for x in s.stmts])
        if isinstance(s, IfThenElse):
            c = self.expr(s.cond)
            if _lanes(c) != 1:
                raise _Cannot("condition depends on the vectorized loop")
            return IfThenElse(c, self.stmt(s.then_case), None if s.else_case is None else self.stmt(s.else_case))
        if isinstance(s, For):
            if _lanes(self.expr(s.min)) != 1 or _lanes(self.expr(s.extent)) != 1:
                raise _Cannot("inner loop bounds depend on the vectorized loop")
            return For(
                s.var, s.min, s.extent, s.kind if s.kind != "parallel" else "serial", self.stmt(s.body), s.thread_tag
            )
        if isinstance(s, AttrStmt):
            return AttrStmt(s.key, s.value, self.stmt(s.body))
        if isinstance(s, Evaluate):
            return Evaluate(self.expr(s.value))
        raise _Cannot(f"cannot vectorize a {type(s).__name__}")


def _vectorize_loop(n: Any) -> Any | None:
    if not isinstance(n, For) or n.kind != "vectorized":
        return None
    ext = simplify_expr(n.extent)
    if not isinstance(ext, IntImm):
        return For(n.var, n.min, n.extent, "serial", n.body, None, {"vectorize_hint": True})
    if ext.value == 1:
        return For(n.var, n.min, n.extent, "serial", n.body)
    try:
        return _Vectorizer(n.var, n.min, ext.value).stmt(n.body)
    except _Cannot as why:
        return For(n.var, n.min, n.extent, "serial", n.body, None, {"vectorize_hint": True, "why_not": str(why)})


def vectorize(stmt: Stmt) -> Stmt:
    """Replace ``vectorized`` loops by vector code (innermost loops first)."""
    return post_order_map(stmt, _vectorize_loop)
