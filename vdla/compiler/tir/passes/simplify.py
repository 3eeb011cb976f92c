"""Simplification: constant folding, canonical linear index forms, provable comparisons.

``simplify_expr(e, ranges)`` rewrites one expression, using constant ranges of
variables (loop indices) to decide comparisons, min/max and floor division/modulo.
``simplify(stmt)`` walks statements, learns loop ranges from ``For`` nodes, drops
guards that always hold, loops with no iterations, and replaces one-iteration loops
by their body.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..arith import Bound, Linear, const_bound, equal, linear
from ..nodes import (
    BinOp,
    Broadcast,
    Call,
    Cast,
    Cmp,
    Expr,
    FloatImm,
    For,
    IfThenElse,
    IntImm,
    LetStmt,
    Logic,
    Not,
    PrimFunc,
    Ramp,
    Select,
    Seq,
    Stmt,
    Var,
    make_const,
    seq,
)
from ..visitor import map_children, substitute


def _wrap(v: int, dtype: str) -> int:
    b = dtypes.bits(dtype)
    if dtypes.is_bool(dtype):
        return 1 if v else 0
    if dtypes.is_uint(dtype):
        return v % (1 << b)
    return ((v + (1 << (b - 1))) % (1 << b)) - (1 << (b - 1))


def _is_const(e: Expr) -> bool:
    return isinstance(e, IntImm | FloatImm)


def _fold_bin(op: str, a: Any, b: Any, dtype: str) -> Expr | None:
    if dtypes.is_float(dtype):
        t = np.dtype(dtype).type
        x, y = t(a), t(b)
        with np.errstate(all="ignore"):
            r = {
                "add": lambda: x + y,
                "sub": lambda: x - y,
                "mul": lambda: x * y,
                "div": lambda: x / y,
                "min": lambda: min(x, y),
                "max": lambda: max(x, y),
            }.get(op)
            if r is None:
                return None
            return FloatImm(float(t(r())), dtype)
    a, b = int(a), int(b)
    if op == "add":
        v = a + b
    elif op == "sub":
        v = a - b
    elif op == "mul":
        v = a * b
    elif op == "min":
        v = min(a, b)
    elif op == "max":
        v = max(a, b)
    elif b == 0:
        return None
    elif op == "floordiv":
        v = a // b
    elif op == "floormod":
        v = a % b
    elif op == "truncdiv":
        v = int(math.copysign(abs(a) // abs(b), a * b)) if a * b != 0 else 0
    elif op == "truncmod":
        v = a - b * (int(math.copysign(abs(a) // abs(b), a * b)) if a * b != 0 else 0)
    else:
        return None
    return IntImm(_wrap(v, dtype), dtype)


def _fold_cast(dtype: str, v: Expr) -> Expr | None:
    if not _is_const(v) or dtypes.lanes(dtype) != 1:
        return None
    x = v.value
    if dtypes.is_bool(dtype):
        return IntImm(1 if x else 0, "bool")
    if dtypes.is_float(dtype):
        return FloatImm(float(np.dtype(dtype).type(x)), dtype)
    if isinstance(v, FloatImm):
        if not math.isfinite(x):
            return None
        x = math.trunc(x)
    return IntImm(_wrap(int(x), dtype), dtype)


def _scalar_int(e: Expr) -> bool:
    return dtypes.is_int(e.dtype) and dtypes.lanes(e.dtype) == 1


class _Simplifier:
    def __init__(self, ranges: dict[Var, Bound] | None = None) -> None:
        self.ranges: dict[Var, Bound] = dict(ranges or {})

    # ------------------------------------------------------------------ expressions
    def expr(self, e: Expr) -> Expr:
        if isinstance(e, Select):  # a constant condition: only the taken branch is simplified
            cond = self.expr(e.cond)
            if isinstance(cond, IntImm):
                return self.expr(e.t if cond.value else e.f)
        e = map_children(e, self._child)
        fn = getattr(self, "_e_" + type(e).__name__, None)
        return fn(e) if fn is not None else e

    def _child(self, n: Any) -> Any:
        return self.expr(n) if isinstance(n, Expr) else n

    def _e_Cast(self, e: Cast) -> Expr:
        if e.value.dtype == e.dtype:
            return e.value
        f = _fold_cast(e.dtype, e.value)
        if f is not None:
            return f
        if isinstance(e.value, Broadcast):
            return Broadcast(self.expr(Cast(dtypes.scalar(e.dtype), e.value.value)), e.value.lanes, e.dtype)
        return e

    def _canon(self, lin: Linear) -> Expr:
        return lin.to_expr()

    def _e_BinOp(self, e: BinOp) -> Expr:
        a, b, op, dt = e.a, e.b, e.op, e.dtype
        if _is_const(a) and _is_const(b):
            f = _fold_bin(op, a.value, b.value, dt)
            if f is not None:
                return f
        if isinstance(a, Broadcast) and isinstance(b, Broadcast):
            return Broadcast(self.expr(BinOp(op, a.value, b.value, dtypes.scalar(dt))), a.lanes, dt)
        if isinstance(a, Ramp) or isinstance(b, Ramp):
            r = self._ramp_arith(e)
            if r is not None:
                return r
        if not _scalar_int(e):
            if dtypes.is_float(dt):
                if op == "mul" and isinstance(b, FloatImm) and b.value == 1.0:
                    return a
                if op == "mul" and isinstance(a, FloatImm) and a.value == 1.0:
                    return b
                if op in ("add", "sub") and isinstance(b, FloatImm) and b.value == 0.0:
                    return a
                if op == "add" and isinstance(a, FloatImm) and a.value == 0.0:
                    return b
            return e
        if op in ("add", "sub", "mul"):
            lin = linear(e)
            return self._canon(lin)
        if op in ("min", "max"):
            lo, hi = const_bound(self.expr(BinOp("sub", a, b, dt)), self.ranges)
            if op == "min":
                if hi is not None and hi <= 0:
                    return a
                if lo is not None and lo >= 0:
                    return b
            else:
                if hi is not None and hi <= 0:
                    return b
                if lo is not None and lo >= 0:
                    return a
            if equal(a, b):
                return a
            return e
        if op in ("floordiv", "floormod") and isinstance(b, IntImm) and b.value > 0:
            return self._floor(e, a, b.value)
        if op in ("truncdiv", "truncmod") and isinstance(b, IntImm) and b.value > 0:
            lo = const_bound(a, self.ranges)[0]
            if lo is not None and lo >= 0:
                return self._floor(BinOp("floor" + op[5:], a, b, dt), a, b.value)
        return e

    def _floor(self, e: BinOp, a: Expr, c: int) -> Expr:
        dt = e.dtype
        if c == 1:
            return a if e.op.endswith("div") else make_const(0, dt)
        lin = linear(a)
        q = Linear(dt)
        r = Linear(dt)
        for k, (atom, coef) in lin.terms.items():
            if coef % c == 0:
                q.terms[k] = [atom, coef // c]
            else:
                r.terms[k] = [atom, coef]
        q.const = lin.const // c
        r.const = lin.const % c
        r_expr = r.to_expr()
        lo, hi = const_bound(r_expr, self.ranges)
        in_range = lo is not None and hi is not None and 0 <= lo and hi < c
        if e.op.endswith("div"):
            if in_range:
                return q.to_expr()
            if r.is_const():
                return q.to_expr()
            if lo is not None and hi is not None and lo // c == hi // c:
                q.const += lo // c
                return q.to_expr()
            base = BinOp("floordiv", r_expr, make_const(c, dt), dt)
            if q.is_const() and q.const == 0:
                return base
            return self._canon(q.add(Linear(dt, {("fd", id(base)): [base, 1]})))
        if in_range:
            return r_expr
        if r.is_const():
            return make_const(r.const, dt)
        if lo is not None and hi is not None and lo // c == hi // c:
            return self.expr(BinOp("sub", r_expr, make_const((lo // c) * c, dt), dt))
        return BinOp("floormod", r_expr, make_const(c, dt), dt)

    def _ramp_arith(self, e: BinOp) -> Expr | None:
        a, b, op = e.a, e.b, e.op
        n = dtypes.lanes(e.dtype)
        st = dtypes.scalar(e.dtype)

        def parts(x: Expr) -> tuple[Expr, Expr] | None:
            if isinstance(x, Ramp):
                return x.base, x.stride
            if isinstance(x, Broadcast):
                return x.value, make_const(0, st)
            return None

        pa, pb = parts(a), parts(b)
        if pa is None or pb is None or not dtypes.is_int(st):
            return None
        if op in ("add", "sub"):
            base = self.expr(BinOp(op, pa[0], pb[0], st))
            stride = self.expr(BinOp(op, pa[1], pb[1], st))
        elif op == "mul" and isinstance(b, Broadcast):
            base = self.expr(BinOp("mul", pa[0], pb[0], st))
            stride = self.expr(BinOp("mul", pa[1], pb[0], st))
        elif op == "mul" and isinstance(a, Broadcast):
            base = self.expr(BinOp("mul", pa[0], pb[0], st))
            stride = self.expr(BinOp("mul", pa[0], pb[1], st))
        else:
            return None
        if isinstance(stride, IntImm) and stride.value == 0:
            return Broadcast(base, n, e.dtype)
        return Ramp(base, stride, n, e.dtype)

    def _e_Cmp(self, e: Cmp) -> Expr:
        a, b = e.a, e.b
        if _is_const(a) and _is_const(b):
            x, y = a.value, b.value
            v = {"lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y, "eq": x == y, "ne": x != y}[e.op]
            return make_const(v, "bool")
        if _scalar_int(a):
            d = self.expr(BinOp("sub", a, b, a.dtype))
            lo, hi = const_bound(d, self.ranges)
            res = None
            if e.op == "lt":
                res = True if hi is not None and hi < 0 else False if lo is not None and lo >= 0 else None
            elif e.op == "le":
                res = True if hi is not None and hi <= 0 else False if lo is not None and lo > 0 else None
            elif e.op == "gt":
                res = True if lo is not None and lo > 0 else False if hi is not None and hi <= 0 else None
            elif e.op == "ge":
                res = True if lo is not None and lo >= 0 else False if hi is not None and hi < 0 else None
            elif e.op == "eq":
                if lo is not None and lo == hi:
                    res = lo == 0
                elif (lo is not None and lo > 0) or (hi is not None and hi < 0):
                    res = False
            elif e.op == "ne":
                if lo is not None and lo == hi:
                    res = lo != 0
                elif (lo is not None and lo > 0) or (hi is not None and hi < 0):
                    res = True
            if res is not None:
                return make_const(res, "bool")
        return e

    def _e_Logic(self, e: Logic) -> Expr:
        a, b = e.a, e.b
        for x, y in ((a, b), (b, a)):
            if isinstance(x, IntImm):
                if e.op == "and":
                    return y if x.value else make_const(False, "bool")
                return make_const(True, "bool") if x.value else y
        return e

    def _e_Not(self, e: Not) -> Expr:
        if isinstance(e.a, IntImm):
            return make_const(not e.a.value, "bool")
        return e

    def _e_Select(self, e: Select) -> Expr:
        if isinstance(e.cond, IntImm):
            return e.t if e.cond.value else e.f
        if equal(e.t, e.f):
            return e.t
        return e

    def _e_Call(self, e: Call) -> Expr:
        return e

    # ------------------------------------------------------------------ statements
    def stmt(self, s: Stmt | None) -> Stmt | None:
        if s is None:
            return None
        fn = getattr(self, "_s_" + type(s).__name__, None)
        if fn is not None:
            return fn(s)
        return map_children(s, self._any)  # stores, evaluates

    def _any(self, n: Any) -> Any:
        if isinstance(n, Expr):
            return self.expr(n)
        if isinstance(n, Stmt):
            r = self.stmt(n)
            return Seq([]) if r is None else r
        return n

    def _s_Seq(self, s: Seq) -> Stmt | None:
        out = [self.stmt(x) for x in s.stmts]
        out2 = [x for x in out if x is not None and not (isinstance(x, Seq) and not x.stmts)]
        if not out2:
            return None
        return seq(*out2)

    def _s_For(self, s: For) -> Stmt | None:
        mn = self.expr(s.min)
        ext = self.expr(s.extent)
        if isinstance(ext, IntImm) and ext.value <= 0:
            return None
        if isinstance(ext, IntImm) and ext.value == 1 and s.kind != "thread_binding":
            return self.stmt(substitute(s.body, {s.var: mn}))
        lo_m, hi_m = const_bound(mn, self.ranges)
        lo_e, hi_e = const_bound(ext, self.ranges)
        hi = None if hi_m is None or hi_e is None else hi_m + hi_e - 1
        old = self.ranges.get(s.var)
        self.ranges[s.var] = (lo_m, hi)
        body = self.stmt(s.body)
        if old is None:
            del self.ranges[s.var]
        else:
            self.ranges[s.var] = old
        if body is None:
            return None
        return For(s.var, mn, ext, s.kind, body, s.thread_tag, s.annotations)

    def _s_IfThenElse(self, s: IfThenElse) -> Stmt | None:
        c = self.expr(s.cond)
        if isinstance(c, IntImm):
            return self.stmt(s.then_case if c.value else s.else_case)
        t = self.stmt(s.then_case)
        f = self.stmt(s.else_case)
        if t is None and f is None:
            return None
        if t is None:
            return IfThenElse(Not(c), f, None)  # type: ignore[arg-type]
        return IfThenElse(c, t, f)

    def _body_wrap(self, s: Any) -> Stmt | None:
        body = self.stmt(s.body)
        if body is None:
            return None
        s2 = map_children(s, lambda n: self.expr(n) if isinstance(n, Expr) else n)
        import dataclasses

        return dataclasses.replace(s2, body=body)

    _s_Allocate = _body_wrap
    _s_ProducerRealize = _body_wrap
    _s_AttrStmt = _body_wrap

    def _s_LetStmt(self, s: LetStmt) -> Stmt | None:
        v = self.expr(s.value)
        if _is_const(v) or isinstance(v, Var):
            return self.stmt(substitute(s.body, {s.var: v}))
        body = self.stmt(s.body)
        return None if body is None else LetStmt(s.var, v, body)


def simplify_expr(e: Any, ranges: dict[Var, Bound] | None = None) -> Expr:
    """Simplify one expression; ``ranges`` maps Vars to constant (lo, hi) bounds."""
    from ..nodes import convert

    return _Simplifier(ranges).expr(convert(e))


def simplify(node: Any, ranges: dict[Var, Bound] | None = None) -> Any:
    """Simplify a statement or a PrimFunc (returns an empty Seq for a body that does nothing)."""
    sim = _Simplifier(ranges)
    if isinstance(node, PrimFunc):
        body = sim.stmt(node.body)
        return PrimFunc(node.name, node.params, body if body is not None else Seq([]), dict(node.attrs))
    if isinstance(node, Expr):
        return sim.expr(node)
    r = sim.stmt(node)
    return Seq([]) if r is None else r
