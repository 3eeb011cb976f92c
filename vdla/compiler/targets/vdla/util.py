"""Shared analysis for the VDLA lowering passes: perfect loop nests, affine index forms
and the split of a nest into hardware elements (the innermost lanes) and element loops."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...tir.arith import Linear, linear
from ...tir.nodes import AttrStmt, BinOp, Expr, For, IfThenElse, IntImm, Stmt, Var, make_const
from ...tir.passes.simplify import simplify_expr
from .env import VDLAError


@dataclass
class Loop:
    var: Var
    extent: int


def loop_nest(stmt: Stmt, what: str) -> tuple[list[Loop], Stmt]:
    """The perfect loop nest at ``stmt`` (outermost first) and its body."""
    loops: list[Loop] = []
    s = stmt
    while True:
        if isinstance(s, For):
            ext = simplify_expr(s.extent)
            mn = simplify_expr(s.min)
            if not isinstance(ext, IntImm) or not (isinstance(mn, IntImm) and mn.value == 0):
                raise VDLAError(f"{what}: loop {s.var.name!r} needs a constant extent starting at 0, got [{mn}, +{ext})")
            loops.append(Loop(s.var, ext.value))
            s = s.body
        elif isinstance(s, AttrStmt) and s.key == "tensorized":
            s = s.body
        elif isinstance(s, IfThenElse):
            raise VDLAError(
                f"{what}: the loops need a guard ({s.cond}): a split does not divide its axis; "
                "use tile sizes (and virtual-thread counts) that divide the tensor"
            )
        else:
            return loops, s


def affine(e: Expr, vars_: list[Var], what: str) -> tuple[dict[Var, int], Expr]:
    """``e = base + sum(coef[v] * v)``: coefficients of the given loop variables and the
    base (an expression of the other, outer variables)."""
    lin = linear(simplify_expr(e))
    coefs: dict[Var, int] = {}
    rest = Linear(lin.dtype, {}, lin.const)
    vs = set(vars_)
    for k, (atom, c) in lin.terms.items():
        if isinstance(atom, Var) and atom in vs:
            coefs[atom] = c
        else:
            from ...tir.visitor import walk

            if any(isinstance(n, Var) and n in vs for n in walk(atom)):
                raise VDLAError(f"{what}: index {e} is not affine in the loop variables ({atom} is not)")
            rest.terms[k] = [atom, c]
    return coefs, simplify_expr(rest.to_expr())


def div_expr(e: Expr, d: int, what: str) -> Expr:
    """``e / d`` where every coefficient of ``e`` is a multiple of ``d`` (else an error)."""
    if d == 1:
        return e
    lin = linear(simplify_expr(e))
    if lin.const % d or any(c % d for _, c in lin.terms.values()):
        raise VDLAError(f"{what}: offset {e} is not a whole number of {d}-lane elements")
    out = Linear(lin.dtype, {k: [a, c // d] for k, (a, c) in lin.terms.items()}, lin.const // d)
    return simplify_expr(out.to_expr())


def split_elements(loops: list[Loop], accesses: list[dict[Var, int]], lanes: int, what: str) -> tuple[list[Loop], list[Loop]]:
    """Split ``loops`` into (element loops, lane loops): the innermost loops must walk the
    ``lanes`` scalars of one element contiguously in every access."""
    p = 1
    k = len(loops)
    while p < lanes:
        if k == 0:
            raise VDLAError(f"{what}: the loops cover {p} lanes, less than one {lanes}-lane hardware element")
        lp = loops[k - 1]
        for acc in accesses:
            c = acc.get(lp.var, 0)
            if c != p:
                raise VDLAError(
                    f"{what}: loop {lp.var.name!r} (extent {lp.extent}) does not walk the lanes of a {lanes}-lane "
                    f"element contiguously (stride {c}, expected {p}); the innermost loops must cover whole elements"
                )
        p *= lp.extent
        k -= 1
    if p != lanes:
        raise VDLAError(f"{what}: the innermost loops cover {p} lanes, not a whole {lanes}-lane element")
    outer = loops[:k]
    for lp in outer:
        for acc in accesses:
            if acc.get(lp.var, 0) % lanes:
                raise VDLAError(
                    f"{what}: loop {lp.var.name!r} steps by {acc.get(lp.var, 0)} lanes, not a whole number of "
                    f"{lanes}-lane elements"
                )
    return outer, loops[k:]


def zero_vars(e: Expr, vars_: list[Var]) -> Expr:
    from ...tir.visitor import substitute

    return simplify_expr(substitute(e, {v: make_const(0, v.dtype) for v in vars_}))


def const_int(e: Any) -> int | None:
    e = simplify_expr(e) if isinstance(e, Expr) else e
    return e.value if isinstance(e, IntImm) else None


def add(a: Expr, b: Any) -> Expr:
    b = make_const(b, a.dtype) if isinstance(b, int) else b
    return simplify_expr(BinOp("add", a, b, a.dtype))
