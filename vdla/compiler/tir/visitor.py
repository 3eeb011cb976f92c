"""Generic traversal of IR trees: post-order rewriting, visiting and substitution.

Nodes are dataclasses; a field is traversed when it holds an Expr, a Stmt or a list of
them.  Binding occurrences (``For.var``, ``LetStmt.var``) are not rewritten.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from .nodes import Expr, For, LetStmt, Reduce, Stmt, Var

_FIELDS: dict[type, tuple[str, ...]] = {}
_SKIP = {For: ("var",), LetStmt: ("var",), Reduce: ("axis", "combiner")}


def child_fields(cls: type) -> tuple[str, ...]:
    """Names of the fields of ``cls`` that may hold child nodes."""
    names = _FIELDS.get(cls)
    if names is None:
        skip = _SKIP.get(cls, ())
        names = tuple(
            f.name
            for f in dataclasses.fields(cls)
            if f.name not in skip and f.name not in ("dtype", "name", "op", "kind", "thread_tag", "lazy", "lanes")
        )
        _FIELDS[cls] = names
    return names


def _is_node(x: Any) -> bool:
    return isinstance(x, Expr | Stmt)


def children(node: Any) -> Iterator[Any]:
    """Direct child nodes (Exprs and Stmts) of ``node``."""
    if not dataclasses.is_dataclass(node):
        return
    for name in child_fields(type(node)):
        v = getattr(node, name)
        if _is_node(v):
            yield v
        elif isinstance(v, list | tuple):
            for x in v:
                if _is_node(x):
                    yield x
                elif isinstance(x, tuple):  # e.g. realize bounds (min, extent)
                    yield from (y for y in x if _is_node(y))


def _map_value(v: Any, fn: Callable[[Any], Any]) -> Any:
    if _is_node(v):
        return fn(v)
    if isinstance(v, list):
        new = [_map_value(x, fn) for x in v]
        return v if all(a is b for a, b in zip(new, v, strict=True)) else new
    if isinstance(v, tuple):
        new_t = tuple(_map_value(x, fn) for x in v)
        return v if all(a is b for a, b in zip(new_t, v, strict=True)) else new_t
    return v


def map_children(node: Any, fn: Callable[[Any], Any]) -> Any:
    """Rebuild ``node`` with ``fn`` applied to each child; returns ``node`` itself if nothing changed."""
    if not dataclasses.is_dataclass(node) or isinstance(node, Var):
        return node
    changes = {}
    for name in child_fields(type(node)):
        v = getattr(node, name)
        nv = _map_value(v, fn)
        if nv is not v:
            changes[name] = nv
    if not changes:
        return node
    return dataclasses.replace(node, **changes)


def post_order_map(node: Any, fn: Callable[[Any], Any | None]) -> Any:
    """Rewrite bottom-up: children first, then ``fn(node)``; ``fn`` returning None keeps the node."""

    def rec(n: Any) -> Any:
        n2 = map_children(n, rec)
        r = fn(n2)
        return n2 if r is None else r

    return rec(node)


def pre_order_map(node: Any, fn: Callable[[Any], Any | None]) -> Any:
    """Rewrite top-down: ``fn(node)`` first; if it returns a node, that replaces the subtree."""

    def rec(n: Any) -> Any:
        r = fn(n)
        if r is not None:
            return r
        return map_children(n, rec)

    return rec(node)


def walk(node: Any) -> Iterator[Any]:
    """All nodes of the tree, pre-order (including Reduce sources, excluding binding vars)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(list(children(n))))


def substitute(node: Any, mapping: dict[Var, Expr]) -> Any:
    """Replace free occurrences of Vars by expressions (no capture checks: vars are unique objects)."""
    if not mapping:
        return node

    def fn(n: Any) -> Any | None:
        if isinstance(n, Var):
            return mapping.get(n)
        return None

    return pre_order_map(node, fn)


def free_vars(node: Any) -> list[Var]:
    """Vars used in ``node`` but not bound by a For/LetStmt inside it, in first-use order."""
    bound: set[Var] = set()
    seen: dict[Var, None] = {}

    def rec(n: Any) -> None:
        if isinstance(n, Var):
            if n not in bound and n not in seen:
                seen[n] = None
            return
        if isinstance(n, For | LetStmt):
            bound.add(n.var)
        if isinstance(n, Reduce):
            for iv in n.axis:
                bound.add(iv.var)
        for c in children(n):
            rec(c)

    rec(node)
    return list(seen)


def uses_var(node: Any, var: Var | set[Var]) -> bool:
    vs = var if isinstance(var, set) else {var}
    return any(isinstance(n, Var) and n in vs for n in walk(node))
