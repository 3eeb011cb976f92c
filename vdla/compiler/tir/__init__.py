"""The loop IR (TVM's TIR): what schedules lower to and targets generate code from.

Modules: :mod:`.nodes` (expression and statement nodes as plain dataclasses,
``PrimFunc``), :mod:`.dtypes` (the scalar types), :mod:`.visitor` (walk, map and
substitute), :mod:`.printer` (readable text of any node), :mod:`.arith` (linear forms
and bounds the simplifier and the lowering passes reason with), :mod:`.passes`
(IR -> IR functions: flatten, simplify, vectorize, virtual threads, unroll),
:mod:`.op` (the ``tvm.tir`` functions: call_extern, call_packed, indexmod, decl_buffer ...)
and :mod:`.ir_builder` (imperative IR for extern ops and intrinsics).

TVM programs reach these as ``vdla.tir.X``; the math helpers TVM also has here
(``tir.exp``, ``tir.if_then_else``, ``tir.max_value`` ...) are te's, looked up on first use.
"""

from __future__ import annotations

from typing import Any

from . import ir_builder
from . import nodes as _nodes
from .nodes import (
    Buffer,
    Cast,
    Evaluate,
    Expr,
    IfThenElse,
    PrimFunc,
    Select,
    Stmt,
    Var,
    make_const,
)
from .op import (
    CallPacked,
    call_extern,
    call_intrin,
    call_packed,
    call_pure_extern,
    const,
    decl_buffer,
    floordiv,
    floormod,
    indexdiv,
    indexmod,
    shift_left,
    shift_right,
    truncdiv,
    truncmod,
)

SizeVar = Var
PrimExpr = Expr


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


_TE_NAMES = {"exp", "log", "sqrt", "tanh", "sigmoid", "abs", "power", "floor", "ceil", "if_then_else", "all", "any",
             "max_value", "min_value", "select"}


def __getattr__(name: str) -> Any:
    if name in _TE_NAMES:  # te builds on tir, so these are found lazily
        import importlib

        value = getattr(importlib.import_module("..te.intrinsics", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Only the nodes whose constructors take TVM's arguments in TVM's order are exported here
# (BufferLoad, BufferStore, For, AttrStmt and Call differ: build those with ir_builder).
__all__ = [
    "ir_builder", "Buffer", "Cast", "Evaluate", "Expr", "FloatImm", "IfThenElse", "IntImm", "PrimFunc", "Select",
    "Stmt", "Var", "SizeVar", "PrimExpr", "CallPacked",
    "call_extern", "call_intrin", "call_packed", "call_pure_extern", "const", "decl_buffer", "floordiv", "floormod",
    "indexdiv", "indexmod", "shift_left", "shift_right", "truncdiv", "truncmod",
]
