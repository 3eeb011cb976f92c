"""Storage flattening: multi-dimensional tensor accesses become flat buffer accesses.

``ProducerRealize(T, [(min, extent), ...])`` becomes an ``Allocate`` of a row-major buffer
of the realized extents; accesses subtract the region's minimum.  Tensors bound to
function arguments use the argument's full shape. An extern op's body (``te.extern``)
uses flat buffers that stand for whole tensors; ``extern_buffer_bind`` attributes name the
tensor of each, and its accesses move to that tensor's buffer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..nodes import (
    Allocate,
    AttrStmt,
    BinOp,
    Buffer,
    BufferLoad,
    BufferStore,
    ElemOffset,
    Expr,
    IntImm,
    ProducerRealize,
    ProducerStore,
    Stmt,
    TensorRead,
    TensorStride,
    make_const,
)
from ..visitor import map_children
from .double_buffer import DOUBLE_BUFFER_SCOPE
from .simplify import simplify_expr


class FlattenError(ValueError):
    pass


def _strides(shape: list[Expr]) -> list[Expr]:
    out: list[Expr] = []
    acc: Expr = make_const(1, "int32")
    for s in reversed(shape):
        out.append(acc)
        acc = simplify_expr(BinOp("mul", acc, s.astype("int32"), "int32"))
    return list(reversed(out))


def _index_dtype(shape: list[Expr]) -> str:
    total = 1
    for s in shape:
        if not isinstance(s, IntImm):
            return "int32"
        total *= s.value
    return "int32" if total < 2**31 else "int64"


class _Flattener:
    def __init__(self, binds: dict[Any, Buffer]) -> None:
        self.alias: dict[Buffer, Buffer] = {}  # extern-op buffer -> the buffer of its tensor
        self.env: dict[Any, tuple[Buffer, list[Expr], list[Expr], str]] = {}
        for t, buf in binds.items():
            zeros = [make_const(0, "int32") for _ in buf.shape]
            self.env[t] = (buf, zeros, _strides(buf.shape), _index_dtype(buf.shape))

    def flat_index(self, tensor: Any, indices: list[Expr]) -> tuple[Buffer, Expr]:
        if tensor not in self.env:
            raise FlattenError(f"tensor {tensor.name!r} is used outside the scope where it is stored")
        buf, mins, strides, idt = self.env[tensor]
        acc: Expr | None = None
        for ix, mn, st in zip(indices, mins, strides, strict=True):
            ix = ix.astype(idt)
            term = BinOp("mul", BinOp("sub", ix, mn.astype(idt), idt), st.astype(idt), idt)
            acc = term if acc is None else BinOp("add", acc, term, idt)
        if acc is None:
            acc = make_const(0, idt)
        return buf, simplify_expr(acc)

    def _bind_extern(self, n: AttrStmt) -> Stmt:
        ph, tensor = n.value
        if tensor not in self.env:
            raise FlattenError(f"extern op buffer {ph.name!r}: tensor {tensor.name!r} is not stored here")
        buf, mins, _, _ = self.env[tensor]
        if any(not (isinstance(m, IntImm) and m.value == 0) for m in mins) or len(buf.shape) != len(ph.shape):
            raise FlattenError(f"extern op buffer {ph.name!r}: tensor {tensor.name!r} is not stored whole")
        self.alias[ph] = buf
        try:
            return self.node(n.body)
        finally:
            del self.alias[ph]

    def node(self, n: Any) -> Any:
        if isinstance(n, AttrStmt) and n.key == "extern_buffer_bind":
            return self._bind_extern(n)
        if isinstance(n, AttrStmt) and n.key == DOUBLE_BUFFER_SCOPE and n.value[0] in self.env:
            t, loop_var = n.value  # the stage's tensor -> its buffer
            return AttrStmt(n.key, (self.env[t][0], loop_var), self.node(n.body))
        if self.alias and isinstance(n, BufferLoad | BufferStore):
            n2 = map_children(n, self.node)
            b = self.alias.get(n2.buffer)
            return n2 if b is None else dataclasses.replace(n2, buffer=b)
        if self.alias and hasattr(n, "args") and any(isinstance(a, Buffer) for a in getattr(n, "args", ())):
            n2 = map_children(n, self.node)  # call_packed: buffers among the arguments
            return dataclasses.replace(n2, args=[self.alias.get(a, a) if isinstance(a, Buffer) else a for a in n2.args])
        if isinstance(n, TensorStride):
            if n.tensor not in self.env:
                raise FlattenError(f"stride of tensor {n.tensor.name!r} requested outside the scope where it is stored")
            return self.env[n.tensor][2][n.dim]
        if isinstance(n, ElemOffset):
            v = self.node(n.value)
            if not isinstance(v, BufferLoad):
                raise FlattenError(f"elem_offset needs a tensor element, got {v}")
            return v.index
        if isinstance(n, TensorRead):
            n2 = map_children(n, self.node)
            buf, idx = self.flat_index(n2.tensor, n2.indices)
            return BufferLoad(buf, idx, n2.dtype)
        if isinstance(n, ProducerStore):
            n2 = map_children(n, self.node)
            buf, idx = self.flat_index(n2.tensor, n2.indices)
            return BufferStore(buf, idx, n2.value)
        if isinstance(n, ProducerRealize):
            t = n.tensor
            mins = [simplify_expr(m) for m, _ in n.bounds]
            exts = [simplify_expr(e) for _, e in n.bounds]
            buf = Buffer(t.name, t.dtype, exts, n.scope)
            saved = self.env.get(t)
            self.env[t] = (buf, mins, _strides(exts), _index_dtype(exts))
            body = self.node(n.body)
            if saved is None:
                del self.env[t]
            else:
                self.env[t] = saved
            return Allocate(buf, body)
        return map_children(n, self.node)


def storage_flatten(stmt: Stmt, binds: dict[Any, Buffer]) -> Stmt:
    """Flatten tensor accesses in ``stmt``; ``binds`` maps argument tensors to their buffers."""
    return _Flattener(binds).node(stmt)
