"""Unrolling: a loop marked ``unrolled`` becomes one copy of its body per iteration."""

from __future__ import annotations

from typing import Any

from ..nodes import For, IntImm, Stmt, seq
from ..visitor import post_order_map, substitute
from .simplify import simplify, simplify_expr

#: refuse to unroll beyond this many copies (a schedule mistake, not a speed-up)
MAX_UNROLL = 4096


class UnrollError(ValueError):
    pass


def _unroll(n: Any) -> Any | None:
    if not isinstance(n, For) or n.kind != "unrolled":
        return None
    ext = simplify_expr(n.extent)
    if not isinstance(ext, IntImm):
        return For(n.var, n.min, n.extent, "serial", n.body, None, n.annotations)
    if ext.value > MAX_UNROLL:
        raise UnrollError(f"loop {n.var.name!r}: unrolling {ext.value} iterations exceeds the limit of {MAX_UNROLL}")
    copies = [substitute(n.body, {n.var: simplify_expr(n.min + k)}) for k in range(ext.value)]
    return seq(*copies)


def unroll(stmt: Stmt) -> Stmt:
    """Expand every ``unrolled`` loop with a constant extent (others become serial)."""
    return simplify(post_order_map(stmt, _unroll))
