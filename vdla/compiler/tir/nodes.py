"""The compiler's IR: expression and statement nodes as plain dataclasses.

One expression language serves both tensor expressions (``te``) and the lowered loop
IR, as in TVM.  Before storage flattening, tensors are read with :class:`TensorRead`
and written with :class:`ProducerStore` inside :class:`ProducerRealize` scopes; after
flattening, flat :class:`Buffer` objects are read with :class:`BufferLoad` and written
with :class:`BufferStore`.  Vector code uses :class:`Ramp` and :class:`Broadcast`.

Expressions overload Python operators (``+ - * / // % < <= > >= == != & | ~``);
``a == b`` builds an equality node whose truth value is object identity, so
expressions can still be dict keys.  Use :meth:`Expr.same_as` for identity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import dtypes
from .printer import to_str


class IRError(ValueError):
    """An ill-formed expression or statement (wrong dtypes, wrong arity, ...)."""


class ZeroDivisorError(IRError, ZeroDivisionError):
    """An integer division or remainder whose divisor is the constant 0 (caught when it is written).

    A divisor that is 0 only at run time gives numpy's result in generated code (0): what each
    target does, and the build-time warning, are in `vdla.compiler.tir.division`."""


def _node_str(node: Any) -> str:
    return to_str(node)


class ExprOp:
    """Operator overloading shared by :class:`Expr` and te's IterVar."""

    def _expr(self) -> Expr:  # pragma: no cover - overridden
        raise NotImplementedError

    def __add__(self, o: Any) -> Expr:
        return binary("add", self, o)

    def __radd__(self, o: Any) -> Expr:
        return binary("add", o, self)

    def __sub__(self, o: Any) -> Expr:
        return binary("sub", self, o)

    def __rsub__(self, o: Any) -> Expr:
        return binary("sub", o, self)

    def __mul__(self, o: Any) -> Expr:
        return binary("mul", self, o)

    def __rmul__(self, o: Any) -> Expr:
        return binary("mul", o, self)

    def __truediv__(self, o: Any) -> Expr:
        return binary("div", self, o)

    def __rtruediv__(self, o: Any) -> Expr:
        return binary("div", o, self)

    def __floordiv__(self, o: Any) -> Expr:
        return binary("floordiv", self, o)

    def __rfloordiv__(self, o: Any) -> Expr:
        return binary("floordiv", o, self)

    def __mod__(self, o: Any) -> Expr:
        return binary("floormod", self, o)

    def __rmod__(self, o: Any) -> Expr:
        return binary("floormod", o, self)

    def __neg__(self) -> Expr:
        e = self._expr()
        return binary("sub", make_const(0, e.dtype), e)

    def __lt__(self, o: Any) -> Expr:
        return compare("lt", self, o)

    def __le__(self, o: Any) -> Expr:
        return compare("le", self, o)

    def __gt__(self, o: Any) -> Expr:
        return compare("gt", self, o)

    def __ge__(self, o: Any) -> Expr:
        return compare("ge", self, o)

    def __eq__(self, o: Any) -> Expr:  # type: ignore[override]
        return compare("eq", self, o)

    def __ne__(self, o: Any) -> Expr:  # type: ignore[override]
        return compare("ne", self, o)

    def equal(self, o: Any, span: Any = None) -> Expr:
        """``self == o`` as an expression (TVM's spelling, e.g. ``tx.var.equal(0)`` for a store predicate)."""
        return compare("eq", self, o)

    def __and__(self, o: Any) -> Expr:
        return logic("and", self, o)

    def __rand__(self, o: Any) -> Expr:
        return logic("and", o, self)

    def __or__(self, o: Any) -> Expr:
        return logic("or", self, o)

    def __ror__(self, o: Any) -> Expr:
        return logic("or", o, self)

    def __invert__(self) -> Expr:
        return Not(convert(self), "bool")

    def __rshift__(self, o: Any) -> Expr:
        return shift("shift_right", self, o)

    def __rrshift__(self, o: Any) -> Expr:
        return shift("shift_right", o, self)

    def __lshift__(self, o: Any) -> Expr:
        return shift("shift_left", self, o)

    def __rlshift__(self, o: Any) -> Expr:
        return shift("shift_left", o, self)

    __hash__ = object.__hash__

    def astype(self, dtype: str) -> Expr:
        """Cast to ``dtype`` (a no-op when the dtype already matches)."""
        e = self._expr()
        dtype = dtypes.check(dtype)
        if e.dtype == dtype:
            return e
        return Cast(dtype, e)

    def same_as(self, other: object) -> bool:
        return self is other


class Expr(ExprOp):
    """Base class of expressions.  Every expression has a ``dtype`` field."""

    dtype: str

    def _expr(self) -> Expr:
        return self

    def __bool__(self) -> bool:
        raise IRError(
            f"the truth value of the expression {self} is not known at compile time; "
            "use te.if_then_else / te.all / te.any to build conditions"
        )

    def __str__(self) -> str:
        return _node_str(self)

    __repr__ = __str__


@dataclass(eq=False, repr=False)
class Var(Expr):
    """A scalar variable: a loop index, a tensor-shape symbol or a scalar argument."""

    name: str
    dtype: str = "int32"


@dataclass(eq=False, repr=False)
class IntImm(Expr):
    value: int
    dtype: str = "int32"


@dataclass(eq=False, repr=False)
class FloatImm(Expr):
    value: float
    dtype: str = "float32"


@dataclass(eq=False, repr=False)
class Cast(Expr):
    dtype: str
    value: Expr


#: binary arithmetic operators: div is float division, trunc* are C semantics
BIN_OPS = ("add", "sub", "mul", "div", "floordiv", "floormod", "truncdiv", "truncmod", "min", "max")
CMP_OPS = ("lt", "le", "gt", "ge", "eq", "ne")


@dataclass(eq=False, repr=False)
class BinOp(Expr):
    op: str
    a: Expr
    b: Expr
    dtype: str


@dataclass(eq=False, repr=False)
class Cmp(Expr):
    op: str
    a: Expr
    b: Expr
    dtype: str = "bool"

    def __bool__(self) -> bool:
        # lets expressions be dict keys / list members: == compares identity there
        if self.op == "eq":
            return self.a is self.b
        if self.op == "ne":
            return self.a is not self.b
        return Expr.__bool__(self)


@dataclass(eq=False, repr=False)
class Logic(Expr):
    op: str  # "and" | "or"
    a: Expr
    b: Expr
    dtype: str = "bool"


@dataclass(eq=False, repr=False)
class Not(Expr):
    a: Expr
    dtype: str = "bool"


@dataclass(eq=False, repr=False)
class Select(Expr):
    """``cond ? t : f``.  ``lazy`` (te.if_then_else) evaluates only the taken branch."""

    cond: Expr
    t: Expr
    f: Expr
    dtype: str = ""  # TVM's tir.Select(cond, t, f): the dtype is the branches'
    lazy: bool = False

    def __post_init__(self) -> None:
        if not self.dtype:
            self.cond = as_bool(self.cond)
            both = binary("add", self.t, self.f)  # promotes the branches to one dtype
            self.t, self.f, self.dtype = both.a, both.b, both.dtype


@dataclass(eq=False, repr=False)
class Call(Expr):
    """A pure math intrinsic (exp, log, sqrt, tanh, fabs, pow, ...), or a user's operator
    declared with ``tvm.ir.register_op_attr`` (lowered by its ``register_intrin_lowering`` rule)."""

    name: str
    args: list[Expr]
    dtype: str

    @property
    def op(self) -> Any:
        """The operator called (TVM's ``call.op``; ``call.op.name`` is ``"tir.exp"``)."""
        from .op_registry import _op

        return _op(f"tir.{self.name}")


@dataclass(eq=False, repr=False)
class CallExtern(Expr):
    """A call of an external function by symbol name (``dtype`` ``"void"`` for none);
    tensorize intrinsics lower to these.  Not pure: keep it in an ``Evaluate``."""

    name: str
    args: list[Expr]
    dtype: str = "void"


@dataclass(eq=False, repr=False)
class AddressOf(Expr):
    """The address of an element (``&T[i, j]``): ``value`` is a TensorRead, or a BufferLoad
    after storage flattening.  dtype ``"handle"``."""

    value: Expr
    dtype: str = "handle"


@dataclass(eq=False, repr=False)
class ElemOffset(Expr):
    """The flat element offset of ``value`` (a TensorRead) within its buffer; storage
    flattening replaces it by the index expression."""

    value: Expr
    dtype: str = "int32"


@dataclass(eq=False, repr=False)
class TensorStride(Expr):
    """The stride (in elements) of dimension ``dim`` of ``tensor``'s storage; storage
    flattening replaces it by the stride of the realized or bound buffer."""

    tensor: Any
    dim: int
    dtype: str = "int32"


@dataclass(eq=False, repr=False)
class TensorRead(Expr):
    """Read of a (multi-dimensional) tensor element, before storage flattening."""

    tensor: Any  # te.Tensor
    indices: list[Expr]
    dtype: str


@dataclass(eq=False, repr=False)
class Reduce(Expr):
    """A commutative reduction of ``source`` over ``axis`` (te.IterVar list)."""

    combiner: Any  # te.CommReducer
    source: Expr
    axis: list[Any]
    condition: Expr | None
    init: Expr | None
    dtype: str
    value_index: int = 0  # a tuple reduction (argmax): which value this is ...
    sources: list[Expr] | None = None  # ... of all the values reduced together


@dataclass(eq=False, repr=False)
class Buffer:
    """A flat region of memory: a function argument or an allocation."""

    name: str
    dtype: str
    shape: list[Expr]
    scope: str = "global"

    def __str__(self) -> str:
        return self.name

    __repr__ = __str__
    __hash__ = object.__hash__

    # -- TVM's Buffer methods (extern-op and intrinsic bodies use them; row-major storage)
    @property
    def strides(self) -> list[Expr]:
        out: list[Expr] = []
        acc: Expr = IntImm(1)
        for d in reversed(self.shape):
            out.append(acc)
            if isinstance(acc, IntImm) and isinstance(d, IntImm):
                acc = IntImm(acc.value * d.value)
            else:
                acc = d if isinstance(acc, IntImm) and acc.value == 1 else binary("mul", acc, d)
        return list(reversed(out))

    @property
    def elem_offset(self) -> Expr:
        return IntImm(0)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def offset_of(self, indices: Any) -> Expr:
        """The flat element index of ``indices`` (one flat index, or one per dimension)."""
        idx = list(indices) if isinstance(indices, list | tuple) else [indices]
        if len(idx) == 1:
            return convert(idx[0])
        if len(idx) != len(self.shape):
            raise IRError(f"buffer {self.name!r} has {len(self.shape)} dimension(s), indexed with {len(idx)}")
        acc: Expr | None = None
        for i, st in zip(idx, self.strides, strict=True):
            term = binary("mul", i, st)
            acc = term if acc is None else binary("add", acc, term)
        assert acc is not None
        return acc

    def vload(self, begin: Any, dtype: str | None = None) -> Expr:
        return BufferLoad(self, self.offset_of(begin), dtype or self.dtype)

    def __getitem__(self, indices: Any) -> Expr:
        return self.vload(indices)

    def vstore(self, begin: Any, value: Any) -> Stmt:
        v = convert(value)
        return BufferStore(self, self.offset_of(begin), v if v.dtype == self.dtype else Cast(self.dtype, v))

    def access_ptr(self, access_mask: Any = "rw", ptr_type: str = "handle", content_lanes: int = 1,
                   offset: Any = 0) -> Expr:
        """The address of element ``offset`` (``access_mask`` is TVM's "r"/"w"/"rw" hint, not needed here)."""
        return AddressOf(BufferLoad(self, convert(offset), self.dtype))


@dataclass(eq=False, repr=False)
class BufferLoad(Expr):
    buffer: Buffer
    index: Expr
    dtype: str


@dataclass(eq=False, repr=False)
class Ramp(Expr):
    """The vector ``base, base+stride, ..., base+(lanes-1)*stride``."""

    base: Expr
    stride: Expr
    lanes: int
    dtype: str


@dataclass(eq=False, repr=False)
class Broadcast(Expr):
    value: Expr
    lanes: int
    dtype: str


# ---------------------------------------------------------------------------- statements


class Stmt:
    """Base class of statements."""

    def __str__(self) -> str:
        return _node_str(self)

    __repr__ = __str__


@dataclass(eq=False, repr=False)
class ProducerStore(Stmt):
    tensor: Any
    indices: list[Expr]
    value: Expr


@dataclass(eq=False, repr=False)
class ProducerRealize(Stmt):
    """Scope in which ``tensor`` is stored for the region ``bounds`` = [(min, extent), ...]."""

    tensor: Any
    bounds: list[tuple[Expr, Expr]]
    body: Stmt
    scope: str = "global"


@dataclass(eq=False, repr=False)
class BufferStore(Stmt):
    buffer: Buffer
    index: Expr
    value: Expr


@dataclass(eq=False, repr=False)
class Allocate(Stmt):
    buffer: Buffer
    body: Stmt


FOR_KINDS = ("serial", "parallel", "vectorized", "unrolled", "thread_binding")


@dataclass(eq=False, repr=False)
class For(Stmt):
    var: Var
    min: Expr
    extent: Expr
    kind: str
    body: Stmt
    thread_tag: str | None = None
    annotations: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False, repr=False)
class Seq(Stmt):
    stmts: list[Stmt]


@dataclass(eq=False, repr=False)
class IfThenElse(Stmt):
    cond: Expr
    then_case: Stmt
    else_case: Stmt | None = None


@dataclass(eq=False, repr=False)
class AttrStmt(Stmt):
    """An annotation around ``body`` (pragmas: key ``pragma_<name>``)."""

    key: str
    value: Any
    body: Stmt


@dataclass(eq=False, repr=False)
class LetStmt(Stmt):
    var: Var
    value: Expr
    body: Stmt


@dataclass(eq=False, repr=False)
class Evaluate(Stmt):
    value: Expr


@dataclass(eq=False, repr=False)
class PrimFunc:
    """A lowered function: parameters (Buffers and scalar Vars) and a body."""

    name: str
    params: list[Any]
    body: Stmt
    attrs: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return _node_str(self)

    __repr__ = __str__


def seq(*stmts: Stmt | None) -> Stmt:
    """Build a flat Seq, dropping Nones and merging nested Seqs; one statement stays itself."""
    out: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, Seq):
            out.extend(s.stmts)
        else:
            out.append(s)
    if len(out) == 1:
        return out[0]
    return Seq(out)


# ---------------------------------------------------------------------------- constructors


def make_const(value: Any, dtype: str) -> Expr:
    """A constant of ``dtype`` (scalar or vector: vectors give a Broadcast)."""
    dtype = dtypes.check(dtype)
    base, n = dtypes.split(dtype)
    if n > 1:
        return Broadcast(make_const(value, base), n, dtype)
    if dtypes.is_float(base):
        return FloatImm(float(value), base)
    if dtypes.is_bool(base):
        return IntImm(1 if value else 0, "bool")
    v = int(value)
    lo, hi = dtypes.min_value(base), dtypes.max_value(base)
    if not lo <= v <= hi:
        raise IRError(f"constant {v} does not fit in {base}")
    return IntImm(v, base)


def convert(value: Any) -> Expr:
    """Turn Python numbers (and IterVars) into expressions."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, ExprOp):
        return value._expr()
    if isinstance(value, bool):
        return IntImm(int(value), "bool")
    if isinstance(value, int):
        return IntImm(value, "int32" if -(2**31) <= value < 2**31 else "int64")
    if isinstance(value, float):
        return FloatImm(value, "float32")
    try:
        import numpy as np

        if isinstance(value, np.generic):
            return make_const(value.item(), value.dtype.name)
    except ImportError:  # pragma: no cover
        pass
    raise IRError(f"cannot use {value!r} ({type(value).__name__}) as an expression")


def _convert_pair(a: Any, b: Any) -> tuple[Expr, Expr]:
    """Convert operands; a Python number takes the dtype of the expression beside it."""
    a_py = not isinstance(a, ExprOp)
    b_py = not isinstance(b, ExprOp)
    if a_py and not b_py:
        b = convert(b)
        return _py_const(a, b.dtype), b
    if b_py and not a_py:
        a = convert(a)
        return a, _py_const(b, a.dtype)
    return convert(a), convert(b)


def _py_const(v: Any, other: str) -> Expr:
    base = dtypes.scalar(other)
    if isinstance(v, float) and not dtypes.is_float(base):
        return FloatImm(v, "float32")
    if isinstance(v, bool | int | float):
        if dtypes.is_bool(base):
            return convert(v)
        try:
            return make_const(v, base)
        except IRError:
            return convert(v)
    return convert(v)


def _match(a: Expr, b: Expr) -> tuple[Expr, Expr]:
    ta, tb = dtypes.split(a.dtype), dtypes.split(b.dtype)
    if ta[1] != tb[1]:
        if ta[1] == 1:
            a = Broadcast(a, tb[1], dtypes.with_lanes(a.dtype, tb[1]))
        elif tb[1] == 1:
            b = Broadcast(b, ta[1], dtypes.with_lanes(b.dtype, ta[1]))
        else:
            raise IRError(f"vector lanes differ: {a.dtype} vs {b.dtype}")
    t = dtypes.promote(ta[0], tb[0])
    n = max(ta[1], tb[1])
    full = dtypes.with_lanes(t, n)
    if a.dtype != full:
        a = Cast(full, a)
    if b.dtype != full:
        b = Cast(full, b)
    return a, b


def binary(op: str, a: Any, b: Any) -> Expr:
    """Build ``a <op> b`` with dtype promotion."""
    a, b = _convert_pair(a, b)
    a, b = _match(a, b)
    if dtypes.is_bool(a.dtype) and op not in ("min", "max"):
        a, b = (
            Cast(dtypes.with_lanes("int32", dtypes.lanes(a.dtype)), a),
            Cast(dtypes.with_lanes("int32", dtypes.lanes(b.dtype)), b),
        )
    if op == "div" and not dtypes.is_float(a.dtype):
        raise IRError(
            f"'/' on integers ({a} / {b}) is ambiguous: use '//' or te.floordiv for floor division, "
            "te.truncdiv for C division, or cast to a float type first"
        )
    if op in ("floordiv", "floormod", "truncdiv", "truncmod") and not dtypes.is_float(a.dtype):
        d = b.value if isinstance(b, Broadcast) else b
        if isinstance(d, Cast):
            d = d.value
        if isinstance(d, IntImm) and d.value == 0:
            sym = {"floordiv": "//", "floormod": "%", "truncdiv": "truncdiv", "truncmod": "truncmod"}[op]
            raise ZeroDivisorError(f"integer division by the constant 0: {a} {sym} {b}")
    if op in ("floordiv", "floormod", "truncdiv", "truncmod") and dtypes.is_float(a.dtype):
        if op == "floordiv":
            return Call("floor", [BinOp("div", a, b, a.dtype)], a.dtype)
        if op == "floormod":
            return BinOp(
                "sub", a, BinOp("mul", b, Call("floor", [BinOp("div", a, b, a.dtype)], a.dtype), a.dtype), a.dtype
            )
        raise IRError(f"{op} needs integer operands, got {a.dtype}")
    return BinOp(op, a, b, a.dtype)


def shift(name: str, a: Any, b: Any) -> Expr:
    """``a >> b`` (``shift_right``, arithmetic for signed types) or ``a << b`` (``shift_left``) on integers."""
    a, b = _convert_pair(a, b)
    for x in (a, b):
        if not dtypes.is_int(x.dtype):
            raise IRError(f"{name}: operands must be integers, got {x} of type {x.dtype}")
    if b.dtype != a.dtype:
        b = Cast(a.dtype, b)
    return Call(name, [a, b], a.dtype)


def compare(op: str, a: Any, b: Any) -> Expr:
    a, b = _convert_pair(a, b)
    a, b = _match(a, b)
    return Cmp(op, a, b, dtypes.with_lanes("bool", dtypes.lanes(a.dtype)))


def as_bool(e: Any) -> Expr:
    e = convert(e)
    if dtypes.is_bool(e.dtype):
        return e
    return compare("ne", e, make_const(0, e.dtype))


def logic(op: str, a: Any, b: Any) -> Expr:
    a, b = as_bool(a), as_bool(b)
    return Logic(op, a, b, a.dtype if dtypes.lanes(a.dtype) > 1 else b.dtype)
