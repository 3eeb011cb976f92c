"""Double buffering (TVM's ``InjectDoubleBuffer``): a tile refilled every iteration of a loop gets two halves.

``s[AA].double_buffer()`` on a shared-memory stage computed inside a serial loop (the outer
loop of a reduction) marks its nest with a ``double_buffer_scope`` attribute. This pass
rewrites that loop ``for ko: {fetch(ko) -> T; compute(T)}`` into::

    allocate T[2, tile]                          (hoisted out of the loop, twice the size)
    fetch(0) -> T[0]                             prologue
    for ko in [0, n - 1):
        // attr double_buffer_write
        fetch(ko + 1) -> T[(ko + 1) % 2]         the next tile, into the other half ...
        compute(T[ko % 2])                       ... while this one is read
    compute(T[(n - 1) % 2])                      epilogue: the last tile, nothing to fetch

(TVM's split-loop form: no condition inside the loop; a loop of symbolic extent keeps one
loop with the fetch under ``if ko + 1 < n``). The GPU back end's barrier placement
(:func:`vdla.compiler.targets.cuda.lower.storage_sync`) knows that a ``double_buffer_write``
does not conflict with the reads of the same iteration, so one barrier per iteration
separates the fetch of the next tile from the reads of the last, where an ordinary tile
needs two (after the fetch and before the next one). Without the attribute the pass
returns its input unchanged.
"""

from __future__ import annotations

import math
from typing import Any

from ..nodes import (
    Allocate,
    AttrStmt,
    BinOp,
    Broadcast,
    Buffer,
    BufferLoad,
    BufferStore,
    Expr,
    For,
    IfThenElse,
    IntImm,
    LetStmt,
    Ramp,
    Seq,
    Stmt,
    Var,
    seq,
)
from ..visitor import post_order_map, pre_order_map, substitute, uses_var, walk
from .simplify import simplify, simplify_expr

#: the attribute around a double-buffered stage's nest (value: its tensor, its Buffer after flattening,
#: and the variable of the loop it is computed in)
DOUBLE_BUFFER_SCOPE = "double_buffer_scope"
#: the attribute around the in-loop fetch of the next tile (value: the doubled Buffer)
DOUBLE_BUFFER_WRITE = "double_buffer_write"


class DoubleBufferError(ValueError):
    """A double-buffered stage the pass cannot rewrite; the message names the stage."""


def _name(v: Any) -> str:
    return str(getattr(v, "name", v))


def _scopes(s: Stmt, loop: Var, lets: list[Var], out: list[tuple[AttrStmt, list[Var]]],
            allocs: dict[Buffer, Allocate]) -> None:  # fmt: skip
    """The double-buffer scopes of loop ``loop`` directly in its body (not inside an inner loop or a
    condition), the let variables bound above each, and the allocations on the way."""
    if isinstance(s, Seq):
        for x in s.stmts:
            _scopes(x, loop, lets, out, allocs)
    elif isinstance(s, AttrStmt):
        if s.key == DOUBLE_BUFFER_SCOPE and s.value[1] is loop:
            out.append((s, list(lets)))
        elif s.key != DOUBLE_BUFFER_SCOPE:
            _scopes(s.body, loop, lets, out, allocs)
    elif isinstance(s, Allocate):
        allocs[s.buffer] = s
        _scopes(s.body, loop, lets, out, allocs)
    elif isinstance(s, LetStmt):
        _scopes(s.body, loop, [*lets, s.var], out, allocs)


def _shift(index: Expr, off: Expr) -> Expr:
    """``index + off`` for a scalar or vector (Ramp/Broadcast) index."""
    if isinstance(index, Ramp):
        return Ramp(simplify_expr(index.base + off), index.stride, index.lanes, index.dtype)
    if isinstance(index, Broadcast):
        return Broadcast(simplify_expr(index.value + off), index.lanes, index.dtype)
    return simplify_expr(index + off)


def _retarget(s: Any, old: Buffer, new: Buffer, off: Expr, loads: bool) -> Any:
    """Stores (``loads``: loads) of ``old`` moved to ``new`` at ``index + off``."""

    def fn(n: Any) -> Any:
        if loads and isinstance(n, BufferLoad) and n.buffer is old:
            return BufferLoad(new, _shift(n.index, off.astype(n.index.dtype.split("x")[0])), n.dtype)
        if not loads and isinstance(n, BufferStore) and n.buffer is old:
            return BufferStore(new, _shift(n.index, off.astype(n.index.dtype.split("x")[0])), n.value)
        return None

    return post_order_map(s, fn)


def _inject(loop: For, stages: list[tuple[AttrStmt, list[Var], Allocate]]) -> Stmt:
    """``loop`` with every stage of ``stages`` (its nest, the lets above it, its allocation) double-buffered."""
    v, lo, ext = loop.var, loop.min, simplify_expr(loop.extent)
    dt = v.dtype
    marks = {id(attr): AttrStmt("double_buffer_fetch", None, Seq([])) for attr, _, _ in stages}
    allocs = {id(alloc) for _, _, alloc in stages}

    def strip(n: Any) -> Any:  # each nest replaced by its mark, each allocation by its body
        if id(n) in marks:
            return marks[id(n)]
        if id(n) in allocs:
            return pre_order_map(n.body, strip)
        return None

    rest = pre_order_map(loop.body, strip)
    news, prologues, nexts = [], [], {}
    for attr, lets, alloc in stages:
        buf = alloc.buffer
        stage = _name(buf)
        sizes = [simplify_expr(d) for d in buf.shape]
        if not all(isinstance(d, IntImm) for d in sizes):
            raise DoubleBufferError(f"stage {stage!r}: double_buffer: its tile has a symbolic size "
                                    f"({', '.join(str(d) for d in sizes)}); double buffers need constant tiles")  # fmt: skip
        if any(isinstance(n, BufferStore) and n.buffer is buf for n in walk(rest)):
            raise DoubleBufferError(f"stage {stage!r}: double_buffer: its buffer is also written outside its own nest")
        tile = math.prod(d.value for d in sizes)  # type: ignore[union-attr]
        new = Buffer(buf.name, buf.dtype, [IntImm(2, "int32"), *sizes], buf.scope)
        half = simplify_expr(BinOp("floormod", v - lo, IntImm(2, dt), dt) * IntImm(tile, dt))
        fetch = _retarget(attr.body, buf, new, half, loads=False)  # writes the half of iteration v
        if lets and uses_var(fetch, set(lets)):
            raise DoubleBufferError(f"stage {stage!r}: double_buffer: its nest uses a variable bound inside loop "
                                    f"{v.name!r}, so the first tile cannot be fetched before the loop")  # fmt: skip
        nexts[id(marks[id(attr)])] = AttrStmt(DOUBLE_BUFFER_WRITE, new,
                                              simplify(substitute(fetch, {v: simplify_expr(v + 1)})))
        prologues.append(simplify(substitute(fetch, {v: lo})))
        rest = _retarget(rest, buf, new, half, loads=True)
        news.append(new)

    def body(guard: Expr | None, fetch: bool) -> Stmt:
        def fn(n: Any) -> Any:
            if id(n) not in nexts:
                return None
            if not fetch:
                return Seq([])
            return nexts[id(n)] if guard is None else IfThenElse(guard, nexts[id(n)])

        return _flatten(pre_order_map(rest, fn))

    if isinstance(ext, IntImm):  # TVM's split loop: n - 1 iterations with the fetch, then the last without
        last = simplify(substitute(body(None, False), {v: simplify_expr(lo + (ext.value - 1))}))
        main = For(v, lo, IntImm(ext.value - 1, ext.dtype), loop.kind, body(None, True), loop.thread_tag,
                   loop.annotations) if ext.value > 1 else None  # fmt: skip
        out: Stmt = seq(*prologues, main, last)
    else:  # a symbolic trip count: one loop, the fetch of the next tile under a condition
        looped = For(v, lo, ext, loop.kind, body(simplify_expr(v + 1 < lo + ext), True), loop.thread_tag,
                     loop.annotations)  # fmt: skip
        out = IfThenElse(simplify_expr(ext > 0), seq(*prologues, looped))
    for new in reversed(news):
        out = Allocate(new, out)
    return out


def _flatten(s: Stmt) -> Stmt:
    """Merge nested sequences and drop the empty ones the removed nests left."""

    def fn(n: Any) -> Any:
        if isinstance(n, Seq):
            return seq(*[x for x in n.stmts if not (isinstance(x, Seq) and not x.stmts)]) if n.stmts else None
        return None

    out = post_order_map(s, fn)
    return out


def _inject_loop(loop: For) -> Stmt | None:
    found: list[tuple[AttrStmt, list[Var]]] = []
    allocs: dict[Buffer, Allocate] = {}
    _scopes(loop.body, loop.var, [], found, allocs)
    if not found:
        return None
    stages = []
    for attr, lets in found:
        alloc = allocs.get(attr.value[0])
        if alloc is None:
            raise DoubleBufferError(f"stage {_name(attr.value[0])!r}: double_buffer: its buffer is not allocated "
                                    f"inside loop {loop.var.name!r}")  # fmt: skip
        stages.append((attr, lets, alloc))
    return _inject(loop, stages)


def inject_double_buffer(stmt: Stmt) -> Stmt:
    """Double-buffer every stage marked by ``double_buffer()`` in the loop it is computed in."""
    if not any(isinstance(n, AttrStmt) and n.key == DOUBLE_BUFFER_SCOPE for n in walk(stmt)):
        return stmt
    out = post_order_map(stmt, lambda n: _inject_loop(n) if isinstance(n, For) else None)
    loops = {n.var for n in walk(out) if isinstance(n, For)}
    left = next((n for n in walk(out) if isinstance(n, AttrStmt) and n.key == DOUBLE_BUFFER_SCOPE
                 and n.value[1] in loops), None)  # fmt: skip
    if left is not None:
        raise DoubleBufferError(f"stage {_name(left.value[0])!r}: double_buffer: its nest is not directly inside loop "
                                f"{left.value[1].name!r} (it is under a condition); compute it at the loop that "
                                "refills it")  # fmt: skip
    # a loop of one iteration was simplified away: one tile, nothing to fetch ahead
    return post_order_map(out, lambda n: n.body if isinstance(n, AttrStmt) and n.key == DOUBLE_BUFFER_SCOPE else None)
