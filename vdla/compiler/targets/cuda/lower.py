"""The host/device split of a function lowered for a GPU, thread binding and shared-memory barriers.

:func:`split_host_device` takes the :class:`PrimFunc` that ``lower`` produced (loops bound
with ``s[C].bind(ax, te.thread_axis("threadIdx.x"))`` are ``thread_binding`` loops there)
and cuts it into :class:`Kernel` s, one per root statement: the host allocates the global
intermediates between them and launches them in order. In each kernel

* every loop bound to ``blockIdx.*``/``threadIdx.*`` becomes the thread's index (a special
  register); loops of one tag share it, so a stage computed inside ``threadIdx.x`` and
  bound to ``threadIdx.x`` again is fetched cooperatively; a loop shorter than the launch
  extent is guarded (``if threadIdx.x < n``);
* the launch extents are the largest loop of each tag (``blockIdx`` may depend on symbolic
  sizes, evaluated by the host at each call), checked against the architecture's limits;
* a cross-thread reduction (a reduce axis bound to ``threadIdx``) gets the exchange of the
  threads' partial values: a shared array and a tree of halving steps (:func:`_lower_allreduce`);
* ``shared`` allocations are summed against the block's static shared memory;
* :func:`storage_sync` inserts ``__syncthreads()`` between a write to a shared buffer and a
  later read of it (and a read and a later write: the next loop iteration's refill).

A loop nest with no bound loop at all is refused: it would run once per thread. Before the
split, :func:`lower_intrinsics` applies the users' ``tvm.ir.register_intrin_lowering`` rules;
:func:`threads_as_loops` gives the CPU reference of a GPU loop nest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...schedule.loop_nest import THREAD_ALLREDUCE
from ...schedule.primitives import ScheduleError
from ...tir import dtypes
from ...tir.nodes import (
    Allocate,
    AttrStmt,
    Buffer,
    BufferLoad,
    BufferStore,
    CallExtern,
    Cast,
    Evaluate,
    Expr,
    For,
    IfThenElse,
    IntImm,
    LetStmt,
    PrimFunc,
    Seq,
    Stmt,
    Var,
    seq,
)
from ...tir.passes.double_buffer import DOUBLE_BUFFER_WRITE
from ...tir.passes.simplify import simplify_expr
from ...tir.printer import expr_str
from ...tir.visitor import free_vars, substitute, walk
from .target import CudaLimits

THREAD_TAGS = tuple(f"{k}.{d}" for k in ("blockIdx", "threadIdx") for d in "xyz")
SYNC = "__syncthreads"


class CudaLoweringError(ScheduleError):
    """A schedule that cannot run on the GPU (unbound loops, too many threads, too much shared memory)."""


@dataclass(eq=False)
class Kernel:
    """One ``__global__`` function: its parameters, body (thread loops replaced) and launch shape."""

    name: str
    params: list[Any]  # Buffers (device pointers) and scalar Vars, in call order
    body: Stmt
    thread_vars: dict[str, Var]
    grid: tuple[Expr, Expr, Expr]
    block: tuple[int, int, int]
    shared_bytes: int = 0

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass(eq=False)
class DeviceModule:
    """A lowered function split for the GPU: global temporaries (host-allocated) and kernels in launch order."""

    func: PrimFunc
    temps: list[Buffer] = field(default_factory=list)
    kernels: list[Kernel] = field(default_factory=list)


def _stored(s: Stmt) -> list[str]:
    names: list[str] = []
    for n in walk(s):
        if isinstance(n, BufferStore) and n.buffer.name not in names:
            names.append(n.buffer.name)
    return names


def split_host_device(func: PrimFunc, target: CudaLimits) -> DeviceModule:
    """Cut ``func`` into kernels (see the module docstring); raise CudaLoweringError on bad schedules."""
    dev = DeviceModule(func)
    roots: list[Stmt] = []

    def peel(s: Stmt) -> None:
        if isinstance(s, Seq):
            for x in s.stmts:
                peel(x)
        elif isinstance(s, Allocate):
            if s.buffer.scope != "global":
                raise CudaLoweringError(
                    f"stage {s.buffer.name!r} is in scope {s.buffer.scope!r} but computed at root; on the GPU a "
                    f"{s.buffer.scope} buffer lives inside a kernel: compute_at it inside a thread-bound loop"
                )
            dev.temps.append(s.buffer)
            peel(s.body)
        else:
            roots.append(s)

    peel(func.body)
    roots = [r for r in roots if _stored(r) or any(isinstance(n, CallExtern) for n in walk(r))]
    for k, root in enumerate(roots):
        name = f"{func.name}_kernel" if len(roots) == 1 else f"{func.name}_kernel{k}"
        dev.kernels.append(_make_kernel(name, root, func, dev.temps, target))
    return dev


def _make_kernel(name: str, root: Stmt, func: PrimFunc, temps: list[Buffer], target: CudaLimits) -> Kernel:
    loops = [n for n in walk(root) if isinstance(n, For) and n.kind == "thread_binding"]
    for lp in loops:
        if lp.thread_tag not in THREAD_TAGS:
            raise CudaLoweringError(
                f"kernel {name!r}: loop {lp.var.name!r} is bound to {lp.thread_tag!r}; GPU thread axes are "
                f"{', '.join(THREAD_TAGS)} (vthread is lowered before)"
            )
    if not loops:
        raise CudaLoweringError(
            f"kernel {name!r}: the loop nest writing {', '.join(repr(x) for x in _stored(root))} is not bound to "
            "any GPU thread; bind its outer axes, e.g. s[T].bind(bx, te.thread_axis('blockIdx.x')) and "
            "s[T].bind(tx, te.thread_axis('threadIdx.x'))"
        )
    for n in walk(root):
        if isinstance(n, For) and n.kind == "parallel":
            raise CudaLoweringError(
                f"kernel {name!r}: loop {n.var.name!r} is marked parallel (a CPU thread pool); bind it to a GPU "
                "thread axis instead"
            )
    _check_nested_bindings(name, loops)
    _check_private_buffers(name, root)
    extents: dict[str, Expr] = {}
    for lp in loops:
        tag = lp.thread_tag
        assert tag is not None
        ext = simplify_expr(lp.extent)
        if tag.startswith("threadIdx") and not isinstance(ext, IntImm):
            raise CudaLoweringError(
                f"kernel {name!r}: loop {lp.var.name!r} bound to {tag} has extent {expr_str(ext)}, which is not a "
                "constant; split it by a constant factor and bind the inner part"
            )
        old = extents.get(tag)
        if old is None:
            extents[tag] = ext
        elif isinstance(old, IntImm) and isinstance(ext, IntImm):
            extents[tag] = ext if ext.value > old.value else old
        elif expr_str(old) != expr_str(ext):
            raise CudaLoweringError(
                f"kernel {name!r}: {tag} is bound to loops of extents {expr_str(old)} and {expr_str(ext)}; "
                "symbolic grid extents must agree"
            )
    block = tuple(_const(extents.get(f"threadIdx.{d}")) for d in "xyz")
    grid = tuple(extents.get(f"blockIdx.{d}", IntImm(1, "int32")) for d in "xyz")
    for d, n, lim in zip("xyz", block, target.max_threads_dim, strict=True):
        if n > lim:
            axes = ", ".join(sorted({repr(lp.var.name) for lp in loops if lp.thread_tag == f"threadIdx.{d}"
                                     and _const(simplify_expr(lp.extent)) == n}))  # fmt: skip
            raise CudaLoweringError(f"kernel {name!r}: axis {axes} bound to threadIdx.{d} has extent {n}; "
                                    f"{target.arch} allows {lim}; split it")  # fmt: skip
    for d, g, lim in zip("xyz", grid, target.max_grid_dim, strict=True):
        if isinstance(g, IntImm) and g.value > lim:
            raise CudaLoweringError(f"kernel {name!r}: blockIdx.{d} has extent {g.value}; {target.arch} allows {lim}")
    nthreads = block[0] * block[1] * block[2]
    if nthreads > target.max_threads_per_block:
        raise CudaLoweringError(
            f"kernel {name!r}: {nthreads} threads per block (threadIdx x,y,z = {block[0]},{block[1]},{block[2]}) "
            f"exceeds the {target.max_threads_per_block} {target.arch} allows; use smaller thread tiles"
        )
    tvars = {tag: Var(tag, "int32") for tag in extents}

    def bind(s: Any) -> Any:
        if isinstance(s, For) and s.kind == "thread_binding":
            tv = tvars[s.thread_tag]  # type: ignore[index]
            val: Expr = tv if s.var.dtype == "int32" else Cast(s.var.dtype, tv)
            body = substitute(bind(s.body), {s.var: simplify_expr(s.min + val)})
            ext = simplify_expr(s.extent)
            launch = extents[s.thread_tag]  # type: ignore[index]
            if not (isinstance(ext, IntImm) and isinstance(launch, IntImm) and ext.value == launch.value) and (
                expr_str(ext) != expr_str(launch)
            ):
                body = IfThenElse(tv < ext.astype("int32"), body)
            return body
        if isinstance(s, Seq):
            return seq(*[bind(x) for x in s.stmts])
        if isinstance(s, For):
            return For(s.var, s.min, s.extent, s.kind, bind(s.body), s.thread_tag, s.annotations)
        if isinstance(s, IfThenElse):
            return IfThenElse(s.cond, bind(s.then_case), None if s.else_case is None else bind(s.else_case))
        if isinstance(s, Allocate | AttrStmt | LetStmt):
            kw = dict(s.__dict__)
            kw["body"] = bind(s.body)
            return type(s)(**kw)
        return s

    body = bind(root)
    body = _lower_allreduce(name, body, tvars, block)
    shared = 0
    parts = []
    for n in walk(body):
        if not isinstance(n, Allocate):
            continue
        sc = n.buffer.scope
        if sc == "global":
            raise CudaLoweringError(
                f"kernel {name!r}: stage {n.buffer.name!r} (scope global) is computed inside the kernel; give it "
                "scope 'shared' or 'local' (s[T].set_scope / cache_read) or compute it at root"
            )
        if sc not in ("shared", "local"):
            raise CudaLoweringError(f"kernel {name!r}: buffer {n.buffer.name!r} has scope {sc!r}; use shared or local")
        size = 1
        for d in n.buffer.shape:
            c = simplify_expr(d)
            if not isinstance(c, IntImm):
                raise CudaLoweringError(
                    f"kernel {name!r}: {sc} buffer {n.buffer.name!r} has a symbolic size ({expr_str(d)}); "
                    "on-chip buffers need constant tiles"
                )
            size *= c.value
        if sc == "shared":
            nbytes = size * max(1, dtypes.bits(n.buffer.dtype) // 8)
            shared += nbytes
            parts.append(f"{n.buffer.name} {nbytes} B")
    if shared > target.max_shared_memory_per_block:
        raise CudaLoweringError(
            f"kernel {name!r}: {shared} bytes of shared memory ({', '.join(parts)}) exceeds the "
            f"{target.max_shared_memory_per_block} bytes a block may declare on {target.arch}; use smaller tiles"
        )
    body = storage_sync(body, name, set(tvars.values()))
    for tag in reversed(list(extents)):
        body = AttrStmt("thread_extent", f"{tag}={expr_str(extents[tag])}", body)
    return Kernel(name, _kernel_params(body, func, temps, set(tvars.values())), body, tvars, grid, block, shared)


def _check_nested_bindings(kernel: str, loops: list[For]) -> None:
    """A loop bound to a thread axis inside a loop bound to the same axis shares its thread index
    (a cooperative copy): it must not need more threads than the outer loop has (the extra ones
    would sit out under the outer loop's guard) and cannot fill a thread's private buffer."""
    for outer in loops:
        for inner in walk(outer.body):
            if not (isinstance(inner, For) and inner.kind == "thread_binding" and inner.thread_tag == outer.thread_tag):
                continue
            oe, ie = simplify_expr(outer.extent), simplify_expr(inner.extent)
            if isinstance(oe, IntImm) and isinstance(ie, IntImm) and ie.value > oe.value:
                raise CudaLoweringError(
                    f"kernel {kernel!r}: loop {inner.var.name!r} binds {inner.thread_tag} to {ie.value} threads inside "
                    f"loop {outer.var.name!r}, which binds it to {oe.value}; a copy computed there can use at most "
                    f"{oe.value} (split it by {oe.value})"
                )
            local = sorted({n.buffer.name for n in walk(inner.body) if isinstance(n, BufferStore)
                            and n.buffer.scope == "local"})  # fmt: skip
            if local:
                raise CudaLoweringError(
                    f"kernel {kernel!r}: {', '.join(local)} (scope local, private to each thread) is filled by loop "
                    f"{inner.var.name!r} bound to {inner.thread_tag} inside loop {outer.var.name!r} bound to it too; "
                    "bind only stages in shared memory to the threads that share them"
                )


def _allreduce_parts(node: AttrStmt) -> tuple[list[BufferStore], list[Stmt], Stmt]:
    """A cross-thread reduction's (A) inits of the per-thread buffers (one per reduced value),
    (B) accumulation, (C) store (:meth:`vdla.compiler.schedule.loop_nest._Lowering.cross_thread_nest`)."""
    stmts = list(node.body.stmts) if isinstance(node.body, Seq) else [node.body]
    n = node.value.n_values
    inits = stmts[:n]
    if len(stmts) < n + 2 or not all(isinstance(x, BufferStore) and x.buffer.scope == "local" for x in inits):
        raise CudaLoweringError(f"cross-thread reduction {node.value}: its loop nest was changed by a pass "
                                "this back end does not know")  # fmt: skip
    return inits, stmts[n:-1], stmts[-1]  # type: ignore[return-value]


def _lower_allreduce(kernel: str, body: Stmt, tvars: dict[str, Var], block: tuple[int, int, int]) -> Stmt:
    """Combine the partial values of every cross-thread reduction in ``body`` across its threads.

    Between each thread's accumulation and the store, every thread of the block writes its
    partial value to a shared array (one slot per thread), a tree halves the reduced
    thread dimension(s) step by step (``if tx < off: a[t] = a[t] (+) a[t + off]``), and each
    thread reads back its group's total; :func:`storage_sync` puts the barriers between the
    steps. Threads outside the loop bound to the axis (a shorter loop than the launch) keep
    the identity, so the tree runs over the whole launch extent."""
    bx, by, bz = block
    ext = {"x": bx, "y": by, "z": bz}
    stride = {"x": 1, "y": bx, "z": bx * by}

    def tid(d: str) -> Expr:
        return tvars.get(f"threadIdx.{d}", IntImm(0, "int32"))

    flat = simplify_expr(tid("x") + tid("y") * bx + tid("z") * (bx * by))

    def fn(s: Any) -> Any:
        if not (isinstance(s, AttrStmt) and s.key == THREAD_ALLREDUCE):
            return None
        inits, acc, store = _allreduce_parts(s)
        reds = [x.buffer for x in inits]
        zero = IntImm(0, "int32")
        smems = [Buffer(f"{r.name}.shared", r.dtype, [IntImm(bx * by * bz, "int32")], "shared") for r in reds]
        comb = s.value.combiner

        def combine(mine: Expr, theirs: Expr) -> Stmt:
            """smem[mine] (+)= smem[theirs], every value of a tuple from the old ones."""
            if len(reds) == 1:
                a, b = BufferLoad(smems[0], mine, reds[0].dtype), BufferLoad(smems[0], theirs, reds[0].dtype)
                return BufferStore(smems[0], mine, comb.combine(a, b))
            new = comb.combine_tuple([BufferLoad(m, mine, m.dtype) for m in smems],
                                     [BufferLoad(m, theirs, m.dtype) for m in smems])  # fmt: skip
            tmps = [Var(f"{m.name}.new", m.dtype) for m in smems]
            out: Stmt = seq(*[BufferStore(m, mine, v) for m, v in zip(smems, tmps, strict=True)])
            for v, e in reversed(list(zip(tmps, new, strict=True))):
                out = LetStmt(v, e, out)
            return out

        steps: list[Stmt] = [BufferStore(m, flat, BufferLoad(r, zero, r.dtype)) for m, r in zip(smems, reds, strict=True)]
        base = flat
        for d in "xyz":
            if f"threadIdx.{d}" not in s.value.tags:
                continue
            e = ext[d]
            base = base - tid(d) * stride[d]
            off = (1 << (e - 1).bit_length()) // 2 if e > 1 else 0
            while off >= 1:
                cond = tid(d) < off
                if off * 2 > e:  # a non-power-of-two extent: the partner may not exist
                    cond = cond & (tid(d) + off < e)
                steps.append(IfThenElse(cond, combine(flat, simplify_expr(flat + off * stride[d]))))
                off //= 2
        steps += [BufferStore(r, zero, BufferLoad(m, simplify_expr(base), r.dtype)) for m, r in zip(smems, reds, strict=True)]
        out: Stmt = seq(*steps)
        for m in reversed(smems):
            out = Allocate(m, out)
        return seq(*inits, *acc, out, store)

    from ...tir.visitor import pre_order_map

    return pre_order_map(body, fn)


def _check_private_buffers(kernel: str, root: Stmt) -> None:
    """Each thread has its own ``local`` buffers and each block its own ``shared`` ones. Written
    under one loop bound to threadIdx (resp. blockIdx) and read under another, such a buffer
    would pass values between threads in the loop nest but not on the GPU, so it is refused
    (but for a cross-thread reduction's partial value, which the threads exchange)."""
    exchanged = {x.buffer for n in walk(root) if isinstance(n, AttrStmt) and n.key == THREAD_ALLREDUCE
                 for x in _allreduce_parts(n)[0]}  # fmt: skip
    for a in walk(root):
        if not isinstance(a, Allocate) or a.buffer.scope not in ("local", "shared") or a.buffer in exchanged:
            continue
        kind = "threadIdx" if a.buffer.scope == "local" else "blockIdx"
        loops = [lp for lp in walk(a.body)
                 if isinstance(lp, For) and lp.kind == "thread_binding" and (lp.thread_tag or "").startswith(kind)]  # fmt: skip
        inside = {id(lp): {id(n) for n in walk(lp.body)} for lp in loops}
        writes = [lp for lp in loops if any(isinstance(n, BufferStore) and n.buffer is a.buffer for n in walk(lp.body))]
        reads = [lp for lp in loops if any(isinstance(n, BufferLoad) and n.buffer is a.buffer for n in walk(lp.body))]
        for w in writes:
            for r in reads:
                if w is r or id(r) in inside[id(w)] or id(w) in inside[id(r)]:
                    continue
                who = "thread" if kind == "threadIdx" else "block"
                raise CudaLoweringError(
                    f"kernel {kernel!r}: {a.buffer.name} (scope {a.buffer.scope}, one per {who}) is written under loop "
                    f"{w.var.name!r} and read under loop {r.var.name!r}, both bound to {kind}: on the GPU those are "
                    f"different {who}s' copies; compute it inside the reading loop, or use "
                    f"{'shared' if kind == 'threadIdx' else 'global'} memory"
                )


def _const(e: Expr | None) -> int:
    if e is None:
        return 1
    assert isinstance(e, IntImm)
    return e.value


def _kernel_params(body: Stmt, func: PrimFunc, temps: list[Buffer], tvars: set[Var]) -> list[Any]:
    used: list[Buffer] = []
    local: set[Buffer] = set()
    for n in walk(body):
        if isinstance(n, Allocate):
            local.add(n.buffer)
        if isinstance(n, BufferLoad | BufferStore) and n.buffer not in used:
            used.append(n.buffer)
    bufs = [b for b in list(func.params) + temps if isinstance(b, Buffer) and b in used and b not in local]
    fv = [v for v in free_vars(body) if v not in tvars]
    order = [p for p in func.params if isinstance(p, Var)] + list(func.attrs.get("shape_vars", []))
    scalars = [v for v in order if v in fv]
    missing = [v.name for v in fv if v not in order]
    if missing:
        raise CudaLoweringError(f"variables {missing} are used in a kernel but are not parameters")
    return bufs + scalars


# ---------------------------------------------------------------------------- barriers


def _barrier() -> Stmt:
    return Evaluate(CallExtern(SYNC, [], "void"))


def _ahead(s: Stmt) -> set[int]:
    """The stores of a double buffer's next half (under a ``double_buffer_write`` attribute) in ``s``."""
    return {id(x) for a in walk(s) if isinstance(a, AttrStmt) and a.key == DOUBLE_BUFFER_WRITE
            for x in walk(a.body) if isinstance(x, BufferStore) and x.buffer is a.value}  # fmt: skip


def _shared_access(s: Stmt, ahead: set[int] | frozenset[int] = frozenset()) -> tuple[set[Any], set[Any]]:
    """The shared buffers ``s`` reads and writes; a store of ``ahead`` (:func:`_ahead`: the next
    iteration's half of a double buffer) is the pair ``("db", buffer)``."""
    reads: set[Any] = set()
    writes: set[Any] = set()
    for n in walk(s):
        if isinstance(n, BufferStore) and n.buffer.scope == "shared":
            writes.add(("db", n.buffer) if id(n) in ahead else n.buffer)
        elif isinstance(n, BufferLoad) and n.buffer.scope == "shared":
            reads.add(n.buffer)
    return reads, writes


def _carried(state: frozenset) -> frozenset:
    """Accesses seen from a later iteration of the loop (or after it): a double buffer's write of
    the next half is an ordinary write there, and a read conflicts with that write."""
    out = {x[1] if isinstance(x, tuple) else x for x in state}
    return frozenset(out | {("db", b) for b in out})


def _fetches_ahead(s: Stmt) -> bool:
    """Does loop body ``s`` fetch a double buffer's next half itself (not in an inner loop)?"""
    if isinstance(s, AttrStmt) and s.key == DOUBLE_BUFFER_WRITE:
        return True
    if isinstance(s, For):
        return False
    if isinstance(s, Seq):
        return any(_fetches_ahead(x) for x in s.stmts)
    if isinstance(s, IfThenElse):
        return _fetches_ahead(s.then_case) or (s.else_case is not None and _fetches_ahead(s.else_case))
    if isinstance(s, Allocate | AttrStmt | LetStmt):
        return _fetches_ahead(s.body)
    return False


def storage_sync(body: Stmt, kernel: str, tvars: set[Var]) -> Stmt:
    """Insert ``__syncthreads()`` wherever a shared buffer is read after a write (or written after a
    read, e.g. by the next iteration of the loop that refills a tile) with no barrier between.

    Barriers go before the outermost statement that conflicts, so one barrier covers a whole
    fetch loop; inside a loop the state at the end of the body is carried round to its start.
    A barrier that would sit under a condition on ``threadIdx`` (not all threads reach it)
    is an error."""
    tnames = {v for v in tvars if v.name.startswith("threadIdx")}
    ahead = _ahead(body)  # stores keep their identity while barriers are placed
    double = bool(ahead)

    def divergent(e: Expr) -> bool:
        return any(isinstance(n, Var) and n in tnames for n in walk(e))

    def plan(s: Stmt, pr: frozenset, pw: frozenset, where: str | None) -> tuple[Stmt, frozenset, frozenset]:
        reads, writes = _shared_access(s, ahead)
        if not reads and not writes:
            return s, pr, pw
        if isinstance(s, Seq):
            out = []
            for x in s.stmts:
                x2, pr, pw = plan(x, pr, pw, where)
                out.append(x2)
            return seq(*out), pr, pw
        if isinstance(s, Allocate | AttrStmt | LetStmt):  # containers: the barrier goes inside, late
            b2, r2, w2 = plan(s.body, pr, pw, where)
            kw = dict(s.__dict__)
            kw["body"] = b2
            return type(s)(**kw), r2, w2
        # a loop fetching a double buffer's next half starts each step with a barrier before any
        # access that conflicts with what came before it: that barrier covers the loop's first step
        ahead_loop = double and where is None and isinstance(s, For) and _fetches_ahead(s.body)
        if ((reads & pw) or (writes & pr)) and not ahead_loop:
            if where is not None:
                bufs = sorted({getattr(b, "name", None) or b[1].name for b in (reads & pw) | (writes & pr)})
                raise CudaLoweringError(
                    f"kernel {kernel!r}: shared buffer(s) {', '.join(bufs)} need a barrier inside {where}, which "
                    "not every thread of the block reaches; use tile sizes that divide the shape (no guard) or "
                    "equal thread extents for the stages that share memory"
                )
            inner, r2, w2 = plan(s, frozenset(), frozenset(), where)
            return seq(_barrier(), inner), r2, w2
        if isinstance(s, For):
            w = where
            if w is None and (divergent(s.min) or divergent(s.extent)):
                w = f"loop {s.var.name!r} (extent {expr_str(s.extent)})"
            _, er, ew = plan(s.body, frozenset(), frozenset(), w)
            owns = double and _fetches_ahead(s.body)
            if owns:  # what the last iteration left, seen by the next one (and what came before the loop)
                pr, pw, er, ew = _carried(pr), _carried(pw), _carried(er), _carried(ew)
            b2, r2, w2 = plan(s.body, pr | er, pw | ew, w)
            if owns:
                r2, w2 = _carried(r2), _carried(w2)
            return For(s.var, s.min, s.extent, s.kind, b2, s.thread_tag, s.annotations), pr | r2, pw | w2
        if isinstance(s, IfThenElse):
            w = where if where is not None or not divergent(s.cond) else f"'if {expr_str(s.cond)}'"
            t2, tr, tw = plan(s.then_case, pr, pw, w)
            if s.else_case is None:
                return IfThenElse(s.cond, t2, None), pr | tr, pw | tw
            e2, er2, ew2 = plan(s.else_case, pr, pw, w)
            return IfThenElse(s.cond, t2, e2), tr | er2, tw | ew2
        return s, pr | reads, pw | writes

    out, _, _ = plan(body, frozenset(), frozenset(), None)
    return out



def lower_intrinsics(func: PrimFunc, kinds: tuple[str, ...] = ("cuda",)) -> PrimFunc:
    """Apply the users' intrinsic lowering rules (``tvm.ir.register_intrin_lowering(op, target=kind,
    f=rule)``) to every call of a registered operator; a rule returning the call unchanged leaves
    it to the code generator (libdevice's ``__nv_*`` for the math calls)."""
    from ...tir.nodes import Call, convert
    from ...tir.op_registry import lowering_rule
    from ...tir.visitor import post_order_map

    def fn(e: Any) -> Any:
        if not isinstance(e, Call):
            return None
        rule = lowering_rule(f"tir.{e.name}", kinds)
        if rule is None:
            return None
        out = rule(e)
        if out is None or out is e:
            return None
        out = convert(out)
        if out.dtype != e.dtype:
            raise CudaLoweringError(f"the {'/'.join(kinds)} lowering rule of tir.{e.name} ({getattr(rule, '__name__', rule)})"
                                    f" turned a {e.dtype} call into a {out.dtype} value")  # fmt: skip
        return out

    body = post_order_map(func.body, fn)
    return func if body is func.body else PrimFunc(func.name, func.params, body, dict(func.attrs))


def threads_as_loops(func: PrimFunc) -> PrimFunc:
    """The same function with every GPU-thread-bound loop made a serial loop: a CPU reference of a
    GPU schedule (``vdla.build(threads_as_loops(vdla.lower(s, args)), target="llvm")``).

    It runs the schedule's index arithmetic, bound inference (shared tiles relaxed over the
    block's threads) and guards on the CPU, where they can be checked against numpy; what only
    the GPU has (barriers, address spaces, special registers) is checked by ptxas."""

    def fn(s: Any) -> Any:
        if isinstance(s, For) and s.kind == "thread_binding" and s.thread_tag in THREAD_TAGS:
            return For(s.var, s.min, s.extent, "serial", s.body, None, s.annotations)
        return None

    from ...tir.visitor import post_order_map

    return PrimFunc(func.name, func.params, post_order_map(func.body, fn), dict(func.attrs))


__all__ = ["Kernel", "DeviceModule", "split_host_device", "storage_sync", "threads_as_loops", "lower_intrinsics", "CudaLoweringError", "THREAD_TAGS", "SYNC"]
