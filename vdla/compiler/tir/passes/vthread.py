"""Virtual threads: loops bound to ``vthread``/``cthread`` become one interleaved stream.

``s[C].bind(axis, te.thread_axis("vthread"))`` (or ``"cthread"``, the coprocessor kind
VTA uses) declares that the iterations of ``axis`` are independent "threads".  This pass
(TVM's ``InjectVirtualThread``) removes the loop and:

1. **replicates** the allocations inside it, one private copy per thread (index
   ``i`` becomes ``i + vt * size``, the allocation ``nthread`` times larger and hoisted
   out).  ``vthread`` replicates only buffers whose contents depend on the thread;
   ``cthread`` (no sharing) replicates every allocation;
2. **injects** the thread loop at the innermost statements that depend on the thread
   index: loops and sequences that do not depend on it are kept once and the threads'
   statements are interleaved inside them, which is what lets a decoupled
   access-execute machine overlap one thread's loads with another's compute.  A
   statement without inner loops is unrolled (``nthread < 16``); otherwise it is wrapped in
   a serial loop over the threads.
"""

from __future__ import annotations

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
    make_const,
    seq,
)
from ..visitor import post_order_map, pre_order_map, substitute, walk
from .simplify import simplify_expr

VIRTUAL_TAGS = ("vthread", "cthread")
#: unroll the injected thread loop of a loop-free statement below this many threads
MAX_UNROLL_THREADS = 16


class VirtualThreadError(ValueError):
    pass


def is_virtual(loop: Any) -> bool:
    return isinstance(loop, For) and loop.kind == "thread_binding" and (loop.thread_tag or "").startswith(VIRTUAL_TAGS)


def _uses(node: Any, vars_: set[Var], bufs: set[Buffer]) -> bool:
    for n in walk(node):
        if isinstance(n, Var) and n in vars_:
            return True
        if isinstance(n, BufferLoad) and n.buffer in bufs:
            return True
    return False


def _touched(body: Stmt, vt: Var) -> set[Buffer]:
    """Buffers whose contents depend on ``vt`` (directly or through lets, loops and loads)."""
    dep: set[Var] = {vt}
    bufs: set[Buffer] = set()
    changed = True
    while changed:
        changed = False
        for n in walk(body):
            if isinstance(n, BufferStore) and n.buffer not in bufs:
                if _uses(n.index, dep, bufs) or _uses(n.value, dep, bufs):
                    bufs.add(n.buffer)
                    changed = True
            elif isinstance(n, LetStmt) and n.var not in dep and _uses(n.value, dep, bufs):
                dep.add(n.var)
                changed = True
            elif isinstance(n, For) and n.var not in dep and _uses([n.min, n.extent], dep, bufs):  # type: ignore[arg-type]
                dep.add(n.var)
                changed = True
    return bufs


def _shift(index: Expr, off: Expr) -> Expr:
    if isinstance(index, Ramp):
        return Ramp(
            simplify_expr(BinOp("add", index.base, off, index.base.dtype)), index.stride, index.lanes, index.dtype
        )
    if isinstance(index, Broadcast):
        return Broadcast(BinOp("add", index.value, off, index.value.dtype), index.lanes, index.dtype)
    return BinOp("add", index, off.astype(index.dtype), index.dtype)


def _replicate(body: Stmt, vt: Var, n: int, share: bool) -> tuple[Stmt, list[Buffer]]:
    """Hoist and replicate the allocations inside ``body``; returns (body, new buffers)."""
    touched = _touched(body, vt) if share else None
    new: dict[Buffer, tuple[Buffer, Expr]] = {}

    def strip(s: Any) -> Any:
        if isinstance(s, Allocate) and (touched is None or s.buffer in touched):
            b = s.buffer
            size: Expr = make_const(1, "int32")
            for d in b.shape:
                size = simplify_expr(BinOp("mul", size, d.astype("int32"), "int32"))
            nb = Buffer(b.name, b.dtype, [simplify_expr(BinOp("mul", size, make_const(n, "int32"), "int32"))], b.scope)
            new[b] = (nb, size)
            return pre_order_map(s.body, strip)
        return None

    body = pre_order_map(body, strip)
    if not new:
        return body, []

    def rewrite(x: Any) -> Any:
        if isinstance(x, BufferLoad) and x.buffer in new:
            nb, size = new[x.buffer]
            return BufferLoad(nb, _shift(x.index, BinOp("mul", vt, size, "int32")), x.dtype)
        if isinstance(x, BufferStore) and x.buffer in new:
            nb, size = new[x.buffer]
            return BufferStore(nb, _shift(x.index, BinOp("mul", vt, size, "int32")), x.value)
        return None

    return post_order_map(body, rewrite), [nb for nb, _ in new.values()]


def _copies(s: Stmt, vt: Var, n: int) -> Stmt:
    if n < MAX_UNROLL_THREADS and not any(isinstance(x, For) for x in walk(s)):
        return seq(*[substitute(s, {vt: make_const(k, vt.dtype)}) for k in range(n)])
    v = Var(vt.name + ".s", vt.dtype)
    return For(v, make_const(0, vt.dtype), make_const(n, vt.dtype), "serial", substitute(s, {vt: v}))


def _inject(s: Stmt, vt: Var, n: int) -> Stmt:
    vs = {vt}
    if not _uses(s, vs, set()):
        return s
    if isinstance(s, Seq):
        return seq(*[_inject(x, vt, n) for x in s.stmts])
    if isinstance(s, For) and not _uses([s.min, s.extent], vs, set()):  # type: ignore[arg-type]
        return For(s.var, s.min, s.extent, s.kind, _inject(s.body, vt, n), s.thread_tag, s.annotations)
    if isinstance(s, IfThenElse) and not _uses(s.cond, vs, set()):
        other = None if s.else_case is None else _inject(s.else_case, vt, n)
        return IfThenElse(s.cond, _inject(s.then_case, vt, n), other)
    if isinstance(s, LetStmt) and not _uses(s.value, vs, set()):
        return LetStmt(s.var, s.value, _inject(s.body, vt, n))
    if isinstance(s, AttrStmt) and not (isinstance(s.value, Expr) and _uses(s.value, vs, set())):
        return AttrStmt(s.key, s.value, _inject(s.body, vt, n))
    if isinstance(s, Allocate):
        return Allocate(s.buffer, _inject(s.body, vt, n))
    return _copies(s, vt, n)


def _lower_vthread(loop: Any) -> Any | None:
    if not is_virtual(loop):
        return None
    ext = simplify_expr(loop.extent)
    if not isinstance(ext, IntImm):
        raise VirtualThreadError(f"virtual thread {loop.var.name!r} needs a constant extent, got {loop.extent}")
    n = ext.value
    vt = loop.var
    body = loop.body
    if not (isinstance(loop.min, IntImm) and loop.min.value == 0):
        body = substitute(body, {vt: BinOp("add", vt, loop.min, vt.dtype)})
    body, bufs = _replicate(body, vt, n, share=loop.thread_tag.startswith("vthread"))
    out = _inject(body, vt, n)
    for b in reversed(bufs):
        out = Allocate(b, out)
    return AttrStmt("virtual_thread", f"{loop.thread_tag}:{vt.name}={n}", out)


def inject_virtual_thread(stmt: Stmt) -> Stmt:
    """Lower every ``vthread``/``cthread``-bound loop (innermost first) to interleaved code."""
    return post_order_map(stmt, _lower_vthread)
