"""Tensors and the operations that produce them: ``placeholder``, ``compute``, ``scan``.

Modelled on TVM's ``tvm.te``: a :class:`Tensor` is one output of an :class:`Operation`
(:class:`PlaceholderOp` for inputs, :class:`ComputeOp` for an expression over index
variables, :class:`ScanOp` for recurrences, :class:`ExternOp` for a statement written by
hand -- an ``ir_builder`` loop nest or a ``call_packed`` into Python); :class:`IterVar` names a loop axis (data
parallel, reduction or thread). Shapes may hold symbolic ``te.var`` sizes; they are
bound from the arrays at call time. Expressions themselves are loop-IR nodes
(:mod:`vdla.compiler.tir.nodes`).
"""

from __future__ import annotations

import builtins
import inspect
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..tir import dtypes
from ..tir.arith import const_bound
from ..tir.nodes import (
    Buffer,
    Evaluate,
    Expr,
    ExprOp,
    IntImm,
    IRError,
    Logic,
    Reduce,
    Select,
    Stmt,
    TensorRead,
    Var,
    convert,
    make_const,
)
from ..tir.visitor import children, walk


class TensorError(IRError):
    """A malformed tensor declaration (shape mismatch, misused reduction axis, ...)."""


@dataclass(eq=False)
class Range:
    """The half-open interval ``[min, min + extent)``."""

    min: Expr
    extent: Expr

    @staticmethod
    def make(dom: Any) -> Range:
        if isinstance(dom, Range):
            return dom
        if isinstance(dom, tuple | list) and len(dom) == 2:
            lo, hi = convert(dom[0]), convert(dom[1])
            from ..tir.passes.simplify import simplify_expr

            return Range(lo, simplify_expr(hi - lo))
        ext = convert(dom)
        return Range(make_const(0, ext.dtype), ext)

    __hash__ = object.__hash__


@dataclass(eq=False, repr=False)
class IterVar(ExprOp):
    """An iteration axis: a Var with its domain and kind (data_par, reduce, thread)."""

    dom: Range | None
    var: Var
    iter_type: str = "data_par"
    thread_tag: str | None = None

    def _expr(self) -> Expr:
        return self.var

    @property
    def name(self) -> str:
        return self.var.name

    def __repr__(self) -> str:
        return f"IterVar({self.var.name}, {self.iter_type})"

    __str__ = __repr__
    __hash__ = object.__hash__


class TensorList(list):
    """A list of tensors that is also callable, returning itself: ``op.input_tensors`` is a property
    in TVM, and vdla's own modules call it as a method; either spelling reads the same list."""

    def __call__(self) -> TensorList:
        return self


class Operation:
    """Base of tensor-producing operations."""

    name: str
    tag: str = ""
    attrs: dict[str, Any]
    outputs: list[Tensor]

    def output(self, i: int) -> Tensor:
        return self.outputs[i]

    @property
    def num_outputs(self) -> int:
        return len(self.outputs)

    @property
    def input_tensors(self) -> TensorList:
        """The tensors this operation reads (TVM's property); ``op.input_tensors()`` gives the same list."""
        return TensorList(self._input_tensors())

    def _input_tensors(self) -> list[Tensor]:
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"

    __hash__ = object.__hash__


class Tensor(ExprOp):
    """The output of an Operation.  ``A[i, j]`` reads an element."""

    def __init__(self, op: Operation, shape: Sequence[Expr], dtype: str, name: str, value_index: int = 0) -> None:
        self.op = op
        self.shape = list(shape)
        self.dtype = dtype
        self.name = name
        self.value_index = value_index

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _expr(self) -> Expr:
        if self.ndim != 0:
            raise TensorError(f"tensor {self.name!r} has {self.ndim} dimensions; index it as {self.name}[...]")
        return TensorRead(self, [], self.dtype)

    def __call__(self, *indices: Any) -> Expr:
        """``A(i, j)``: the same read as ``A[i, j]`` (TVM's call syntax, used as ``lambda *i: A(*i)``)."""
        return self[tuple(indices)]

    def __getitem__(self, indices: Any) -> Expr:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != self.ndim:
            raise TensorError(
                f"tensor {self.name!r} has {self.ndim} dimension(s) {tuple(self.shape)} "
                f"but is indexed with {len(indices)} index(es)"
            )
        idx = []
        for k, x in enumerate(indices):
            if isinstance(x, slice):
                raise TensorError(f"tensor {self.name!r}: slices are not supported in index {k}")
            e = convert(x)
            if not dtypes.is_int(e.dtype) or dtypes.lanes(e.dtype) != 1:
                raise TensorError(f"tensor {self.name!r}: index {k} ({e}) must be a scalar integer, got {e.dtype}")
            idx.append(e)
        return TensorRead(self, idx, self.dtype)

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        return self is other

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        return self is not other

    def __repr__(self) -> str:
        return f"Tensor(name={self.name}, shape={tuple(self.shape)}, dtype={self.dtype})"


class PlaceholderOp(Operation):
    def __init__(self, name: str, shape: list[Expr], dtype: str) -> None:
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.attrs = {}
        self.outputs = [Tensor(self, shape, dtype, name)]


class ComputeOp(Operation):
    """``out[axis] = body`` (``body`` may be a top-level Reduce over ``reduce_axis``)."""

    def __init__(
        self,
        name: str,
        axis: list[IterVar],
        body: Expr,
        tag: str = "",
        attrs: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.axis = axis
        self.bodies: list[Expr] = list(body) if isinstance(body, list | tuple) else [body]
        self.body = self.bodies[0]
        self.tag = tag
        self.attrs = dict(attrs or {})
        self.reduce_axis: list[IterVar] = list(self.body.axis) if isinstance(self.body, Reduce) else []
        #: A read past an input's shape found at declaration (`check_reads`); create_schedule raises
        #: it unless the op runs inside a scan whose time range makes the read valid.
        self.read_error: TensorError | None = None
        shape = [iv.dom.extent for iv in axis]
        n = len(self.bodies)
        self.outputs = [Tensor(self, shape, b.dtype, name if n == 1 else f"{name}.v{k}", k)
                        for k, b in enumerate(self.bodies)]

    def _input_tensors(self) -> list[Tensor]:
        seen: dict[Tensor, None] = {}
        for b in self.bodies:
            for n in walk(b):
                if isinstance(n, TensorRead):
                    seen.setdefault(n.tensor, None)
        return list(seen)


class ScanOp(Operation):
    """A recurrence over the leading (time) axis: ``state[0:k] = init``, then for
    ``t`` in ``[k, T)``: ``state[t] = update[t]`` where ``update`` may read ``state[t - 1]``
    (and earlier steps) through the state placeholder.  One output per state."""

    def __init__(
        self,
        name: str,
        scan_axis: IterVar,
        init: list[Tensor],
        update: list[Tensor],
        state_placeholder: list[Tensor],
        inputs: list[Tensor],
        tag: str = "",
        attrs: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.scan_axis = scan_axis
        self.init = init
        self.update = update
        self.state_placeholder = state_placeholder
        self.inputs = inputs
        self.tag = tag
        self.attrs = dict(attrs or {})
        n = len(update)
        self.outputs = [
            Tensor(self, list(u.shape), u.dtype, name if n == 1 else f"{name}.v{k}", k) for k, u in enumerate(update)
        ]

    def _input_tensors(self) -> list[Tensor]:
        return list(self.init) + list(self.update) + list(self.inputs)


class ExternOp(Operation):
    """Outputs computed by ``body``, a statement over flat buffers: ``input_placeholders`` stand for
    the (whole) input tensors and ``output_placeholders`` for the outputs (TVM's ``te.extern``)."""

    def __init__(self, name: str, inputs: list[Tensor], input_placeholders: list[Buffer],
                 output_placeholders: list[Buffer], body: Stmt, tag: str = "",
                 attrs: dict[str, Any] | None = None) -> None:
        self.name = name
        self.inputs = inputs
        self.input_placeholders = input_placeholders
        self.output_placeholders = output_placeholders
        self.body = body
        self.tag = tag
        self.attrs = dict(attrs or {})
        n = len(output_placeholders)
        self.outputs = [
            Tensor(self, list(b.shape), b.dtype, name if n == 1 else f"{name}.v{k}", k)
            for k, b in enumerate(output_placeholders)
        ]

    def _input_tensors(self) -> list[Tensor]:
        return list(self.inputs)


def extern(
    shape: Any,
    inputs: Sequence[Tensor],
    fcompute: Callable[[list[Buffer], list[Buffer]], Any],
    name: str = "extern",
    dtype: str | Sequence[str] | None = None,
    in_buffers: Sequence[Buffer] | None = None,
    out_buffers: Sequence[Buffer] | None = None,
    tag: str = "",
    attrs: dict[str, Any] | None = None,
) -> Any:
    """Tensors computed by hand-written IR (TVM's ``te.extern``): ``fcompute(ins, outs)`` gets one
    buffer per input and per output and returns the statement that fills the outputs -- an
    ``ir_builder`` body, or ``tir.call_packed("name", *ins, *outs)`` calling a function registered
    with ``vdla.register_func``. ``shape`` is one shape or a list of them (several outputs); the
    dtype defaults to the first input's. Returns a tensor, or a list for several outputs."""
    from ..tir.op import decl_buffer

    single = not (isinstance(shape, list | tuple) and shape and isinstance(shape[0], list | tuple))
    shapes = [shape] if single else list(shape)
    inputs = list(inputs)
    for k, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TensorError(f"extern {name!r}: input {k} ({t!r}) is not a tensor")
    if dtype is None:
        if not inputs:
            raise TensorError(f"extern {name!r}: give dtype= (there are no inputs to take it from)")
        dts = [inputs[0].dtype] * len(shapes)
    else:
        dts = [dtype] * len(shapes) if isinstance(dtype, str) else list(dtype)
    if len(dts) != len(shapes):
        raise TensorError(f"extern {name!r}: {len(shapes)} output shape(s) but {len(dts)} dtype(s)")
    ins = list(in_buffers) if in_buffers is not None else [decl_buffer(t.shape, t.dtype, t.name) for t in inputs]
    outs = list(out_buffers) if out_buffers is not None else [
        decl_buffer(_shape(sh, f"extern {name!r}"), dt, name if len(shapes) == 1 else f"{name}.v{k}")
        for k, (sh, dt) in enumerate(zip(shapes, dts, strict=True))
    ]
    if len(ins) != len(inputs) or len(outs) != len(shapes):
        raise TensorError(f"extern {name!r}: in_buffers/out_buffers must give one buffer per input/output")
    for t, b in zip(inputs, ins, strict=True):
        if b.dtype != t.dtype or len(b.shape) != t.ndim:
            raise TensorError(f"extern {name!r}: buffer {b.name!r} ({b.dtype}, {len(b.shape)}-d) does not fit "
                              f"input {t.name!r} ({t.dtype}{tuple(t.shape)})")
    body = fcompute(ins, outs)
    if isinstance(body, Expr):
        body = Evaluate(body)
    if not isinstance(body, Stmt):
        raise TensorError(f"extern {name!r}: fcompute must return a statement (ib.get()) or a call "
                          f"(tir.call_packed ...), got {body!r}")
    op = ExternOp(name, inputs, ins, outs, body, tag, attrs)
    return op.outputs[0] if len(op.outputs) == 1 else list(op.outputs)


def scan(
    init: Tensor | Sequence[Tensor],
    update: Tensor | Sequence[Tensor],
    state_placeholder: Tensor | Sequence[Tensor],
    inputs: Sequence[Tensor] | None = None,
    name: str = "scan",
    tag: str = "",
    attrs: dict[str, Any] | None = None,
) -> Any:
    """A recurrence (TVM's ``te.scan``); returns the state tensor (a list for several states).

    ``init[k, ...]`` fills the first ``init.shape[0]`` time steps; ``update`` (declared over
    the full ``state_placeholder`` shape) gives every later step and may read earlier steps
    of ``state_placeholder``.  Shapes after the time axis must agree::

        s_state = te.placeholder((m, n)); s_init = te.compute((1, n), lambda _, i: X[0, i])
        s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
        res = te.scan(s_init, s_update, s_state, inputs=[X])      # prefix sums over t
    """
    single = isinstance(update, Tensor)
    inits = [init] if isinstance(init, Tensor) else list(init)
    upds = [update] if isinstance(update, Tensor) else list(update)
    states = [state_placeholder] if isinstance(state_placeholder, Tensor) else list(state_placeholder)
    if not (len(inits) == len(upds) == len(states)) or not upds:
        raise TensorError(
            f"scan {name!r}: init ({len(inits)}), update ({len(upds)}) and state_placeholder ({len(states)}) "
            "must list the same number of tensors"
        )
    from ..tir.passes.simplify import simplify_expr

    def same(a: Expr, b: Expr) -> bool:
        d = simplify_expr(convert(a) - convert(b))
        return isinstance(d, IntImm) and d.value == 0

    time_ext = states[0].shape[0] if states[0].ndim else None
    k0 = inits[0].shape[0] if inits[0].ndim else None
    for k, (i, u, st) in enumerate(zip(inits, upds, states, strict=True)):
        if not isinstance(st.op, PlaceholderOp):
            raise TensorError(f"scan {name!r}: state {k} ({st.name!r}) must be a te.placeholder")
        if not (i.ndim == u.ndim == st.ndim) or st.ndim == 0:
            raise TensorError(
                f"scan {name!r}: state {k}: init {tuple(i.shape)}, update {tuple(u.shape)} and state "
                f"{tuple(st.shape)} must have the same number (>= 1) of dimensions"
            )
        for d in range(st.ndim):
            if not same(u.shape[d], st.shape[d]) or (d > 0 and not same(i.shape[d], st.shape[d])):
                raise TensorError(
                    f"scan {name!r}: state {k}: shapes do not match in dimension {d}: init {tuple(i.shape)}, "
                    f"update {tuple(u.shape)}, state {tuple(st.shape)}"
                )
        if not same(st.shape[0], time_ext) or not same(i.shape[0], k0):
            raise TensorError(f"scan {name!r}: all states must share the time extent and the number of init steps")
        if u.dtype != st.dtype or i.dtype != st.dtype:
            raise TensorError(f"scan {name!r}: state {k}: dtypes differ ({i.dtype}, {u.dtype}, {st.dtype})")
        if not isinstance(u.op, ComputeOp) or not isinstance(i.op, ComputeOp):
            raise TensorError(f"scan {name!r}: init and update must be te.compute tensors")
    assert time_ext is not None and k0 is not None
    from ..tir.passes.simplify import simplify_expr as _se

    axis = IterVar(Range(convert(k0), _se(convert(time_ext) - k0)), Var(f"{name}.t", "int32"), "ordered")
    op = ScanOp(name, axis, inits, upds, states, list(inputs or []), tag, attrs)
    return op.outputs[0] if single else list(op.outputs)


# ---------------------------------------------------------------------------- declarations


def _shape(shape: Any, what: str) -> list[Expr]:
    if isinstance(shape, int | Expr | ExprOp):
        shape = (shape,)
    if not isinstance(shape, tuple | list):
        raise TensorError(f"{what}: shape must be a tuple of sizes, got {shape!r}")
    out = []
    for k, s in enumerate(shape):
        if isinstance(s, float):  # TVM's rule: `N / bn` with Python numbers is a float extent; int() it
            if not s.is_integer():
                raise TensorError(f"{what}: shape[{k}] = {s} is not a whole number (use // for the extent)")
            s = int(s)
        e = convert(s)
        if not dtypes.is_int(e.dtype):
            raise TensorError(f"{what}: shape[{k}] = {e} must be an integer, got {e.dtype}")
        if isinstance(e, IntImm) and e.value < 0:
            raise TensorError(f"{what}: shape[{k}] = {e.value} is negative")
        out.append(e)
    return out


def placeholder(shape: Any, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of the given shape and dtype."""
    dtype = dtypes.check(dtype)
    if dtypes.lanes(dtype) != 1:
        raise TensorError(f"placeholder {name!r}: vector dtype {dtype} is not allowed")
    return PlaceholderOp(name, _shape(shape, f"placeholder {name!r}"), dtype).output(0)


def var(name: str = "v", dtype: str = "int32") -> Var:
    """A scalar symbolic variable (a shape size or a scalar parameter)."""
    return Var(name, dtypes.check(dtype))


def size_var(name: str = "n", dtype: str = "int32") -> Var:
    """A symbolic size (alias of :func:`var`)."""
    return var(name, dtype)


def const(value: Any, dtype: str | None = None) -> Expr:
    """A constant; the dtype defaults to int32 for ints and float32 for floats."""
    if dtype is None:
        return convert(value)
    return make_const(value, dtype)


def reduce_axis(dom: Any, name: str = "rv") -> IterVar:
    """A reduction axis over ``dom``: ``(min, max)`` or an extent."""
    iv = IterVar(Range.make(dom), Var(name, "int32"), "reduce")
    _REDUCE_VARS.add(iv.var)
    return iv


def thread_axis(dom: Any = None, tag: str = "", name: str = "", span: Any = None) -> IterVar:
    """A thread axis for ``Stage.bind`` (``"threadIdx.x"``, ``"blockIdx.x"``, ``"vthread"``, ``"cthread"``).

    TVM's signature: ``thread_axis((0, 8), "threadIdx.x")`` gives the axis a domain (the
    loop bound to it must fit in it); ``thread_axis("threadIdx.x")`` takes a string first
    argument as the tag, as TVM does; ``name`` defaults to the tag."""
    if isinstance(dom, str):
        if tag:
            raise TensorError(f"thread_axis: the tag is given twice ({dom!r} and tag={tag!r})")
        dom, tag = None, dom
    if not isinstance(tag, str) or not tag:
        raise TensorError(f"thread_axis: give a tag such as 'threadIdx.x' or 'blockIdx.x' (got tag={tag!r})")
    rng = None if dom is None else Range.make(dom)
    if rng is not None:
        ext = rng.extent
        if isinstance(ext, IntImm) and ext.value <= 0:
            raise TensorError(f"thread_axis {tag!r}: the domain {dom!r} is empty")
    return IterVar(rng, Var(name or tag, "int32"), "thread", tag)


def _check_reductions(name: str, body: Expr, reduce_vars: set[Var]) -> None:
    """Reductions only at the top level; reduce axes only inside reductions."""

    def scan(e: Any, inside: bool) -> None:
        for n in walk(e):
            if isinstance(n, Reduce) and n is not body:
                raise TensorError(
                    f"compute {name!r}: a reduction must be the whole body (top level), "
                    "not part of a larger expression; split it into two computes"
                )
            if not inside and isinstance(n, Var) and n in reduce_vars:
                raise TensorError(
                    f"compute {name!r}: reduce axis {n.name!r} is used outside a reduction (te.sum/max/min ...)"
                )

    if isinstance(body, Reduce):
        scan(body.source, True)
        if body.condition is not None:
            scan(body.condition, True)
        if body.init is not None:
            scan(body.init, False)
    else:
        scan(body, False)


#: every Var created by reduce_axis (to report reduce axes used outside a reduction)
_REDUCE_VARS: weakref.WeakSet[Var] = weakref.WeakSet()


def compute(
    shape: Any,
    fcompute: Callable[..., Any],
    name: str = "compute",
    tag: str = "",
    attrs: dict[str, Any] | None = None,
) -> Tensor:
    """``out[i, j, ...] = fcompute(i, j, ...)`` over ``shape``."""
    shp = _shape(shape, f"compute {name!r}")
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):  # builtins
        params = []
    var_pos = builtins.any(p.kind == p.VAR_POSITIONAL for p in params)
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not var_pos and len(names) != len(shp):
        raise TensorError(
            f"compute {name!r}: fcompute takes {len(names)} index argument(s) but the shape {tuple(shp)} "
            f"has {len(shp)} dimension(s)"
        )
    if var_pos:
        names = [f"i{k}" for k in range(len(shp))]
    axis = [
        IterVar(Range(make_const(0, s.dtype), s), Var(n, s.dtype), "data_par") for n, s in zip(names, shp, strict=True)
    ]
    result = fcompute(*[iv.var for iv in axis])
    several = isinstance(result, tuple | list)
    bodies = []
    for k, body in enumerate(result if several else [result]):
        what = f"compute {name!r}" + (f" (output {k})" if several else "")
        if isinstance(body, Tensor):
            raise TensorError(f"{what}: fcompute returned a tensor; index it (e.g. {body.name}[i])")
        try:
            body = convert(body)
        except IRError as err:
            raise TensorError(f"{what}: {err}") from None
        if dtypes.lanes(body.dtype) != 1:
            raise TensorError(f"{what}: body must be scalar, got {body.dtype}")
        reduce_vars = {n.var for n in _reduce_axes_in(body)}
        reduce_vars |= {v for v in _vars_in(body) if v in _REDUCE_VARS}
        _check_reductions(name, body, reduce_vars)
        bodies.append(body)
    if not bodies:
        raise TensorError(f"compute {name!r}: fcompute returned no value")
    if several:
        red = [isinstance(b, Reduce) for b in bodies]
        if any(red) and not (all(red) and all(b.sources is not None and b.sources is bodies[0].sources
                                              for b in bodies) and len(bodies) == len(bodies[0].sources)):
            raise TensorError(f"compute {name!r}: several outputs are either all plain expressions or the values "
                              "of one tuple reduction (a te.comm_reducer over a tuple)")
    op = ComputeOp(name, axis, bodies if several else bodies[0], tag, attrs)
    try:
        check_reads(op)
    except TensorError as err:  # raised by create_schedule: a scan's update reads state[t - 1] legally
        op.read_error = err
    return list(op.outputs) if several else op.output(0)


def check_reads(op: ComputeOp, time: tuple[int, int] | None = None) -> None:
    """Every read of another tensor stays inside its shape over the op's whole iteration domain
    (``time``: the range of its first axis when a scan runs it); TensorError names the tensor,
    the axis, its extent and the index's range.

    Checked where both are known constants (a symbolic extent or shape is checked at run
    time by the caller's shape checks). Reads under a condition (``if_then_else``, a
    select, a reduction's condition, ``&&``/``||``) are left alone: a guard such as
    ``te.if_then_else(i < 4, A[i], 0)`` is how padding is written."""
    name = op.name
    ranges: dict[Var, tuple[int | None, int | None]] = {}
    for iv in list(op.axis) + [r for body in op.bodies for r in _reduce_axes_in(body)]:
        lo, ext = const_bound(iv.dom.min, {}), const_bound(iv.dom.extent, {})
        if lo[0] is not None and lo[0] == lo[1] and ext[0] is not None and ext[0] == ext[1] and ext[0] > 0:
            ranges[iv.var] = (lo[0], lo[0] + ext[0] - 1)

    def visit(e: Any, guarded: bool) -> None:
        if isinstance(e, Select):
            visit(e.cond, guarded)
            visit(e.t, True)
            visit(e.f, True)
            return
        if isinstance(e, Logic):
            guarded = True
        if isinstance(e, Reduce):
            if e.condition is not None:
                visit(e.condition, guarded)
            visit(e.source, guarded or e.condition is not None)
            if e.init is not None:
                visit(e.init, guarded)
            return
        if isinstance(e, TensorRead) and not guarded:
            _check_read(name, e, ranges)
        for c in children(e):
            visit(c, guarded)

    if time is not None and op.axis:
        ranges[op.axis[0].var] = time
    for body in op.bodies:
        visit(body, False)


def _check_read(name: str, read: TensorRead, ranges: dict[Var, tuple[int | None, int | None]]) -> None:
    t = read.tensor
    for d, (idx, extent) in enumerate(zip(read.indices, t.shape, strict=False)):
        if not isinstance(extent, IntImm):
            continue
        lo, hi = const_bound(idx, ranges)
        if (lo is not None and lo < 0) or (hi is not None and hi >= extent.value):
            span = f"{'?' if lo is None else lo}..{'?' if hi is None else hi}"
            raise TensorError(
                f"compute {name!r} reads {t.name}[{', '.join(map(str, read.indices))}] outside its shape "
                f"{tuple(int(x.value) if isinstance(x, IntImm) else str(x) for x in t.shape)}: axis {d} has "
                f"extent {extent.value} but index {idx} ranges over {span}"
            )


def _vars_in(e: Expr) -> list[Var]:
    return [n for n in walk(e) if isinstance(n, Var)]


def _reduce_axes_in(e: Expr) -> list[IterVar]:
    out: list[IterVar] = []
    for n in walk(e):
        if isinstance(n, Reduce):
            out.extend(n.axis)
    return out
