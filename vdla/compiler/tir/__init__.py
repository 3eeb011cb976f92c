"""The loop IR (TVM's TIR): what schedules lower to and targets generate code from.

Modules: :mod:`.nodes` (expression and statement nodes as plain dataclasses,
``PrimFunc``), :mod:`.dtypes` (the scalar types), :mod:`.visitor` (walk, map and
substitute), :mod:`.printer` (readable text of any node), :mod:`.arith` (linear forms
and bounds the simplifier and the lowering passes reason with), :mod:`.passes`
(IR -> IR functions: flatten, simplify, vectorize, virtual threads, unroll),
:mod:`.op` (the ``tvm.tir`` functions: call_extern, call_packed, indexmod, decl_buffer,
``IntImm``/``FloatImm`` in TVM's argument order ...), :mod:`.scalar` (selection, math calls
and limits: ``tir.exp``, ``tir.if_then_else``, ``tir.max_value`` ..., which ``te`` re-exports),
:mod:`.ir_builder` (imperative IR for extern ops and intrinsics) and :mod:`.division` (what each
target does with an integer division by zero; the warning ``vdla.build`` gives about it).

TVM programs reach these as ``vdla.tir.X``; a TVM name vdla does not have (``tir.Schedule``)
says what to use instead (:data:`vdla.compat.aliases.UNSUPPORTED`).
"""

from __future__ import annotations

from ...compat.aliases import module_getattr
from . import ir_builder
from .nodes import (
    Buffer,
    Call,
    Cast,
    Evaluate,
    Expr,
    IfThenElse,
    PrimFunc,
    Select,
    Stmt,
    Var,
)
from .op import (
    CallPacked,
    FloatImm,
    IntImm,
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
from .op_registry import CallEffectKind
from .scalar import (
    abs,
    all,
    any,
    ceil,
    exp,
    floor,
    if_then_else,
    log,
    max_value,
    min_value,
    power,
    select,
    sigmoid,
    sqrt,
    tanh,
)

SizeVar = Var
PrimExpr = Expr

__getattr__ = module_getattr(__name__)  # TVM's names vdla does not have: an error that says what to use

# Only the nodes whose constructors take TVM's arguments in TVM's order are exported here
# (BufferLoad, BufferStore, For, AttrStmt and Call differ: build those with ir_builder; Call is
# exported for isinstance checks, as an intrinsic lowering rule makes, built with call_intrin).
__all__ = [
    "ir_builder", "Buffer", "Call", "CallEffectKind", "Cast", "Evaluate", "Expr", "FloatImm", "IfThenElse", "IntImm", "PrimFunc", "Select",
    "Stmt", "Var", "SizeVar", "PrimExpr", "CallPacked",
    "call_extern", "call_intrin", "call_packed", "call_pure_extern", "const", "decl_buffer", "floordiv", "floormod",
    "indexdiv", "indexmod", "shift_left", "shift_right", "truncdiv", "truncmod",
    # TVM's scalar helpers (te re-exports them, as TVM's te does tir's)
    "abs", "all", "any", "ceil", "exp", "floor", "if_then_else", "log", "max_value", "min_value", "power", "select",
    "sigmoid", "sqrt", "tanh",
]
