"""Schedule → loop IR: inlining, bound inference per stage, and loop-nest generation.

The result still addresses tensors by multi-dimensional indices (``ProducerStore`` /
``TensorRead`` inside ``ProducerRealize`` scopes); :mod:`passes.flatten` turns them into
flat buffers.  Non-divisible splits and over-approximated regions are protected by
guards (``if`` statements) placed just inside the innermost loop they depend on.
A scan becomes its init nests followed by a serial time loop holding its body stages
(state placeholders read the scan's output); a tensorized axis is replaced by the
intrinsic's IR (:mod:`vdla.compiler.schedule.tensorize`). A reduction whose reduce loop is
bound to ``threadIdx`` is a cross-thread reduction (a ``thread_allreduce`` region the GPU
back end completes, :meth:`_Lowering.cross_thread_nest`); a stage computed inside thread
loops without a scope of its own is ``local`` or ``shared`` as in TVM (:meth:`_Lowering.scope`).
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any

from ..te.operation import ComputeOp, ExternOp, IterVar, PlaceholderOp, ScanOp, Tensor
from ..tir.nodes import (
    AttrStmt,
    BinOp,
    Expr,
    For,
    IfThenElse,
    IntImm,
    LetStmt,
    ProducerRealize,
    ProducerStore,
    Reduce,
    Stmt,
    TensorRead,
    Var,
    make_const,
    seq,
)
from ..tir.passes.double_buffer import DOUBLE_BUFFER_SCOPE
from ..tir.passes.simplify import simplify_expr
from ..tir.visitor import post_order_map, substitute, walk
from .bound import region_of
from .primitives import Fuse, Schedule, ScheduleError, Split, Stage
from .tensorize import tensorize_loops

_KIND = {"vectorize": "vectorized", "unroll": "unrolled", "parallel": "parallel", "bind": "thread_binding"}
#: the AttrStmt key around a cross-thread reduction (see :meth:`_Lowering.cross_thread_nest`)
THREAD_ALLREDUCE = "thread_allreduce"


@dataclass(eq=False)
class CrossThreadReduce:
    """What a GPU back end needs to combine a reduction's per-thread partial values: the
    reducer, the thread axes reduced over, and the buffer (after flattening, the one the
    first statement of the marked body stores to) holding each thread's partial value."""

    stage: str
    combiner: Any
    tags: tuple[str, ...]
    n_values: int = 1  # a tuple reducer (argmax) combines several: the body starts with one init each

    def __str__(self) -> str:
        return f"{self.combiner.name} of {self.stage} over {', '.join(self.tags)}"


@dataclass(eq=False)
class StageInfo:
    stage: Stage
    tensor: Tensor
    body: Expr
    root: dict[IterVar, tuple[Expr, Expr]] = field(default_factory=dict)  # (min, extent)
    ext: dict[IterVar, Expr] = field(default_factory=dict)
    val: dict[IterVar, Expr] = field(default_factory=dict)  # relative value in leaf vars
    guards: list[Expr] = field(default_factory=list)
    domain_guards: list[tuple[IterVar, tuple[Expr, Expr]]] = field(default_factory=list)
    external: bool = False
    #: every output (te.compute returning several values) and its body; tensor/body are the first
    tensors: list[Tensor] = field(default_factory=list)
    bodies: list[Expr] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.tensors:
            self.tensors = [self.tensor]
            self.bodies = [self.body]

    def stored(self, args: set[Tensor]) -> list[Tensor]:
        """The outputs this stage must allocate (those not passed as arguments)."""
        return [] if self.external and len(self.tensors) == 1 else [t for t in self.tensors if t not in args]


def _user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning raised by the caller point at the first frame outside vdla."""
    pkg = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    level, frame = 1, sys._getframe(1)  # level 1: the caller of warnings.warn
    while frame is not None and frame.f_code.co_filename.startswith(pkg):
        frame, level = frame.f_back, level + 1
    return level


def _ceildiv(a: Expr, b: Expr) -> Expr:
    dt = a.dtype
    return simplify_expr(BinOp("floordiv", BinOp("sub", BinOp("add", a, b, dt), make_const(1, dt), dt), b, dt))


def _leaf_structure(info: StageInfo) -> None:
    """Extents of every iter var and the value of every root var in terms of leaf loop vars."""
    st = info.stage
    ext = {iv: simplify_expr(e) for iv, (_, e) in info.root.items()}
    inner_ext: dict[Split, Expr] = {}
    for rel in st.relations:
        if isinstance(rel, Split):
            p = ext[rel.parent]
            if rel.factor is not None:
                ext[rel.inner] = rel.factor.astype(p.dtype)
                ext[rel.outer] = _ceildiv(p, ext[rel.inner])
            else:
                ext[rel.outer] = rel.nparts.astype(p.dtype)  # type: ignore[union-attr]
                ext[rel.inner] = _ceildiv(p, ext[rel.outer])
            inner_ext[rel] = ext[rel.inner]
        else:
            ext[rel.fused] = simplify_expr(BinOp("mul", ext[rel.outer], ext[rel.inner], ext[rel.outer].dtype))
    val: dict[IterVar, Expr] = {iv: iv.var for iv in st.leaf_iter_vars}
    guards: list[Expr] = []
    for rel in reversed(st.relations):
        if isinstance(rel, Split):
            ie = inner_ext[rel]
            v = simplify_expr(BinOp("add", BinOp("mul", val[rel.outer], ie, ie.dtype), val[rel.inner], ie.dtype))
            val[rel.parent] = v
            exact = simplify_expr(BinOp("floormod", ext[rel.parent], ie, ie.dtype)) if rel.factor is not None else None
            if rel.nparts is not None:
                exact = simplify_expr(
                    BinOp("sub", BinOp("mul", ext[rel.outer], ie, ie.dtype), ext[rel.parent], ie.dtype)
                )
            if not (isinstance(exact, IntImm) and exact.value == 0):
                guards.append(v < ext[rel.parent])
        elif isinstance(rel, Fuse):
            ie = ext[rel.inner]
            val[rel.outer] = BinOp("floordiv", val[rel.fused], ie, ie.dtype)
            val[rel.inner] = BinOp("floormod", val[rel.fused], ie, ie.dtype)
    info.ext = ext
    info.val = val
    info.guards = guards


def _abs_values(info: StageInfo) -> dict[Var, Expr]:
    """root var -> absolute value (min + relative value); identity entries are omitted."""
    out = {}
    for iv, (mn, _) in info.root.items():
        v = simplify_expr(BinOp("add", mn, info.val[iv], mn.dtype))
        if v is not iv.var:
            out[iv.var] = v
    return out


class _Lowering:
    def __init__(self, sch: Schedule, args: list[Any]) -> None:
        self.sch = sch
        self.args = args
        self.infos: dict[Stage, StageInfo] = {}
        self.arg_tensors: set[Tensor] = set()
        for a in args:
            if isinstance(a, Tensor):
                self.arg_tensors.add(sch.resolve(a))
        # scans: state placeholder -> scan output; init/update tensor -> scan output (storage)
        self.state_out: dict[Tensor, Tensor] = {}
        self.store_as: dict[Tensor, Tensor] = {}
        for st in sch.stages:
            if isinstance(st.op, ScanOp):
                for k, out in enumerate(st.op.outputs):
                    self.state_out[st.op.state_placeholder[k]] = out
                    self.store_as[st.op.init[k]] = out
                    self.store_as[st.op.update[k]] = out

    def err(self, st: Stage, msg: str) -> ScheduleError:
        return ScheduleError(f"stage {st.name!r}: {msg}")

    # ------------------------------------------------------------------ preparation
    def prepare(self) -> None:
        sch = self.sch
        bodies: dict[Tensor, tuple[ComputeOp, Expr]] = {}
        for st in sch.stages:
            op = st.op
            if isinstance(op, PlaceholderOp):
                if st.is_output:
                    raise self.err(st, "a placeholder cannot be an output")
                continue
            if isinstance(op, ScanOp):
                for t in op.outputs:
                    if st.is_output and t not in self.arg_tensors:
                        raise self.err(st, f"output {t.name!r} of the scan is not in the argument list")
                continue
            if isinstance(op, ExternOp):
                self._check_extern(st)
                continue
            assert isinstance(op, ComputeOp)
            t = op.output(0)
            outs = list(op.outputs)

            def fix(n: Any) -> Any:
                if isinstance(n, TensorRead) and n.tensor in self.state_out:
                    return TensorRead(self.state_out[n.tensor], n.indices, n.dtype)
                if isinstance(n, TensorRead):
                    rt = sch.resolve(n.tensor)
                    ist = sch.stage_map.get(rt.op)
                    if ist is not None and ist.attach_type == "inline" and rt in bodies:
                        iop, ibody = bodies[rt]
                        return substitute(ibody, {iv.var: ix for iv, ix in zip(iop.axis, n.indices, strict=True)})
                    if rt is not n.tensor:
                        return TensorRead(rt, n.indices, n.dtype)
                return None

            fixed = [post_order_map(b, fix) for b in op.bodies]
            body = fixed[0]
            for ot, ob in zip(outs, fixed, strict=True):
                bodies[ot] = (op, ob)
            if st.attach_type == "inline":
                if isinstance(body, Reduce):
                    raise self.err(st, "it is a reduction and cannot be inlined")
                if any(ot in self.arg_tensors for ot in outs):
                    # TVM lowers this too: the argument is never written, which is worth a word
                    warnings.warn(f"stage {st.name!r} is inlined (compute_inline) and also passed as an argument; "
                                  "its argument array is not written", stacklevel=_user_stacklevel())
                if t in self.store_as:
                    raise self.err(st, "it is the init or update of a scan and cannot be inlined")
                continue
            if st.scan_group is not None and st.attach_type not in ("scan", "scope"):
                raise self.err(
                    st, f"it belongs to scan {st.scan_group.name!r}; it cannot be computed at {st.attach_type}"
                )
            if t in self.store_as:
                if st.attach_type != "scan":
                    raise self.err(st, "the init and update stages of a scan cannot be computed at another stage")
                out = self.store_as[t]
                self.infos[st] = StageInfo(st, out, body, external=True)
                continue
            if len(outs) > 1 and t in self.store_as:  # pragma: no cover - scans take single-output stages
                raise self.err(st, "a stage with several outputs cannot be a scan's init or update")
            self.infos[st] = StageInfo(st, t, body, external=t in self.arg_tensors, tensors=outs, bodies=fixed)
        # every placeholder read must be an argument; every output must be an argument
        for info in self.infos.values():
            for n in (x for b in info.bodies for x in walk(b)):
                if isinstance(n, TensorRead) and isinstance(n.tensor.op, PlaceholderOp):
                    if n.tensor not in self.arg_tensors:
                        raise ScheduleError(
                            f"placeholder {n.tensor.name!r} is read by stage {info.stage.name!r} but is not in the "
                            "argument list"
                        )
            if info.stage.is_output and not any(t in self.arg_tensors for t in info.tensors):
                raise self.err(info.stage, "it is an output of the schedule but is not in the argument list")
        # readers
        self.readers: dict[Tensor, list[StageInfo]] = {}
        for info in self.infos.values():
            for n in (x for b in info.bodies for x in walk(b)):
                if isinstance(n, TensorRead):
                    lst = self.readers.setdefault(n.tensor, [])
                    if info not in lst:
                        lst.append(info)
        for info in self.infos.values():
            st = info.stage
            if st.attach_type == "scope":
                parent = st.attach_stage
                assert parent is not None
                if parent.attach_type == "inline":
                    raise self.err(st, f"it is computed at stage {parent.name!r}, which is inlined")
                rd = self._readers_of(info)
                # a reader attached at the same loop (computed before the parent's body) may stand
                # in for the parent: bounds then follow that reader's region (TVM's InferBound)
                # ... and so may one computed deeper in the parent (a local copy of a shared tile)
                at = parent.leaf_iter_vars.index(st.attach_ivar) if st.attach_ivar in parent.leaf_iter_vars else -1
                same_point = [
                    r for r in rd
                    if r.stage is not parent and r.stage.attach_type == "scope"
                    and r.stage.attach_stage is parent and r.stage.attach_ivar in parent.leaf_iter_vars
                    and parent.leaf_iter_vars.index(r.stage.attach_ivar) >= at >= 0
                ]
                if parent not in [r.stage for r in rd] and not same_point:
                    raise self.err(
                        st,
                        f"compute_at: stage {parent.name!r} does not read it (after inlining); attach it to a consumer",
                    )
                others = [r.stage.name for r in rd if r.stage is not parent and r not in same_point]
                if others:
                    raise self.err(
                        st,
                        f"it is computed at {parent.name!r} (axis {st.attach_ivar.name!r}) but is also read by "
                        f"{', '.join(repr(o) for o in others)}; compute it at root instead",
                    )

    def _readers_of(self, info: StageInfo) -> list[StageInfo]:
        out: list[StageInfo] = []
        for t in info.tensors:
            out += [r for r in self.readers.get(t, []) if r not in out]
        return out

    def _check_extern(self, st: Stage) -> None:
        """An extern op reads whole stored inputs and writes whole outputs, at the top level."""
        op = st.op
        assert isinstance(op, ExternOp)
        for t in op.inputs:
            r = self.sch.resolve(t)
            ist = self.sch.stage_map.get(r.op)
            if isinstance(r.op, PlaceholderOp) and r not in self.arg_tensors:
                raise self.err(st, f"it reads placeholder {r.name!r}, which is not in the argument list")
            if ist is not None and ist.attach_type in ("inline", "scope"):
                how = "inlined" if ist.attach_type == "inline" else "computed at another stage"
                raise self.err(st, f"it is an extern op and reads {r.name!r} whole, but {r.name!r} is {how}; "
                                   "compute it at root")
        for t in op.outputs:
            if st.is_output and t not in self.arg_tensors:
                raise self.err(st, f"output {t.name!r} of the extern op is not in the argument list")

    def extern_nest(self, st: Stage) -> Stmt:
        """The extern op's body, its buffers bound to the tensors they stand for (storage_flatten binds them)."""
        op = st.op
        assert isinstance(op, ExternOp)
        body = op.body
        pairs = [(b, self.sch.resolve(t)) for b, t in zip(op.input_placeholders, op.inputs, strict=True)]
        pairs += list(zip(op.output_placeholders, op.outputs, strict=True))
        for b, t in reversed(pairs):
            body = AttrStmt("extern_buffer_bind", (b, t), body)
        return body

    # ------------------------------------------------------------------ bounds
    def infer_bounds(self) -> None:
        order = [self.infos[st] for st in self.sch.stages if st in self.infos]
        for info in reversed(order):
            st = info.stage
            op = st.op
            assert isinstance(op, ComputeOp)
            for iv in op.reduce_axis:
                info.root[iv] = (iv.dom.min, iv.dom.extent)
            if st.attach_type == "scan":
                scan_op = st.attach_stage.op  # type: ignore[union-attr]
                is_init = any(op is t.op for t in scan_op.init)
                for d, iv in enumerate(op.axis):
                    if d == 0 and not is_init:
                        info.root[iv] = (scan_op.scan_axis.var, make_const(1, iv.var.dtype))
                    else:
                        info.root[iv] = (iv.dom.min, iv.dom.extent)
            elif st.attach_type != "scope":
                for iv in op.axis:
                    info.root[iv] = (iv.dom.min, iv.dom.extent)
            else:
                self._attached_bounds(info)
            _leaf_structure(info)
            # reorder root so that axis come first, as declared
            for iv in list(op.axis) + list(op.reduce_axis):
                info.root[iv] = info.root.pop(iv)

    def _attached_bounds(self, info: StageInfo) -> None:
        st = info.stage
        op = st.op
        parent = self.infos[st.attach_stage]  # type: ignore[index]
        pst = parent.stage
        pos = pst.leaf_iter_vars.index(st.attach_ivar)
        relax = {}
        for iv in pst.leaf_iter_vars[pos + 1 :]:
            e = parent.ext[iv]
            relax[iv.var] = (make_const(0, e.dtype), simplify_expr(BinOp("sub", e, make_const(1, e.dtype), e.dtype)))
        root_relax = {}
        from .bound import sym_interval

        # loops bound to threads that share this stage's memory (GPU "shared": all threadIdx of a
        # block) compute it together, so its region covers all their values (TVM's NeedRelax)
        shared = self._thread_relax(st, pos)
        relax.update(shared)
        for riv, (mn, _) in parent.root.items():
            r = sym_interval(parent.val[riv], relax)
            m = sym_interval(mn, shared) if shared else (mn, mn)
            if r is None or m is None:
                r = (make_const(0, mn.dtype), BinOp("sub", parent.ext[riv], make_const(1, mn.dtype), mn.dtype))
                m = (mn, mn)
            root_relax[riv.var] = (simplify_expr(m[0] + r[0]), simplify_expr(m[1] + r[1]))
        mine = set(info.tensors)
        reads = [n.indices for b in parent.bodies for n in walk(b) if isinstance(n, TensorRead) and n.tensor in mine]
        region = region_of(reads, root_relax, len(op.axis)) if reads else [None] * len(op.axis)
        # readers computed at the same loop: their (already inferred) regions bound what they read
        for r in self._readers_of(info):
            rst = r.stage
            if rst is pst or not (rst.attach_type == "scope" and rst.attach_stage is pst):
                continue
            rpos = pst.leaf_iter_vars.index(rst.attach_ivar)  # type: ignore[arg-type]
            if rpos < pos:
                continue
            if rpos == pos:
                r_relax = {
                    riv.var: (mn, simplify_expr(BinOp("sub", BinOp("add", mn, e, mn.dtype), make_const(1, mn.dtype),
                                                      mn.dtype)))
                    for riv, (mn, e) in r.root.items()
                }
            else:
                # a reader computed deeper in the same consumer (a local copy of this shared tile,
                # refilled in an inner loop): its region over every iteration of the loops between
                r_relax = {}
                for riv, (mn, e) in r.root.items():
                    one = make_const(1, mn.dtype)
                    lo_hi = sym_interval(mn, relax)
                    if lo_hi is None:
                        lo_hi = (riv.dom.min, simplify_expr(BinOp("sub", riv.dom.extent, one, mn.dtype)))
                        e = one
                    r_relax[riv.var] = (simplify_expr(lo_hi[0]),
                                        simplify_expr(BinOp("sub", BinOp("add", lo_hi[1], e, mn.dtype), one, mn.dtype)))
            r_reads = [n.indices for b in r.bodies for n in walk(b) if isinstance(n, TensorRead) and n.tensor in mine]
            rr = region_of(r_reads, r_relax, len(op.axis))
            if not reads:
                region, reads = rr, r_reads
            else:
                from .bound import union

                region = [None if a is None or b is None else union(a, b) for a, b in zip(region, rr, strict=True)]
        allowed = self._shape_vars()
        for d, iv in enumerate(op.axis):
            r = region[d]
            full = (iv.dom.min, iv.dom.extent)
            if r is None:
                info.root[iv] = full
                continue
            ext = simplify_expr(
                BinOp("add", BinOp("sub", r[1], r[0], r[0].dtype), make_const(1, r[0].dtype), r[0].dtype)
            )
            free = {n for n in walk(ext) if isinstance(n, Var)}
            if not free <= allowed:
                info.root[iv] = full
                continue
            info.root[iv] = (r[0], ext)
            # guard against computing outside the tensor's domain
            info.domain_guards.append((iv, full))

    def scope(self, st: Stage) -> str:
        """Where ``st``'s values live. A scope the schedule chose stands; otherwise, as in TVM's
        storage flattening, a stage computed inside loops bound to ``threadIdx`` is ``local``
        (one copy per thread) and one inside ``blockIdx`` loops only is ``shared``; else ``global``."""
        if st.scope_given or st.scope != "global" or st.attach_type != "scope":
            return st.scope
        tags: list[str] = []
        cur: Stage | None = st
        while cur is not None and cur.attach_type == "scope":
            parent = cur.attach_stage
            assert parent is not None
            upto = parent.leaf_iter_vars.index(cur.attach_ivar) if cur.attach_ivar in parent.leaf_iter_vars else -1
            tags += [self._thread_tag(parent, iv) for iv in parent.leaf_iter_vars[: upto + 1]]
            cur = parent
        if any(t.startswith("threadIdx") for t in tags):
            return "local"
        if any(t.startswith("blockIdx") for t in tags):
            return "shared"
        return "global"

    def _thread_relax(self, st: Stage, pos: int) -> dict[Var, tuple[Expr, Expr]]:
        """Thread-bound loops at and above ``st``'s attach point over which ``st`` is shared.

        A scope is shared by the threads of lower rank (TVM's storage/thread ranks):
        ``global`` by blockIdx and threadIdx, ``shared`` by threadIdx (and vthread); ``local``
        and the accelerator's scopes by none, so CPU and VDLA schedules are unaffected."""
        scope_rank = {"global": 0, "shared": 1}.get(self.scope(st))
        out: dict[Var, tuple[Expr, Expr]] = {}
        if scope_rank is None:
            return out
        cur, upto = st.attach_stage, pos
        while cur is not None and cur in self.infos:
            info = self.infos[cur]
            for iv in cur.leaf_iter_vars[: upto + 1]:
                attrs = cur.iter_var_attrs.get(iv, {})
                if attrs.get("kind") != "bind":
                    continue
                tag = attrs["thread"].thread_tag
                rank = 0 if tag.startswith("blockIdx") else 1 if tag.startswith("threadIdx") else None
                if tag.startswith("vthread") and self.scope(st) == "shared":
                    rank = 1
                if rank is not None and scope_rank <= rank:
                    e = info.ext[iv]
                    out[iv.var] = (make_const(0, e.dtype), simplify_expr(BinOp("sub", e, make_const(1, e.dtype), e.dtype)))
            if cur.attach_type != "scope":
                break
            upto = cur.attach_stage.leaf_iter_vars.index(cur.attach_ivar)  # type: ignore[union-attr]
            cur = cur.attach_stage
        return out

    def _shape_vars(self) -> set[Var]:
        out: set[Var] = set()
        for st in self.sch.stages:
            for t in st.op.outputs:
                for s in t.shape:
                    out |= {n for n in walk(s) if isinstance(n, Var)}
        for a in self.args:
            if isinstance(a, Var):
                out.add(a)
        return out

    # ------------------------------------------------------------------ loops
    def build(self) -> Stmt:
        for st in self.sch.stages:
            if st.double_buffered:
                if st not in self.infos:
                    raise self.err(st, "double_buffer: it is inlined (compute_inline) and has no buffer")
                self._check_double_buffer(st)
        root_stmts: list[Stmt] = []
        realize: list[StageInfo] = []
        realize_scans: list[Stage] = []
        for st in self.sch.stages:
            if isinstance(st.op, ScanOp):
                root_stmts.append(self.scan_nest(st))
                realize_scans.append(st)
                continue
            if isinstance(st.op, ExternOp):
                root_stmts.append(self.extern_nest(st))
                realize_scans.append(st)  # its outputs are realized whole, as a scan's
                continue
            info = self.infos.get(st)
            if info is None or st.attach_type in ("scope", "scan"):
                continue
            root_stmts.append(self.stage_nest(info))
            if info.stored(self.arg_tensors):
                realize.append(info)
        body = seq(*root_stmts)
        for info in reversed(realize):
            op = info.stage.op
            for t in reversed(info.stored(self.arg_tensors)):
                body = ProducerRealize(t, [(iv.dom.min, iv.dom.extent) for iv in op.axis], body, info.stage.scope)
        for st in realize_scans:
            for t in st.op.outputs:
                if t not in self.arg_tensors:
                    body = ProducerRealize(t, [(make_const(0, x.dtype), x) for x in t.shape], body, st.scope)
        return body

    def scan_nest(self, st: Stage) -> Stmt:
        """Inits, then ``for t in [k, T)``: every body stage (intermediates realized per step)."""
        op = st.op
        assert isinstance(op, ScanOp)
        init_ops = {t.op for t in op.init}
        members = [
            self.infos[m]
            for m in self.sch.stages
            if m in self.infos and m.attach_type == "scan" and m.attach_stage is st
        ]
        inits = [self.stage_nest(i) for i in members if i.stage.op in init_ops]
        steps = [i for i in members if i.stage.op not in init_ops]
        body = seq(*[self.stage_nest(i) for i in steps])
        for i in reversed(steps):
            for t in reversed(i.stored(self.arg_tensors)):
                body = ProducerRealize(t, [i.root[iv] for iv in i.stage.op.axis], body, self.scope(i.stage))
        ax = op.scan_axis
        loop = For(ax.var, ax.dom.min, ax.dom.extent, "serial", body)
        return seq(*inits, loop)

    def attachments(self, info: StageInfo, iv: IterVar) -> list[StageInfo]:
        return [
            self.infos[s]
            for s in self.sch.stages
            if s in self.infos and s.attach_type == "scope" and s.attach_stage is info.stage and s.attach_ivar is iv
        ]

    def _guards(self, info: StageInfo) -> list[Expr]:
        g = list(info.guards)
        absv = None
        for iv, (dmin, dext) in info.domain_guards:
            if absv is None:
                absv = {
                    riv: simplify_expr(BinOp("add", info.root[riv][0], info.val[riv], info.root[riv][0].dtype))
                    for riv in info.root
                }
            v = absv[iv]
            g.append(v >= dmin)
            g.append(v < simplify_expr(dmin + dext))
        # loops of constant extent (this stage's and those it is computed inside) bound the
        # guard's variables: a guard they prove true (a tile that fits) is dropped
        ranges: dict[Var, tuple[int | None, int | None]] = {}
        cur: Stage | None = info.stage
        while cur is not None and cur in self.infos:
            for leaf in cur.leaf_iter_vars:
                e = self.infos[cur].ext.get(leaf)
                e = simplify_expr(e) if e is not None else None
                if isinstance(e, IntImm):
                    ranges[leaf.var] = (0, e.value - 1)
            cur = cur.attach_stage if cur.attach_type == "scope" else None
        out = []
        for c in g:
            c2 = simplify_expr(c, ranges)
            if isinstance(c2, IntImm) and c2.value:
                continue
            out.append(c2)
        return out

    def stage_nest(self, info: StageInfo) -> Stmt:
        st = info.stage
        op = st.op
        assert isinstance(op, ComputeOp)
        leaves = list(st.leaf_iter_vars)
        sub = _abs_values(info)
        idx = [sub.get(iv.var, iv.var) for iv in op.axis]
        t = info.tensor
        body = info.body
        reduce_ivs = set(op.reduce_axis)
        derived_reduce = self._reduce_derived(st, reduce_ivs)
        init: Stmt | None = None
        r0 = len(leaves)
        across_blocks = [iv for iv in leaves if iv in derived_reduce and self._thread_tag(st, iv).startswith("blockIdx")]
        if across_blocks:  # each block would add into the same output at once
            iv = across_blocks[0]
            raise self.err(st, f"reduce axis {iv.name!r} is bound to {self._thread_tag(st, iv)}: a reduction across "
                               "blocks is not supported; bind it to threadIdx (a cross-thread reduction), or rfactor "
                               "it into a stage of its own and bind that stage's axis")  # fmt: skip
        cross = [iv for iv in leaves if iv in derived_reduce and self._thread_tag(st, iv).startswith("threadIdx")]
        if cross:
            return self.cross_thread_nest(info, sub, idx, leaves, derived_reduce, cross)
        if len(info.tensors) > 1:
            innermost, init, init_leaves, r0 = self._multi_nest(info, sub, idx, leaves, derived_reduce)
        elif isinstance(body, Reduce):
            src = substitute(body.source, sub)
            cur = TensorRead(t, idx, t.dtype)
            upd: Stmt = ProducerStore(t, idx, body.combiner.combine(cur, src))
            if body.condition is not None:
                upd = IfThenElse(substitute(body.condition, sub), upd)
            init_val = body.init if body.init is not None else body.combiner.identity(t.dtype)
            init_val = substitute(init_val, sub)
            innermost = upd
            r0 = next((k for k, iv in enumerate(leaves) if iv in derived_reduce), len(leaves))
            init_leaves = [iv for iv in leaves[r0:] if iv not in derived_reduce]
            init = ProducerStore(t, idx, init_val)
        else:
            innermost = ProducerStore(t, idx, substitute(body, sub))
            init_leaves = []
        if st.store_predicate is not None:  # set_store_predicate: only these stores happen
            pred = substitute(substitute(st.store_predicate, self._thread_vars(st)), sub)
            innermost = IfThenElse(pred, innermost)
            if init is not None:
                init = IfThenElse(pred, init)
        guards = self._guards(info)
        leaf_vars = {iv.var: k for k, iv in enumerate(leaves)}

        def depth(c: Expr) -> int:
            ds = [leaf_vars[n] for n in walk(c) if isinstance(n, Var) and n in leaf_vars]
            return max(ds) if ds else -1

        gdepth = [(depth(c), c) for c in guards]
        tz = next((k for k, iv in enumerate(leaves) if iv in st.tensorize_intrin), None)
        if tz is not None and init is not None and r0 >= tz:
            init = None  # the intrinsic initialises (its body, or reset + update)
        if init is not None:
            stmt: Stmt = init
            init_pos = {iv: k for k, iv in enumerate(leaves)}
            for iv in reversed(init_leaves):
                for d, c in gdepth:
                    if d == init_pos[iv]:
                        stmt = IfThenElse(c, stmt)
                stmt = self._loop(info, iv, stmt)
            init = stmt

        def build(level: int) -> Stmt:
            if tz is not None and level == tz:
                return self._tensorized(info, tz, r0 < tz, gdepth)
            if level == len(leaves):
                return innermost
            iv = leaves[level]
            inner = build(level + 1)
            if init is not None and level + 1 == r0:
                inner = seq(init, inner)
            for d, c in gdepth:
                if d == level:
                    inner = IfThenElse(c, inner)
            for att in reversed(self.attachments(info, iv)):
                inner = self._realize(att, seq(self._produce(att), inner))
            return self._loop(info, iv, inner)

        out = build(0)
        if init is not None and r0 == 0:
            out = seq(init, out)
        top = [c for d, c in gdepth if d < 0]
        for c in top:
            out = IfThenElse(c, out)
        return out

    @staticmethod
    def _thread_tag(st: Stage, iv: IterVar) -> str:
        attrs = st.iter_var_attrs.get(iv, {})
        return attrs["thread"].thread_tag if attrs.get("kind") == "bind" else ""

    def _thread_vars(self, st: Stage) -> dict[Var, Expr]:
        """Thread axis var -> the loop var bound to it, for this stage and those it is computed in
        (a store predicate such as ``tx.var.equal(0)`` names the thread axis, TVM's loop var)."""
        out: dict[Var, Expr] = {}
        cur: Stage | None = st
        while cur is not None:
            for iv, attrs in cur.iter_var_attrs.items():
                if attrs.get("kind") == "bind":
                    out.setdefault(attrs["thread"].var, iv.var)
            cur = cur.attach_stage if cur.attach_type == "scope" else None
        return out

    def cross_thread_nest(self, info: StageInfo, sub: dict[Var, Expr], idx: list[Expr], leaves: list[IterVar],
                          derived_reduce: set[IterVar], cross: list[IterVar]) -> Stmt:
        """A reduction with reduce loops bound to ``threadIdx`` (TVM's cross-thread reduction).

        Each thread accumulates its partial value in a one-element local buffer; the threads'
        partial values are combined; the result is stored (under the stage's store predicate,
        e.g. only by thread 0)::

            for <data-parallel loops>:
              // attr thread_allreduce = sum of B over threadIdx.x
              red[0] = identity                                   (A)
              for <reduce loops, some bound>: red[0] += value     (B)
              for <the bound reduce loops>: if pred: B[i] = red[0]   (C)

        Run serially (threads as loops) this is the reduction itself; a GPU back end inserts
        the exchange of the threads' partial values between (B) and (C), outside any
        condition, so guards of the data-parallel loops move into (B) and (C)."""
        st = info.stage
        op = st.op
        assert isinstance(op, ComputeOp)
        body = info.body
        if not isinstance(body, Reduce):
            raise self.err(st, f"reduce axis {cross[0].name!r} is bound to {self._thread_tag(st, cross[0])}, but "
                               "the stage's outputs are not one reduction")  # fmt: skip
        if st.tensorize_intrin:
            raise self.err(st, "a cross-thread reduction cannot be tensorized")
        r0 = next(k for k, iv in enumerate(leaves) if iv in derived_reduce)
        for iv in leaves[r0:]:
            if iv not in derived_reduce:
                raise self.err(
                    st, f"axis {iv.name!r} is inside reduce axis {leaves[r0].name!r}, and reduce axis "
                        f"{cross[0].name!r} is bound to {self._thread_tag(st, cross[0])} (a cross-thread reduction): "
                        "reorder the data-parallel axes outside the reduction axes"
                )
        from ..te.operation import placeholder

        ts = info.tensors
        reds = [placeholder((1,), t.dtype, name=f"{st.name}.red" if len(ts) == 1 else f"{t.name}.red{k}")
                for k, t in enumerate(ts)]  # fmt: skip
        zero = [make_const(0, "int32")]
        curs: list[Expr] = [TensorRead(r, zero, r.dtype) for r in reds]
        upd: Stmt
        if len(ts) == 1:
            upd = ProducerStore(reds[0], zero, body.combiner.combine(curs[0], substitute(body.source, sub)))
            inits = [substitute(body.init if body.init is not None else body.combiner.identity(ts[0].dtype), sub)]
        else:  # a tuple reducer: every new value from the old ones before any is stored
            assert body.sources is not None
            new = body.combiner.combine_tuple(curs, [substitute(x, sub) for x in body.sources])
            tmps = [Var(f"{r.name}.new", r.dtype) for r in reds]
            upd = seq(*[ProducerStore(r, zero, v) for r, v in zip(reds, tmps, strict=True)])
            for v, e in reversed(list(zip(tmps, new, strict=True))):
                upd = LetStmt(v, e, upd)
            inits = [substitute(v, sub) for v in body.combiner.identity_tuple([t.dtype for t in ts])]
        if body.condition is not None:
            upd = IfThenElse(substitute(body.condition, sub), upd)
        guards = self._guards(info)
        leaf_vars = {iv.var: k for k, iv in enumerate(leaves)}

        def depth(c: Expr) -> int:
            ds = [leaf_vars[n] for n in walk(c) if isinstance(n, Var) and n in leaf_vars]
            return max(ds) if ds else -1

        gdepth = [(depth(c), c) for c in guards]
        outer_guards = [c for d, c in gdepth if d < r0]
        for c in reversed(outer_guards):
            upd = IfThenElse(c, upd)

        def build_reduce(level: int) -> Stmt:
            if level == len(leaves):
                return upd
            iv = leaves[level]
            inner = build_reduce(level + 1)
            for d, c in gdepth:
                if d == level:
                    inner = IfThenElse(c, inner)
            for att in reversed(self.attachments(info, iv)):
                inner = self._realize(att, seq(self._produce(att), inner))
            return self._loop(info, iv, inner)

        # (C): the bound reduce loops again (fresh vars), each thread storing under the predicate
        fresh = {iv.var: Var(iv.var.name, iv.var.dtype) for iv in cross}
        store: Stmt = seq(*[ProducerStore(t, idx, TensorRead(r, zero, t.dtype)) for t, r in zip(ts, reds, strict=True)])
        conds = list(outer_guards)
        if st.store_predicate is not None:
            conds.append(substitute(substitute(st.store_predicate, self._thread_vars(st)), sub))
        for c in reversed(conds):
            store = IfThenElse(substitute(c, fresh), store)
        for iv in reversed(cross):
            ext = info.ext[iv]
            store = For(fresh[iv.var], make_const(0, ext.dtype), ext, "thread_binding", store,
                        self._thread_tag(st, iv))
        marker = CrossThreadReduce(st.name, body.combiner, tuple(self._thread_tag(st, iv) for iv in cross), len(ts))
        init_stores = [ProducerStore(r, zero, v) for r, v in zip(reds, inits, strict=True)]
        inner: Stmt = AttrStmt(THREAD_ALLREDUCE, marker, seq(*init_stores, build_reduce(r0), store))
        for r in reversed(reds):
            inner = ProducerRealize(r, [(make_const(0, "int32"), make_const(1, "int32"))], inner, "local")

        def build(level: int) -> Stmt:
            if level == r0:
                return inner
            iv = leaves[level]
            body_ = build(level + 1)
            for att in reversed(self.attachments(info, iv)):
                body_ = self._realize(att, seq(self._produce(att), body_))
            return self._loop(info, iv, body_)

        return build(0)

    def _multi_nest(self, info: StageInfo, sub: dict[Var, Expr], idx: list[Expr], leaves: list[IterVar],
                    derived_reduce: set[IterVar]) -> tuple[Stmt, Stmt | None, list[IterVar], int]:
        """Stores of a stage with several outputs: one per output, or a tuple reduction whose new
        values are all computed (LetStmt) from the old ones before any is stored."""
        ts, bodies = info.tensors, info.bodies
        first = bodies[0]
        if not isinstance(first, Reduce):
            stores = [ProducerStore(t, idx, substitute(b, sub)) for t, b in zip(ts, bodies, strict=True)]
            return seq(*stores), None, [], len(leaves)
        assert first.sources is not None
        srcs = [substitute(x, sub) for x in first.sources]
        curs: list[Expr] = [TensorRead(t, idx, t.dtype) for t in ts]
        new = first.combiner.combine_tuple(curs, srcs)
        tmps = [Var(f"{t.name}.new", t.dtype) for t in ts]
        upd: Stmt = seq(*[ProducerStore(t, idx, v) for t, v in zip(ts, tmps, strict=True)])
        for v, e in reversed(list(zip(tmps, new, strict=True))):
            upd = LetStmt(v, e, upd)
        if first.condition is not None:
            upd = IfThenElse(substitute(first.condition, sub), upd)
        ident = first.combiner.identity_tuple([t.dtype for t in ts])
        init = seq(*[ProducerStore(t, idx, substitute(v, sub)) for t, v in zip(ts, ident, strict=True)])
        r0 = next((k for k, iv in enumerate(leaves) if iv in derived_reduce), len(leaves))
        init_leaves = [iv for iv in leaves[r0:] if iv not in derived_reduce]
        return upd, init, init_leaves, r0

    def _produce(self, att: StageInfo) -> Stmt:
        """The nest of a stage computed at a loop; a double-buffered one marked for
        :func:`vdla.compiler.tir.passes.inject_double_buffer` (which needs the loop it is in)."""
        nest = self.stage_nest(att)
        if att.stage.double_buffered:
            nest = AttrStmt(DOUBLE_BUFFER_SCOPE, (att.tensor, att.stage.attach_ivar.var), nest)  # type: ignore[union-attr]
        return nest

    def _check_double_buffer(self, st: Stage) -> None:
        """A double-buffered stage is in shared memory and computed inside a serial loop."""
        if st.attach_type != "scope":
            raise self.err(st, "double_buffer: it is not computed inside a loop; compute_at it inside its "
                               "consumer's reduction loop (the loop that refills the tile)")  # fmt: skip
        if self.scope(st) != "shared":
            raise self.err(st, f"double_buffer: it is in scope {self.scope(st)!r}; only a shared-memory stage "
                               "(cache_read(..., 'shared')) is double-buffered")  # fmt: skip
        parent, iv = st.attach_stage, st.attach_ivar
        assert parent is not None and iv is not None
        kind = parent.iter_var_attrs.get(iv, {}).get("kind")
        if kind is not None:
            raise self.err(st, f"double_buffer: it is computed at axis {iv.name!r} of {parent.name!r}, which is "
                               f"{'bound to a thread' if kind == 'bind' else 'marked ' + kind}; compute it at a "
                               "serial loop (the reduction's outer loop)")  # fmt: skip
        if len(self.infos[st].tensors) > 1:
            raise self.err(st, "double_buffer: the stage has several outputs")

    def _realize(self, att: StageInfo, body: Stmt) -> Stmt:
        op = att.stage.op
        for t in reversed(att.stored(self.arg_tensors)):
            body = ProducerRealize(t, [att.root[iv] for iv in op.axis], body, self.scope(att.stage))
        return body

    def _reduce_derived(self, st: Stage, reduce_ivs: set[IterVar]) -> set[IterVar]:
        out = set(reduce_ivs)
        for rel in st.relations:
            if isinstance(rel, Split) and rel.parent in out:
                out |= {rel.outer, rel.inner}
            elif isinstance(rel, Fuse) and (rel.outer in out or rel.inner in out):
                out.add(rel.fused)
        return out

    def _loop(self, info: StageInfo, iv: IterVar, body: Stmt) -> Stmt:
        attrs = info.stage.iter_var_attrs.get(iv, {})
        kind = _KIND.get(attrs.get("kind", ""), "serial")
        ext = info.ext[iv]
        tag = None
        if kind == "thread_binding":
            thread = attrs["thread"]
            tag = thread.thread_tag
            dom = thread.dom.extent if thread.dom is not None else None
            ce = simplify_expr(ext)
            if isinstance(dom, IntImm) and isinstance(ce, IntImm) and ce.value > dom.value:
                raise self.err(
                    info.stage, f"axis {iv.name!r} has extent {ce.value} but is bound to {tag} ({thread.var.name}) "
                    f"declared with extent {dom.value} (te.thread_axis((0, {dom.value}), {tag!r})); split it to fit"
                )
        if kind in ("vectorized", "unrolled") and not isinstance(simplify_expr(ext), IntImm):
            raise self.err(
                info.stage, f"axis {iv.name!r} is marked {attrs['kind']} but its extent {ext} is not a constant"
            )
        loop: Stmt = For(iv.var, make_const(0, ext.dtype), ext, kind, body, tag)
        for key, value in attrs.get("pragmas", []):
            loop = AttrStmt("pragma_" + key, value, loop)
        return loop

    def _tensorized(self, info: StageInfo, p: int, reduce_outside: bool, gdepth: list[tuple[int, Expr]]) -> Stmt:
        st = info.stage
        leaves = st.leaf_iter_vars
        iv = leaves[p]
        intrin = st.tensorize_intrin[iv]
        if len(info.tensors) > 1:
            raise self.err(st, f"tensorize at axis {iv.name!r}: the stage has several outputs")
        ranges: dict[Var, tuple[int | None, int | None]] = {}
        cur: Stage | None = st
        while cur is not None and cur in self.infos:
            for leaf in cur.leaf_iter_vars:
                e = simplify_expr(self.infos[cur].ext.get(leaf, make_const(0, "int32")))
                if isinstance(e, IntImm):
                    ranges[leaf.var] = (0, e.value - 1)
            cur = cur.attach_stage if cur.attach_type == "scope" else None
        for d, c in gdepth:
            c2 = simplify_expr(c, ranges)
            if d >= p and not (isinstance(c2, IntImm) and c2.value):
                raise self.err(
                    st, f"tensorize at axis {iv.name!r}: the loops inside need a guard ({c}); use splits that divide"
                )
        for inner in leaves[p:]:
            if self.attachments(info, inner):
                raise self.err(
                    st, f"tensorize at axis {iv.name!r}: a stage is computed at loop {inner.name!r} inside it"
                )
        absv = {
            riv: simplify_expr(BinOp("add", info.root[riv][0], info.val[riv], info.root[riv][0].dtype))
            for riv in info.root
        }
        op = st.op
        assert isinstance(op, ComputeOp)
        stmt = tensorize_loops(
            st.name, op, info.body, info.tensor, iv, list(leaves[p:]), info.ext, absv, intrin, reduce_outside
        )
        return AttrStmt("tensorized", intrin.name, stmt)


def schedule_to_stmt(sch: Schedule, args: list[Any]) -> Stmt:
    """Lower a schedule to a loop nest over multi-dimensional tensors."""
    low = _Lowering(sch, args)
    low.prepare()
    low.infer_bounds()
    return low.build()
