"""The ``tvm.tir`` functions TVM programs call: extern and intrinsic calls, index arithmetic,
constants (``IntImm``/``FloatImm`` in TVM's argument order), buffers.

    tir.call_extern("int32", "gemv_update", cc.access_ptr("w"), aa.access_ptr("r"), m)
    tir.indexmod(y, bn); tir.indexdiv(y, bn); tir.const(1, "int8")
    Ab = tir.decl_buffer(a.shape, a.dtype, name="A")

``call_packed`` (a Python function registered with ``vdla.register_func``) is
:class:`CallPacked`; the CPU target turns it into a call back into Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import dtypes
from . import nodes as _nodes
from .nodes import Buffer, Call, CallExtern, Expr, IRError, binary, convert, make_const, shift

__all__ = [
    "call_extern", "call_pure_extern", "call_intrin", "call_packed", "CallPacked", "indexdiv", "indexmod",
    "floordiv", "floormod", "truncdiv", "truncmod", "const", "decl_buffer", "shift_right", "shift_left", "IntImm",
    "FloatImm",
]


def call_extern(dtype: str, func_name: str, *args: Any) -> Expr:
    """A call of the external C function ``func_name`` returning ``dtype`` (``"void"`` or ``"int32"`` ...)."""
    if not isinstance(func_name, str) or not func_name:
        raise IRError(f"call_extern: the function name must be a string, got {func_name!r}")
    return CallExtern(func_name, [convert(a) for a in args], dtype)


def call_pure_extern(dtype: str, func_name: str, *args: Any) -> Expr:
    """Like :func:`call_extern` (purity is TVM's hint for its optimiser; here every call is kept)."""
    return call_extern(dtype, func_name, *args)


#: TVM intrinsic names -> this IR's math calls (operands and result of ``dtype``)
_INTRINSICS = {"exp", "log", "sqrt", "tanh", "floor", "ceil", "fabs", "pow", "exp2", "log2"}


def call_intrin(dtype: str, func_name: str, *args: Any) -> Expr:
    """A built-in intrinsic by TVM name (``"tir.exp"``, ``"tir.shift_right"``, ``"tir.call_extern"`` ...)."""
    name = func_name[4:] if func_name.startswith("tir.") else func_name
    if name in ("shift_right", "shift_left"):
        return shift(name, *args)
    if name in ("call_extern", "call_pure_extern"):
        return call_extern(dtype, *args)
    if name in _INTRINSICS:
        if not dtypes.is_float(dtype):
            raise IRError(f"call_intrin: {func_name} needs a float dtype, got {dtype}")
        return Call(name, [convert(a).astype(dtype) for a in args], dtype)
    from .op_registry import is_registered

    if is_registered(f"tir.{name}"):  # a user's operator (register_op_attr / register_intrin_lowering)
        return Call(name, [convert(a) for a in args], dtype)
    raise IRError(
        f"call_intrin: unknown intrinsic {func_name!r}; known: "
        f"{', '.join(sorted(_INTRINSICS | {'shift_right', 'shift_left', 'call_extern'}))}"
    )


@dataclass(eq=False, repr=False)
class CallPacked(Expr):
    """A call of the packed function ``name`` (``vdla.register_func``) with buffers and scalars."""

    name: str
    args: list[Any]  # Buffer objects (whole arrays) and Exprs (scalars)
    dtype: str = "int32"


def call_packed(func_name: str, *args: Any) -> Expr:
    """Call the registered function ``func_name`` with buffers (it sees them as NDArrays) and scalars."""
    if not isinstance(func_name, str) or not func_name:
        raise IRError(f"call_packed: the function name must be a string, got {func_name!r}")
    conv: list[Any] = []
    for k, a in enumerate(args):
        if isinstance(a, Buffer):
            conv.append(a)
            continue
        try:
            conv.append(convert(a))
        except IRError:
            raise IRError(f"call_packed({func_name!r}): argument {k} ({a!r}) is neither a buffer nor a scalar") from None
    return CallPacked(func_name, conv)


def indexdiv(a: Any, b: Any) -> Expr:
    """Index division (floor division for the non-negative indices it is used on)."""
    return binary("floordiv", a, b)


def indexmod(a: Any, b: Any) -> Expr:
    return binary("floormod", a, b)


def floordiv(a: Any, b: Any) -> Expr:
    """Floor division (rounds toward minus infinity); a divisor 0 at run time gives 0 on llvm and cuda (:mod:`.division`)."""
    return binary("floordiv", a, b)


def floormod(a: Any, b: Any) -> Expr:
    """The remainder of floordiv (the divisor's sign); a divisor 0 at run time gives 0 on llvm and cuda (:mod:`.division`)."""
    return binary("floormod", a, b)


def truncdiv(a: Any, b: Any) -> Expr:
    """C division (rounds toward zero); a divisor 0 at run time gives 0 on llvm and cuda (:mod:`.division`)."""
    return binary("truncdiv", a, b)


def truncmod(a: Any, b: Any) -> Expr:
    """The remainder of truncdiv (the dividend's sign); a divisor 0 at run time gives 0 on llvm and cuda (:mod:`.division`)."""
    return binary("truncmod", a, b)


def shift_right(a: Any, b: Any) -> Expr:
    """Arithmetic shift right (VDLA's ALU SHR); numpy: ``a >> b``. The same as ``a >> b`` on expressions."""
    return shift("shift_right", a, b)


def shift_left(a: Any, b: Any) -> Expr:
    """Shift left (VDLA's ALU SHR by a negative amount); numpy: ``a << b``."""
    return shift("shift_left", a, b)


def const(value: Any, dtype: str | None = None) -> Expr:
    """A constant (int32 for ints, float32 for floats unless ``dtype`` says otherwise)."""
    if dtype is None:
        return convert(value)
    return make_const(value, dtype)


class _ConstMeta(type):
    """``isinstance(x, tir.IntImm)`` is ``isinstance(x, nodes.IntImm)``."""

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, cls._node)  # type: ignore[attr-defined]


class IntImm(metaclass=_ConstMeta):
    """TVM's argument order, ``tir.IntImm("int32", 3)`` (the IR node takes value first)."""

    _node = _nodes.IntImm

    def __new__(cls, dtype: str, value: int) -> Expr:  # type: ignore[misc]
        return make_const(value, dtype)


class FloatImm(metaclass=_ConstMeta):
    """TVM's argument order, ``tir.FloatImm("float32", 0.5)``."""

    _node = _nodes.FloatImm

    def __new__(cls, dtype: str, value: float) -> Expr:  # type: ignore[misc]
        return make_const(value, dtype)


def decl_buffer(shape: Any, dtype: str = "float32", name: str = "buffer", data: Any = None, strides: Any = None,
                elem_offset: Any = None, scope: str = "", data_alignment: int = -1, offset_factor: int = 0,
                buffer_type: str = "", axis_separators: Any = None, span: Any = None) -> Buffer:
    """A buffer of ``shape`` and ``dtype`` (row-major). ``strides``, ``elem_offset`` and ``offset_factor``
    describe how TVM may place a tensor region in it; vdla passes the actual region (its strides and
    offset are then known), so they are accepted and need not be given."""
    shp = [shape] if isinstance(shape, int | Expr) else list(shape)
    return Buffer(name, dtypes.check(dtype), [convert(s) for s in shp], scope or "global")
