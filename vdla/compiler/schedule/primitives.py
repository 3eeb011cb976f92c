"""Halide-style schedules: *how* to compute the tensors declared with ``te``.

A :class:`Schedule` holds one :class:`Stage` per operation.  Stage primitives change the
loop structure (split, fuse, reorder, tile), where a stage is computed (compute_at,
compute_inline, compute_root), how loops run (vectorize, unroll, parallel, bind,
pragma) and where data lives (cache_read, cache_write, set_scope).  Nothing is lowered
here: the primitives record relations that :mod:`vdla.compiler.schedule.loop_nest` turns into
loops.  Every misuse raises :class:`ScheduleError` naming the stage and the axis.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..te.operation import ComputeOp, ExternOp, IterVar, Operation, PlaceholderOp, Range, ScanOp, Tensor, check_reads
from ..tir.nodes import Expr, IntImm, Reduce, Select, TensorRead, Var, as_bool, convert
from ..tir.visitor import post_order_map, substitute, walk


class ScheduleError(ValueError):
    """An invalid scheduling request; the message names the stage and the axis."""


@dataclass(eq=False)
class Split:
    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: Expr | None
    nparts: Expr | None


@dataclass(eq=False)
class Fuse:
    outer: IterVar
    inner: IterVar
    fused: IterVar


ANNOTATIONS = ("vectorize", "unroll", "parallel", "bind")


class Stage:
    """The schedule of one operation."""

    def __init__(self, op: Operation, schedule: Schedule) -> None:
        self.op = op
        self.origin_op = op
        self.schedule = schedule
        self.attach_type = "root"
        self.attach_stage: Stage | None = None
        self.attach_ivar: IterVar | None = None
        self.scope = "global"
        self.scope_given = False  # set_scope / cache_read / cache_write chose it (else TVM's default rule applies)
        self.is_output = False
        self.relations: list[Split | Fuse] = []
        self.iter_var_attrs: dict[IterVar, dict[str, Any]] = {}
        self.tensorize_intrin: dict[IterVar, Any] = {}
        self.scan_group: Stage | None = None  # the scan whose time loop this stage runs in
        self.store_predicate: Expr | None = None
        self.double_buffered = False  # double_buffer(): lowering gives it two halves (tir.passes.double_buffer)
        self._reset_axes()

    def _reset_axes(self) -> None:
        if isinstance(self.op, ComputeOp):
            self.all_iter_vars: list[IterVar] = list(self.op.axis) + list(self.op.reduce_axis)
        else:
            self.all_iter_vars = []
        self.leaf_iter_vars: list[IterVar] = list(self.all_iter_vars)

    @property
    def name(self) -> str:
        return self.op.name

    def __repr__(self) -> str:
        return f"Stage({self.name})"

    # ------------------------------------------------------------------ helpers
    def _err(self, msg: str) -> ScheduleError:
        return ScheduleError(f"stage {self.name!r}: {msg}")

    def _compute(self, what: str) -> None:
        if isinstance(self.op, ScanOp):
            raise self._err(f"{what}: it is a scan; schedule its init and update stages instead")
        if isinstance(self.op, ExternOp):
            raise self._err(f"{what}: it is an extern op (te.extern); its loops are the ones its body writes")
        if not isinstance(self.op, ComputeOp):
            raise self._err(f"{what}: it is a placeholder (an input) and has no loops to schedule")

    def _leaf(self, iv: Any, what: str) -> int:
        self._compute(what)
        if not isinstance(iv, IterVar):
            raise self._err(f"{what}: expected an axis (IterVar), got {iv!r}")
        if iv not in self.all_iter_vars:
            raise self._err(f"{what}: axis {iv.name!r} does not belong to this stage")
        if iv not in self.leaf_iter_vars:
            raise self._err(
                f"{what}: axis {iv.name!r} is no longer a loop of this stage (it was already split or fused)"
            )
        return self.leaf_iter_vars.index(iv)

    def _new_iv(self, name: str, iter_type: str) -> IterVar:
        iv = IterVar(None, Var(name, "int32"), iter_type)
        self.all_iter_vars.append(iv)
        return iv

    # ------------------------------------------------------------------ loop transforms
    def split(self, parent: IterVar, factor: Any = None, nparts: Any = None) -> tuple[IterVar, IterVar]:
        """Split ``parent`` into (outer, inner) by an inner ``factor`` or a number of outer ``nparts``."""
        pos = self._leaf(parent, "split")
        if (factor is None) == (nparts is None):
            raise self._err(f"split of axis {parent.name!r}: give exactly one of factor= or nparts=")
        amount = convert(factor if factor is not None else nparts)
        if isinstance(amount, IntImm) and amount.value <= 0:
            kind = "factor" if factor is not None else "nparts"
            raise self._err(f"split of axis {parent.name!r}: {kind} must be positive, got {amount.value}")
        outer = self._new_iv(f"{parent.name}.outer", parent.iter_type)
        inner = self._new_iv(f"{parent.name}.inner", parent.iter_type)
        self.relations.append(
            Split(parent, outer, inner, amount if factor is not None else None, amount if nparts is not None else None)
        )
        self.leaf_iter_vars[pos : pos + 1] = [outer, inner]
        return outer, inner

    def fuse(self, *axes: IterVar) -> IterVar:
        """Fuse adjacent loops (outer first) into one."""
        if len(axes) == 1 and isinstance(axes[0], list | tuple):
            axes = tuple(axes[0])
        if not axes:
            raise self._err("fuse: no axes given")
        pos = [self._leaf(a, "fuse") for a in axes]
        if len(axes) == 1:
            return axes[0]
        for a, b, pa, pb in zip(axes, axes[1:], pos, pos[1:], strict=False):
            if pb != pa + 1:
                raise self._err(
                    f"fuse: axes {a.name!r} (loop {pa}) and {b.name!r} (loop {pb}) are not adjacent in loop order; "
                    "reorder them first (outer axis first)"
                )
            if a.iter_type != b.iter_type:
                raise self._err(f"fuse: cannot fuse {a.iter_type} axis {a.name!r} with {b.iter_type} axis {b.name!r}")
        cur = axes[0]
        for nxt in axes[1:]:
            fused = self._new_iv(f"{cur.name}.{nxt.name}.fused", cur.iter_type)
            self.relations.append(Fuse(cur, nxt, fused))
            i = self.leaf_iter_vars.index(cur)
            self.leaf_iter_vars[i : i + 2] = [fused]
            cur = fused
        return cur

    def reorder(self, *axes: IterVar) -> None:
        """Put the given loops in this order (they keep the positions the set occupied)."""
        if len(axes) == 1 and isinstance(axes[0], list | tuple):
            axes = tuple(axes[0])
        pos = [self._leaf(a, "reorder") for a in axes]
        if len(set(pos)) != len(pos):
            dup = [a.name for a in axes if sum(b is a for b in axes) > 1]
            raise self._err(f"reorder: axis {dup[0]!r} is given more than once")
        for p, a in zip(sorted(pos), axes, strict=True):
            self.leaf_iter_vars[p] = a

    def tile(self, x: IterVar, y: IterVar, x_factor: Any, y_factor: Any) -> tuple[IterVar, IterVar, IterVar, IterVar]:
        """Split x and y and reorder to (x.outer, y.outer, x.inner, y.inner)."""
        xo, xi = self.split(x, factor=x_factor)
        yo, yi = self.split(y, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    # ------------------------------------------------------------------ placement
    def compute_at(self, parent: Stage, axis: IterVar) -> None:
        """Compute this stage inside loop ``axis`` of its consumer ``parent``."""
        self._compute("compute_at")
        if not isinstance(parent, Stage):
            raise self._err(f"compute_at: expected a Stage (s[tensor]), got {parent!r}")
        if self.is_output:
            raise self._err("compute_at: it is an output of the schedule and must be computed at root")
        if parent is self:
            raise self._err("compute_at: a stage cannot be computed at itself")
        parent._leaf(axis, f"compute_at({self.name})")
        if not self.schedule._reads(parent, self) and not self.schedule._feeds(self, parent):
            raise self._err(
                f"compute_at: stage {parent.name!r} does not read {self.name!r}; a stage can only be computed "
                "inside one of its consumers (or a consumer of its consumers)"
            )
        p: Stage | None = parent
        while p is not None:
            if p is self:
                raise self._err(f"compute_at: attaching at {parent.name!r} would create a cycle")
            p = p.attach_stage if p.attach_type == "scope" else None
        self.attach_type = "scope"
        self.attach_stage = parent
        self.attach_ivar = axis

    def compute_inline(self) -> None:
        """Substitute this stage's expression into its consumers (no loops, no storage)."""
        self._compute("compute_inline")
        if self.is_output:
            raise self._err("compute_inline: it is an output of the schedule")
        if isinstance(self.op, ComputeOp) and self.op.reduce_axis:
            raise self._err("compute_inline: it is a reduction; only injective stages can be inlined")
        self.attach_type = "inline"
        self.attach_stage = None
        self.attach_ivar = None

    def compute_root(self) -> None:
        """Compute this stage on its own at the top level (the default; inside its scan's
        time loop for a scan body stage)."""
        self._compute("compute_root")
        if self.scan_group is not None:
            self.attach_type = "scan"
            self.attach_stage = self.scan_group
            self.attach_ivar = None
            return
        self.attach_type = "root"
        self.attach_stage = None
        self.attach_ivar = None

    def set_scope(self, scope: str) -> None:
        self.scope = scope
        self.scope_given = True

    def set_store_predicate(self, predicate: Any) -> None:
        """Store this stage's values only where ``predicate`` holds (TVM's ``set_store_predicate``)."""
        self._compute("set_store_predicate")
        self.store_predicate = as_bool(predicate)

    def double_buffer(self) -> None:
        """Give this stage two copies of its buffer, so the loop it is computed in fills the next
        iteration's tile while the current one is read (TVM's ``double_buffer``): one barrier per
        iteration instead of two. The stage must be in ``shared`` memory and computed inside a
        serial loop of its consumer (``compute_at``); lowering checks both and names the stage."""
        self._compute("double_buffer")
        self.double_buffered = True

    # ------------------------------------------------------------------ annotations
    def _annotate(self, iv: IterVar, kind: str, **extra: Any) -> None:
        self._leaf(iv, kind)
        attrs = self.iter_var_attrs.setdefault(iv, {})
        old = attrs.get("kind")
        if old is not None and old != kind:
            raise self._err(f"{kind}: axis {iv.name!r} is already marked {old}")
        attrs["kind"] = kind
        attrs.update(extra)

    def vectorize(self, axis: IterVar) -> None:
        """Run loop ``axis`` as one vector operation (needs a constant extent)."""
        self._annotate(axis, "vectorize")

    def unroll(self, axis: IterVar) -> None:
        """Unroll loop ``axis`` completely (needs a constant extent)."""
        self._annotate(axis, "unroll")

    def parallel(self, axis: IterVar) -> None:
        """Run the iterations of loop ``axis`` on a thread pool."""
        self._leaf(axis, "parallel")
        if axis.iter_type == "reduce":
            raise self._err(f"parallel: axis {axis.name!r} is a reduction axis; its iterations are not independent")
        self._annotate(axis, "parallel")

    def bind(self, axis: IterVar, thread: IterVar) -> None:
        """Bind loop ``axis`` to a thread axis (GPU block/thread index, vthread, cthread)."""
        if not isinstance(thread, IterVar) or thread.iter_type != "thread":
            raise self._err(f"bind: {thread!r} is not a thread axis; create it with te.thread_axis(tag)")
        self._annotate(axis, "bind", thread=thread)

    def pragma(self, axis: IterVar, key: str, value: Any = None) -> None:
        """Attach a pragma ``key`` (with an optional value) to loop ``axis``."""
        self._leaf(axis, "pragma")
        self.iter_var_attrs.setdefault(axis, {}).setdefault("pragmas", []).append((key, value))

    def tensorize(self, axis: IterVar, intrin: Any) -> None:
        """Replace the loops from ``axis`` inwards by a declared intrinsic (see TensorIntrin)."""
        self._leaf(axis, "tensorize")
        self.tensorize_intrin[axis] = intrin


class Schedule:
    """Stages of all operations reachable from the outputs, in topological order."""

    def __init__(self, outputs: list[Operation]) -> None:
        self.outputs = outputs
        self.stages: list[Stage] = []
        self.stage_map: dict[Operation, Stage] = {}
        self.tensor_map: dict[Tensor, Tensor] = {}
        visited: set[Operation] = set()

        def visit(op: Operation) -> None:
            if op in visited:
                return
            visited.add(op)
            for t in op.input_tensors():
                visit(t.op)
            st = Stage(op, self)
            self.stages.append(st)
            self.stage_map[op] = st

        for op in outputs:
            visit(op)
        for op in outputs:
            self.stage_map[op].is_output = True
        for st in list(self.stages):
            if isinstance(st.op, ScanOp):
                self._mark_scan_body(st)
        for st in self.stages:
            self._check_reads(st)

    @staticmethod
    def _check_reads(st: Stage) -> None:
        """Raise a read past an input's shape that `te.compute` found (see `te.operation.check_reads`),
        unless the stage runs in a scan's time loop and the read is valid over the loop's range."""
        err = getattr(st.op, "read_error", None)
        if err is None:
            return
        scan = st.scan_group.op if st.scan_group is not None else None
        if isinstance(scan, ScanOp) and st.op not in [t.op for t in scan.init]:
            lo, ext = scan.scan_axis.dom.min, scan.scan_axis.dom.extent
            if not (isinstance(lo, IntImm) and isinstance(ext, IntImm)):
                return  # a symbolic time range: the scan's own shape checks apply
            check_reads(st.op, (lo.value, lo.value + ext.value - 1))
            return
        raise err

    def _mark_scan_body(self, scan_stage: Stage) -> None:
        """Stages between a scan's state placeholders and its updates (plus its inits) run
        inside the scan: inits before the time loop, the rest once per time step."""
        op = scan_stage.op
        assert isinstance(op, ScanOp)
        states = {t.op for t in op.state_placeholder}
        memo: dict[Operation, bool] = {}

        def reads_state(o: Operation) -> bool:
            if o in memo:
                return memo[o]
            memo[o] = False
            r = any(t.op in states or reads_state(t.op) for t in o.input_tensors())
            memo[o] = r
            return r

        body: list[Operation] = []
        todo = [t.op for t in op.update]
        while todo:
            o = todo.pop()
            if o in body or not isinstance(o, ComputeOp) or not (reads_state(o) or o in [u.op for u in op.update]):
                continue
            body.append(o)
            todo.extend(t.op for t in o.input_tensors())
        for o in body + [t.op for t in op.init]:
            st = self.stage_map[o]
            st.scan_group = scan_stage
            st.attach_type = "scan"
            st.attach_stage = scan_stage

    def __getitem__(self, key: Tensor | Operation) -> Stage:
        op = key.op if isinstance(key, Tensor) else key
        if not isinstance(op, Operation) or op not in self.stage_map:
            raise ScheduleError(f"{key!r} is not part of this schedule")
        return self.stage_map[op]

    def resolve(self, t: Tensor) -> Tensor:
        """The tensor that currently holds the values of ``t`` (after cache_write/cache_read)."""
        while t in self.tensor_map:
            t = self.tensor_map[t]
        return t

    def _inputs(self, st: Stage) -> list[Stage]:
        out = []
        for t in st.op.input_tensors():
            r = self.resolve(t)
            if r.op in self.stage_map:
                out.append(self.stage_map[r.op])
        return out

    def _reads(self, consumer: Stage, producer: Stage) -> bool:
        """Does ``consumer`` read ``producer``, directly or through inlined stages?"""
        todo = list(self._inputs(consumer))
        seen: set[Stage] = set()
        while todo:
            st = todo.pop()
            if st is producer:
                return True
            if st in seen:
                continue
            seen.add(st)
            if st.attach_type == "inline":
                todo.extend(self._inputs(st))
        return False

    def _feeds(self, producer: Stage, consumer: Stage) -> bool:
        """Does ``consumer`` read ``producer`` through a chain of other stages?"""
        todo = [consumer]
        seen: set[Stage] = set()
        while todo:
            st = todo.pop()
            if st in seen:
                continue
            seen.add(st)
            for p in self._inputs(st):
                if p is producer:
                    return True
                todo.append(p)
        return False

    # ------------------------------------------------------------------ rfactor
    def rfactor(self, tensor: Tensor, axis: IterVar, factor_axis: int = 0) -> Tensor:
        """Factor the reduction of ``tensor`` over ``axis`` (a reduce axis, or the inner or outer part
        of its split) into a new stage whose data-parallel axes include ``axis`` (at position
        ``factor_axis``); ``tensor`` then reduces that stage over the factored axis. Returns the new
        stage's tensor (TVM's ``s.rfactor``)."""
        st = self[tensor]
        st._compute("rfactor")
        op = st.op
        assert isinstance(op, ComputeOp)
        body = op.body
        if not isinstance(body, Reduce):
            raise st._err("rfactor: it is not a reduction")
        st._leaf(axis, "rfactor")
        if axis.iter_type != "reduce":
            raise st._err(f"rfactor: axis {axis.name!r} is not a reduction axis")
        if st.iter_var_attrs or st.tensorize_intrin or any(
            rel.parent.iter_type != "reduce" if isinstance(rel, Split) else True for rel in st.relations
        ):
            raise st._err("rfactor: call it before the stage's other loops are scheduled (only splits of the "
                          "reduction axis may come first)")
        if not 0 <= factor_axis <= len(op.axis):
            raise st._err(f"rfactor: factor_axis {factor_axis} is out of range 0..{len(op.axis)}")
        root: IterVar = axis
        split: Split | None = None
        for rel in st.relations:
            if isinstance(rel, Split) and axis in (rel.outer, rel.inner):
                root, split = rel.parent, rel
        if root not in op.reduce_axis or (split is not None and len(
                [r for r in st.relations if isinstance(r, Split) and r.parent is root]) != 1):
            raise st._err(f"rfactor: axis {axis.name!r} must be a reduction axis of {op.name!r} or a part of "
                          "one split of one")
        from ..tir.passes.simplify import simplify_expr

        ext = root.dom.extent
        keep = [iv for iv in op.reduce_axis if iv is not root]
        if split is None:
            f_ext, r_ext = ext, None
        else:
            amount = split.factor if split.factor is not None else split.nparts
            other = simplify_expr((ext + amount - 1) // amount)
            inner_ext, outer_ext = (amount, other) if split.factor is not None else (other, amount)
            f_ext, r_ext = (inner_ext, outer_ext) if axis is split.inner else (outer_ext, inner_ext)
        fvar = IterVar(Range(convert(0), f_ext), Var(f"{axis.name}.v", "int32"))
        new_axis = [IterVar(Range(iv.dom.min, iv.dom.extent), Var(iv.var.name, iv.var.dtype)) for iv in op.axis]
        sub: dict[Var, Expr] = {iv.var: n.var for iv, n in zip(op.axis, new_axis, strict=True)}
        new_keep = [IterVar(Range(iv.dom.min, iv.dom.extent), Var(iv.var.name, iv.var.dtype), "reduce")
                    for iv in keep]
        sub.update({iv.var: n.var for iv, n in zip(keep, new_keep, strict=True)})
        cond = body.condition
        if r_ext is None:
            sub[root.var] = root.dom.min + fvar.var
            rvars = new_keep
        else:
            rvar = IterVar(Range(convert(0), r_ext), Var(f"{root.name}.r", "int32"), "reduce")
            outer, inner = (rvar.var, fvar.var) if axis is split.inner else (fvar.var, rvar.var)  # type: ignore[union-attr]
            step = split.factor if split.factor is not None else simplify_expr((ext + split.nparts - 1)  # type: ignore[union-attr]
                                                                               // split.nparts)  # type: ignore[union-attr]
            value = root.dom.min + outer * step + inner
            sub[root.var] = value
            guard = simplify_expr(value < root.dom.min + ext)
            if not (isinstance(guard, IntImm) and guard.value):
                cond = guard if cond is None else (cond & guard)
            rvars = [rvar] + new_keep
        src = substitute(body.source, sub)
        cond = None if cond is None else substitute(cond, sub)
        all_axis = list(new_axis)
        all_axis.insert(factor_axis, fvar)
        if rvars:
            rf_body: Expr = Reduce(body.combiner, src, rvars, cond, None, src.dtype)
        else:
            rf_body = src if cond is None else Select(cond, src, body.combiner.identity(src.dtype))
        rf_op = ComputeOp(f"{op.name}.rf", all_axis, rf_body, op.tag, op.attrs)
        rf_t = rf_op.output(0)
        # the stage itself now reduces the factored stage over the factored axis
        kv = IterVar(Range(convert(0), f_ext), Var(f"{axis.name}.v", "int32"), "reduce")
        idx: list[Expr] = [iv.var for iv in op.axis]
        idx.insert(factor_axis, kv.var)
        init = body.init
        new_op = ComputeOp(op.name, list(op.axis), Reduce(body.combiner, TensorRead(rf_t, idx, rf_t.dtype), [kv],
                                                            None, init, body.dtype), op.tag, op.attrs)
        self.tensor_map[op.output(0)] = new_op.output(0)
        st.op = new_op
        st.relations = []
        st._reset_axes()
        self.stage_map[new_op] = st
        rst = Stage(rf_op, self)
        self.stage_map[rf_op] = rst
        self.stages.insert(self.stages.index(st), rst)
        return rf_t

    # ------------------------------------------------------------------ caches
    def cache_write(self, tensor: Tensor, scope: str) -> Tensor:
        """Compute ``tensor`` into a new cache stage (in ``scope``); the original stage copies it out."""
        st = self[tensor]
        st._compute("cache_write")
        if st.relations or st.iter_var_attrs or st.leaf_iter_vars != st.all_iter_vars:
            raise st._err("cache_write must be called before the stage's loops are scheduled")
        op = st.op
        assert isinstance(op, ComputeOp)
        new_axis = [IterVar(Range(iv.dom.min, iv.dom.extent), Var(iv.var.name + ".c", iv.var.dtype)) for iv in op.axis]
        body = substitute(op.body, {iv.var: niv.var for iv, niv in zip(op.axis, new_axis, strict=True)})
        if isinstance(op.body, Reduce) and not isinstance(body, Reduce):  # pragma: no cover
            raise st._err("cache_write: internal error rebuilding the reduction")
        cache_op = ComputeOp(f"{op.name}.{scope}", new_axis, body, op.tag, op.attrs)
        cache_t = cache_op.output(0)
        copy_op = ComputeOp(
            op.name, list(op.axis), TensorRead(cache_t, [iv.var for iv in op.axis], cache_t.dtype), op.tag
        )
        self.tensor_map[op.output(0)] = copy_op.output(0)
        st.op = copy_op
        st._reset_axes()
        self.stage_map[copy_op] = st
        cst = Stage(cache_op, self)
        cst.scope = scope
        cst.scope_given = True
        self.stage_map[cache_op] = cst
        self.stages.insert(self.stages.index(st), cst)
        return cache_t

    def cache_read(self, tensor: Tensor, scope: str, readers: Any) -> Tensor:
        """Copy ``tensor`` into a new stage (in ``scope``) read by ``readers`` instead of the original."""
        src = self.resolve(tensor)
        if src.op not in self.stage_map:
            raise ScheduleError(f"cache_read: {tensor.name!r} is not part of this schedule")
        if not isinstance(readers, list | tuple):
            readers = [readers]
        reader_stages = [r if isinstance(r, Stage) else self[r] for r in readers]
        shape = src.shape
        axis = [IterVar(Range(convert(0), s), Var(f"ax{k}", "int32")) for k, s in enumerate(shape)]
        copy = ComputeOp(f"{src.name}.{scope}", axis, TensorRead(src, [iv.var for iv in axis], src.dtype))
        ct = copy.output(0)
        for rs in reader_stages:
            rs._compute("cache_read reader")
            old = rs.op
            assert isinstance(old, ComputeOp)
            if not any(isinstance(n, TensorRead) and self.resolve(n.tensor) is src for n in walk(old.body)):
                raise rs._err(f"cache_read: it does not read {tensor.name!r}")

            def swap(n: Any, _src: Tensor = src) -> Any:
                if isinstance(n, TensorRead) and self.resolve(n.tensor) is _src:
                    return TensorRead(ct, n.indices, n.dtype)
                return None

            new_body = post_order_map(old.body, swap)
            new_op = ComputeOp(old.name, list(old.axis), new_body, old.tag, old.attrs)
            new_op.reduce_axis = list(old.reduce_axis)
            self.tensor_map[old.output(0)] = new_op.output(0)
            rs.op = new_op
            self.stage_map[new_op] = rs
        cst = Stage(copy, self)
        cst.scope = scope
        cst.scope_given = True
        self.stage_map[copy] = cst
        first = min(self.stages.index(rs) for rs in reader_stages)
        self.stages.insert(first, cst)
        return ct


def create_schedule(ops: Operation | Tensor | list[Any]) -> Schedule:
    """A default schedule (every stage at root, loops in declaration order) for the outputs."""
    if not isinstance(ops, list | tuple):
        ops = [ops]
    out = []
    for o in ops:
        op = o.op if isinstance(o, Tensor) else o
        if not isinstance(op, Operation):
            raise ScheduleError(f"create_schedule: expected operations (tensor.op), got {o!r}")
        if isinstance(op, PlaceholderOp):
            raise ScheduleError(f"create_schedule: {op.name!r} is a placeholder, not a computation")
        out.append(op)
    return Schedule(out)
