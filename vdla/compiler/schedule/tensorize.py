"""Tensorize: replace a stage's inner loops by a declared tensor intrinsic (TVM's
``decl_tensor_intrin`` + ``Stage.tensorize``).

An intrinsic is a compute declaration over small placeholders (what the hardware or
micro-kernel computes) plus a callback ``fintrin(ins, outs)`` that returns the IR it
lowers to.  ``ins``/``outs`` are :class:`TensorRegion` views of the real tensors at the
tensorized loop's iteration: the callback can read and write elements (``vload``,
``vstore``), or pass addresses, element offsets and strides (``access_ptr``,
``elem_offset``, ``strides``) to an extern function (``te.call_extern``).  For a
reduction the callback may return ``(body, reset, update)``: ``body`` computes the
whole result, ``reset`` initialises it and ``update`` accumulates; ``update`` is used
when reduction loops remain outside the tensorized loops (their initialisation is then
generated as usual).

Matching (:func:`tensorize_loops`) is structural, after substituting the stage's loop
variables by the intrinsic's axes: the region covered by the loops from the tensorized
axis inwards must have the intrinsic's extents (extra leading dimensions of extent 1
are dropped), and the stage's body must equal the intrinsic's body with each input
tensor replaced by the corresponding intrinsic placeholder.  Errors name the stage,
the axis and the mismatching extents or expressions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..te.operation import ComputeOp, IterVar, Operation, PlaceholderOp, Tensor
from ..tir.arith import equal
from ..tir.nodes import (
    AddressOf,
    ElemOffset,
    Evaluate,
    Expr,
    IntImm,
    ProducerStore,
    Reduce,
    Stmt,
    TensorRead,
    TensorStride,
    Var,
    convert,
    make_const,
    seq,
)
from ..tir.op import call_extern
from ..tir.passes.simplify import simplify_expr
from ..tir.visitor import post_order_map, substitute, walk
from .bound import sym_interval

__all__ = ["TensorIntrin", "TensorRegion", "TensorizeError", "decl_tensor_intrin", "call_extern"]

IntrinResult = Stmt | Expr | tuple[Any, Any, Any] | None


class TensorizeError(ValueError):
    """The stage's loops or body do not match the intrinsic (the message says where)."""


class TensorIntrin:
    """A declared intrinsic: ``op`` (a compute over placeholders) and its lowering."""

    def __init__(self, op: ComputeOp, fintrin: Callable[..., IntrinResult], name: str) -> None:
        self.op = op
        self.fintrin = fintrin
        self.name = name
        self.inputs = op.input_tensors()

    def __repr__(self) -> str:
        return f"TensorIntrin({self.name})"

    __str__ = __repr__


def decl_tensor_intrin(
    op: Operation | Tensor, fintrin: Callable[..., IntrinResult], name: str = "tensor_intrin",
    binds: dict[Tensor, Any] | None = None, scalar_params: Any = None, default_buffer_params: Any = None,
) -> TensorIntrin:
    """Declare an intrinsic computing ``op`` (whose inputs are placeholders) lowered by ``fintrin``.

    ``binds`` (TVM's: a ``tir.decl_buffer`` per tensor, saying which strides and offsets the
    intrinsic accepts) is checked for dtype and rank; the regions ``fintrin`` receives carry the
    actual strides and offset (``.strides``, ``.elem_offset``, ``.access_ptr()``), so any layout
    the schedule produces is passed on as it is."""
    if isinstance(op, Tensor):
        op = op.op
    if not isinstance(op, ComputeOp):
        raise TensorizeError(f"decl_tensor_intrin {name!r}: expected a te.compute, got {op!r}")
    if scalar_params:
        raise TensorizeError(f"decl_tensor_intrin {name!r}: scalar_params are not supported")
    tensors = {t: t for t in op.input_tensors()} | {op.output(0): op.output(0)}
    for t, buf in (binds or {}).items():
        if t not in tensors:
            raise TensorizeError(f"decl_tensor_intrin {name!r}: binds names {getattr(t, 'name', t)!r}, which is "
                                 "neither an input nor the output of the intrinsic")
        if getattr(buf, "dtype", None) != t.dtype or len(getattr(buf, "shape", ())) != t.ndim:
            raise TensorizeError(f"decl_tensor_intrin {name!r}: buffer bound to {t.name!r} must be "
                                 f"{t.dtype} with {t.ndim} dimension(s), got {buf!r}")
    for t in op.input_tensors():
        if not isinstance(t.op, PlaceholderOp):
            raise TensorizeError(f"decl_tensor_intrin {name!r}: input {t.name!r} must be a te.placeholder")
    if not callable(fintrin):
        raise TensorizeError(f"decl_tensor_intrin {name!r}: fintrin must be callable (ins, outs) -> IR")
    return TensorIntrin(op, fintrin, name)


class TensorRegion:
    """A view of ``tensor`` over the region one intrinsic call covers.

    ``mins`` are the region's first indices (expressions of the outer loops); the view
    has the intrinsic placeholder's dimensions (``keep`` lists the tensor dimensions
    they are; the others have extent 1)."""

    def __init__(self, tensor: Tensor, mins: list[Expr], extents: list[int], keep: list[int]) -> None:
        self.tensor = tensor
        self.mins = mins
        self.extents = extents
        self.keep = keep
        self.dtype = tensor.dtype

    @property
    def shape(self) -> list[int]:
        return [self.extents[d] for d in self.keep]

    @property
    def name(self) -> str:
        return self.tensor.name

    def _full(self, idx: Sequence[Any]) -> list[Expr]:
        if len(idx) != len(self.keep):
            raise TensorizeError(f"region of {self.tensor.name!r} has {len(self.keep)} dimension(s), got {len(idx)}")
        out = list(self.mins)
        for d, i in zip(self.keep, idx, strict=True):
            out[d] = simplify_expr(self.mins[d] + convert(i))
        return out

    def vload(self, *idx: Any) -> Expr:
        """Read element ``idx`` of the view."""
        if len(idx) == 1 and isinstance(idx[0], list | tuple):
            idx = tuple(idx[0])
        return TensorRead(self.tensor, self._full(idx), self.dtype)

    def vstore(self, idx: Sequence[Any], value: Any) -> Stmt:
        """Write element ``idx`` of the view."""
        v = convert(value)
        if v.dtype != self.dtype:
            v = v.astype(self.dtype)
        return ProducerStore(self.tensor, self._full(list(idx)), v)

    def access_ptr(self, access_mask: Any = "rw", ptr_type: str = "handle", content_lanes: int = 1,
                   offset: Any = 0) -> Expr:
        """Address of the region's first element (``handle``); TVM's ``access_mask`` ("r", "w", "rw")
        is accepted; ``offset`` counts elements of the innermost dimension."""
        mins = list(self.mins)
        if not (isinstance(offset, int) and offset == 0):
            mins[-1] = simplify_expr(mins[-1] + convert(offset))
        return AddressOf(TensorRead(self.tensor, mins, self.dtype))

    @property
    def elem_offset(self) -> Expr:
        """Flat element offset of the region's first element within its buffer."""
        return ElemOffset(TensorRead(self.tensor, list(self.mins), self.dtype))

    @property
    def strides(self) -> list[Expr]:
        """Element strides of the view's dimensions in the tensor's storage."""
        return [TensorStride(self.tensor, d) for d in self.keep]

    def __repr__(self) -> str:
        return f"TensorRegion({self.tensor.name}, shape={self.shape})"


def _const(e: Expr) -> int | None:
    e = simplify_expr(e)
    return e.value if isinstance(e, IntImm) else None


def tensorize_loops(
    stage_name: str,
    op: ComputeOp,
    body: Expr,
    out_tensor: Tensor,
    axis: IterVar,
    inner: list[IterVar],
    ext: dict[IterVar, Expr],
    root_value: dict[IterVar, Expr],
    intrin: TensorIntrin,
    reduce_outside: bool,
) -> Stmt:
    """The IR replacing the loops ``inner`` (from ``axis`` inwards) of a stage.

    ``root_value`` gives each root iteration variable's absolute value in terms of the
    stage's leaf loop variables; ``reduce_outside`` says whether reduction loops remain
    outside the tensorized loops."""

    def err(msg: str) -> TensorizeError:
        return TensorizeError(f"stage {stage_name!r}: tensorize at axis {axis.name!r} with {intrin.name!r}: {msg}")

    relax: dict[Var, tuple[Expr, Expr]] = {}
    for iv in inner:
        n = _const(ext[iv])
        if n is None:
            raise err(f"loop {iv.name!r} has a non-constant extent {ext[iv]}")
        relax[iv.var] = (make_const(0, iv.var.dtype), make_const(n - 1, iv.var.dtype))
    region: dict[IterVar, tuple[Expr, int]] = {}
    for iv in list(op.axis) + list(op.reduce_axis):
        r = sym_interval(root_value[iv], relax)
        n = None if r is None else _const(r[1] - r[0] + 1)
        if r is None or n is None:
            raise err(f"cannot determine the range axis {iv.name!r} covers inside the tensorized loops")
        region[iv] = (simplify_expr(r[0]), n)
    iop = intrin.op
    mapping: dict[Var, Expr] = {}
    ivars: dict[Var, int] = {}

    def match(stage_axes: list[IterVar], intrin_axes: list[IterVar], kind: str) -> None:
        ns, ni = len(stage_axes), len(intrin_axes)
        if ni > ns:
            raise err(f"the intrinsic has {ni} {kind} axes but the stage has {ns}")
        for iv in stage_axes[: ns - ni]:
            lo, n = region[iv]
            if n != 1:
                raise err(
                    f"{kind} axis {iv.name!r} covers {n} iterations inside the tensorized loops, but the "
                    f"intrinsic has no matching axis (its {kind} extents: {[_const(a.dom.extent) for a in intrin_axes]})"
                )
            mapping[iv.var] = lo
        for siv, iiv in zip(stage_axes[ns - ni :], intrin_axes, strict=True):
            lo, n = region[siv]
            want = _const(iiv.dom.extent)
            if want != n:
                raise err(f"{kind} axis {siv.name!r} covers {n} iterations but intrinsic axis {iiv.name!r} has {want}")
            mapping[siv.var] = simplify_expr(lo + iiv.var)
            ivars[iiv.var] = n

    match(list(op.axis), list(iop.axis), "data-parallel")
    match(list(op.reduce_axis), list(iop.reduce_axis), "reduction")
    # ---- body
    ib = iop.body
    if isinstance(body, Reduce) != isinstance(ib, Reduce):
        raise err("one of the stage and the intrinsic is a reduction and the other is not")
    if isinstance(body, Reduce) and isinstance(ib, Reduce):
        if body.combiner.name != ib.combiner.name:
            raise err(f"the stage reduces with {body.combiner.name!r} but the intrinsic with {ib.combiner.name!r}")
        s_src, i_src = substitute(body.source, mapping), ib.source
    else:
        s_src, i_src = substitute(body, mapping), ib
    s_tensors = _tensors_in(s_src)
    i_tensors = _tensors_in(i_src)
    if len(s_tensors) != len(i_tensors):
        raise err(
            f"the stage reads {len(s_tensors)} tensor(s) ({', '.join(t.name for t in s_tensors)}) but the "
            f"intrinsic {len(i_tensors)} ({', '.join(t.name for t in i_tensors)})"
        )
    irelax = {v: (make_const(0, v.dtype), make_const(n - 1, v.dtype)) for v, n in ivars.items()}
    in_regions: dict[Tensor, TensorRegion] = {}
    for t, p in zip(s_tensors, i_tensors, strict=True):
        reads = [n.indices for n in walk(s_src) if isinstance(n, TensorRead) and n.tensor is t]
        mins: list[Expr] = []
        exts: list[int] = []
        for d in range(t.ndim):
            lo = hi = None
            for idx in reads:
                r = sym_interval(idx[d], irelax)
                if r is None:
                    raise err(f"cannot bound index {d} of {t.name!r} ({idx[d]})")
                rlo, rhi = simplify_expr(r[0]), simplify_expr(r[1])
                if lo is None:
                    lo, hi = rlo, rhi
                elif not (equal(lo, rlo) and equal(hi, rhi)):
                    raise err(f"{t.name!r} is read at different regions in dimension {d}")
            assert lo is not None and hi is not None
            n = _const(hi - lo + 1)
            if n is None:
                raise err(f"the region of {t.name!r} in dimension {d} has a non-constant extent")
            mins.append(lo)
            exts.append(n)
        keep = list(range(t.ndim - p.ndim, t.ndim))
        for d in range(t.ndim - p.ndim):
            if exts[d] != 1:
                raise err(
                    f"input {t.name!r} dimension {d} covers {exts[d]} elements; the intrinsic's {p.name!r} has none"
                )
        pshape = [_const(x) for x in p.shape]
        if [exts[d] for d in keep] != pshape:
            raise err(f"input {t.name!r} covers {[exts[d] for d in keep]} but the intrinsic's {p.name!r} is {pshape}")
        in_regions[t] = TensorRegion(t, mins, exts, keep)

    def to_placeholder(n: Any) -> Any:
        if isinstance(n, TensorRead) and n.tensor in in_regions:
            reg = in_regions[n.tensor]
            p = i_tensors[s_tensors.index(n.tensor)]
            return TensorRead(p, [simplify_expr(n.indices[d] - reg.mins[d]) for d in reg.keep], n.dtype)
        return None

    got = simplify_expr(post_order_map(s_src, to_placeholder))
    want = simplify_expr(i_src)
    if not equal(got, want):
        raise err(f"the stage computes {got} but the intrinsic computes {want}")
    # ---- lowering
    out_keep = list(range(len(op.axis) - len(iop.axis), len(op.axis)))
    out_region = TensorRegion(
        out_tensor, [region[iv][0] for iv in op.axis], [region[iv][1] for iv in op.axis], out_keep
    )
    res = intrin.fintrin([in_regions[t] for t in s_tensors], [out_region])
    parts = list(res) if isinstance(res, tuple) else [res, None, None]
    if len(parts) != 3:
        raise err("fintrin must return a statement or a tuple (body, reset, update)")
    body_s, reset_s, update_s = (_as_stmt(x) for x in parts)
    if not op.reduce_axis:
        chosen = body_s
    elif reduce_outside:
        chosen = update_s
        if chosen is None:
            raise err("reduction loops remain outside the tensorized loops, so the intrinsic must provide 'update'")
    else:
        chosen = body_s if body_s is not None else (seq(reset_s, update_s) if reset_s and update_s else None)
    if chosen is None:
        raise err("fintrin returned no statement to use")
    return chosen


def _as_stmt(x: Any) -> Stmt | None:
    if x is None or isinstance(x, Stmt):
        return x
    if isinstance(x, Expr):
        return Evaluate(x)
    raise TensorizeError(f"fintrin must return IR statements or expressions, got {x!r}")


def _tensors_in(e: Expr) -> list[Tensor]:
    seen: dict[Tensor, None] = {}
    for n in walk(e):
        if isinstance(n, TensorRead):
            seen.setdefault(n.tensor, None)
    return list(seen)
