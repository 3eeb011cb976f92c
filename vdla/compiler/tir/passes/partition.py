"""Loop partitioning: a loop whose guards change truth at known iterations is split there, so
the iterations in between run without them (TVM's ``LoopPartition``).

A split that does not divide its extent leaves a ragged last tile: lowering guards every
statement of the tile with ``(outer * factor + k) < extent`` (and a padded input reads through
``if_then_else`` on its borders). The guard depends on the outer loop only, yet it sits inside
the innermost loops, so a register tile of 4 columns over a 7-column ResNet layer paid a compare
and branch per FMA and ran at a third of the speed of 7 columns. :func:`partition_loops` finds,
for each serial loop of constant bounds, the iterations where a condition that is linear in its
variable alone (an ``IfThenElse`` guard or a ``Select``) flips, and emits one loop per range
between them; :func:`.simplify` then proves each range's guards true or false and drops them.

Only serial loops are split (a parallel loop stays one parallel region), and a loop gets at most
:data:`MAX_PIECES` pieces (each piece copies the body).
"""

from __future__ import annotations

from typing import Any

from ..arith import linear
from ..nodes import BinOp, Cmp, Expr, For, IfThenElse, IntImm, Logic, Select, Stmt, Var, seq
from ..visitor import post_order_map, substitute, walk
from .simplify import simplify

__all__ = ["partition_loops", "MAX_PIECES"]

#: the most loops one loop becomes (a ragged tile: 2; a padded row: 3)
MAX_PIECES = 3


def partition_loops(stmt: Stmt) -> Stmt:
    """Split serial loops at the iterations where their guards flip (see the module doc)."""
    return simplify(post_order_map(stmt, _partition))


def _conditions(body: Stmt) -> list[Expr]:
    """The comparisons of the body's guards and selects (conjunctions split)."""
    out: list[Expr] = []
    for n in walk(body):
        c = n.cond if isinstance(n, IfThenElse | Select) else None
        stack = [c] if c is not None else []
        while stack:
            e = stack.pop()
            if isinstance(e, Logic) and e.op == "and":
                stack += [e.a, e.b]
            elif isinstance(e, Cmp) and e.op in ("lt", "le", "gt", "ge"):
                out.append(e)
    return out


def _truth(op: str, coef: int, const: int, v: int) -> bool:
    d = coef * v + const
    return {"lt": d < 0, "le": d <= 0, "gt": d > 0, "ge": d >= 0}[op]


def _flip(c: Cmp, var: Var, lo: int, hi: int) -> int | None:
    """The first iteration in (lo, hi] where ``c`` (linear in ``var`` alone) differs from its value
    at ``lo``; None when it never does or depends on anything else."""
    if not (c.a.dtype.startswith("int") and c.b.dtype.startswith("int")):
        return None
    try:
        lin = linear(BinOp("sub", c.a, c.b, c.a.dtype))
    except Exception:  # not an integer expression linear form knows
        return None
    if len(lin.terms) != 1:
        return None
    ((atom, coef),) = lin.terms.values()
    if atom is not var or not isinstance(lin.const, int):
        return None
    first = _truth(c.op, coef, lin.const, lo)
    if _truth(c.op, coef, lin.const, hi) == first:
        return None  # monotone in var: the same at both ends is the same throughout
    a, b = lo, hi  # truth(a) == first, truth(b) != first
    while b - a > 1:
        m = (a + b) // 2
        if _truth(c.op, coef, lin.const, m) == first:
            a = m
        else:
            b = m
    return b


def _partition(s: Any) -> Any | None:
    if not (isinstance(s, For) and s.kind == "serial" and isinstance(s.min, IntImm)
            and isinstance(s.extent, IntImm) and s.extent.value > 1):
        return None
    lo, hi = s.min.value, s.min.value + s.extent.value - 1
    cuts = sorted({t for c in _conditions(s.body) if (t := _flip(c, s.var, lo, hi)) is not None})
    if not cuts or len(cuts) + 1 > MAX_PIECES:
        return None
    bounds = [lo, *cuts, hi + 1]
    pieces = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        v = Var(s.var.name, s.var.dtype)
        pieces.append(For(v, IntImm(a, s.min.dtype), IntImm(b - a, s.extent.dtype), s.kind,
                          substitute(s.body, {s.var: v}), s.thread_tag, dict(s.annotations)))
    return seq(*pieces)
