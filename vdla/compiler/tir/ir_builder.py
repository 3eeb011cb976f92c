"""``ir_builder``: write loop IR imperatively, as TVM's ``tvm.tir.ir_builder`` (extern-op and
tensor-intrinsic bodies)::

    ib = tir.ir_builder.create()
    a, c = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
    with ib.for_range(0, n, name="i") as i:
        with ib.if_scope(a[i] > 0):
            c[i] = a[i] + 1
        with ib.else_scope():
            c[i] = 0
    body = ib.get()
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from . import dtypes
from .nodes import (
    Allocate,
    AttrStmt,
    Buffer,
    Evaluate,
    Expr,
    For,
    IfThenElse,
    IRError,
    LetStmt,
    Stmt,
    Var,
    as_bool,
    convert,
    seq,
)

__all__ = ["IRBuilder", "BufferPtr", "create"]

_Item = Stmt | Callable[[Stmt], Stmt]  # a statement, or a wrapper of everything after it


class BufferPtr:
    """Element access of a buffer: ``p[i]`` reads, ``p[i] = v`` writes (flat or per-dimension index)."""

    def __init__(self, builder: IRBuilder, buffer: Buffer) -> None:
        self._builder = builder
        self.buffer = buffer
        self.dtype = buffer.dtype

    def __getitem__(self, index: Any) -> Expr:
        return self.buffer.vload(index)

    def __setitem__(self, index: Any, value: Any) -> None:
        self._builder.emit(self.buffer.vstore(index, value))

    def access_ptr(self, *args: Any, **kw: Any) -> Expr:
        return self.buffer.access_ptr(*args, **kw)

    def asobject(self) -> Buffer:
        return self.buffer


class IRBuilder:
    def __init__(self) -> None:
        self._stack: list[list[_Item]] = [[]]
        self._last_if: IfThenElse | None = None
        self._count = 0

    # -- statements
    def emit(self, stmt: Any) -> None:
        """Append a statement (an expression is evaluated for its effect, e.g. an extern call)."""
        if callable(stmt) and not isinstance(stmt, Stmt | Expr):
            self._stack[-1].append(stmt)
            return
        if isinstance(stmt, Expr):
            stmt = Evaluate(stmt)
        if not isinstance(stmt, Stmt):
            raise IRError(f"ir_builder.emit: expected a statement or an expression, got {stmt!r}")
        self._stack[-1].append(stmt)
        self._last_if = None

    def _pop(self) -> Stmt:
        items = self._stack.pop()
        body: Stmt = seq()
        for it in reversed(items):
            if isinstance(it, Stmt):
                body = seq(it, body) if not _empty(body) else it
            else:
                body = it(body)
        return body

    def get(self) -> Stmt:
        """The statement built so far."""
        if len(self._stack) != 1:
            raise IRError("ir_builder.get: a scope (for_range / if_scope ...) is still open")
        body = self._pop()
        self._stack.append([body])
        return body

    # -- scopes
    @contextmanager
    def for_range(self, begin: Any, end: Any, name: str = "i", dtype: str = "int32",
                  kind: str = "serial") -> Iterator[Var]:
        """A loop ``for name in [begin, end)`` (``kind``: serial, parallel, vectorize, unroll)."""
        if name == "i" and self._count:
            name = f"i{self._count}"
        self._count += 1
        v = Var(name, dtypes.check(dtype))
        b = convert(begin)
        ext = convert(end) - b
        loop_kind = {"vectorize": "vectorized", "unroll": "unrolled"}.get(kind, kind)
        self._stack.append([])
        yield v
        body = self._pop()
        self.emit(For(v, b, ext, loop_kind, body))

    @contextmanager
    def if_scope(self, cond: Any) -> Iterator[None]:
        self._stack.append([])
        yield
        node = IfThenElse(as_bool(cond), self._pop())
        self.emit(node)
        self._last_if = node

    @contextmanager
    def else_scope(self) -> Iterator[None]:
        node = self._last_if
        if node is None or node.else_case is not None:
            raise IRError("ir_builder.else_scope must follow an if_scope")
        self._stack.append([])
        yield
        node.else_case = self._pop()
        self._last_if = None

    @contextmanager
    def new_scope(self) -> Iterator[None]:
        self._stack.append([])
        yield
        self.emit(self._pop())

    def scope_attr(self, node: Any, attr_key: str, value: Any) -> None:
        """Annotate everything emitted after this in the current scope."""
        self.emit(lambda body: AttrStmt(attr_key, value, body))

    def let(self, name: str, value: Any) -> Var:
        e = convert(value)
        v = Var(name, e.dtype)
        self.emit(lambda body: LetStmt(v, e, body))
        return v

    # -- memory
    def allocate(self, dtype: str, shape: Any, name: str = "buf", scope: str = "global") -> BufferPtr:
        """A temporary buffer for the rest of the current scope."""
        shp = [shape] if isinstance(shape, int | Expr) else list(shape)
        buf = Buffer(name, dtypes.check(dtype), [convert(s) for s in shp], scope)
        self.emit(lambda body: Allocate(buf, body))
        return BufferPtr(self, buf)

    def buffer_ptr(self, buf: Any, shape: Any = None) -> BufferPtr:
        if not isinstance(buf, Buffer):
            raise IRError(f"ir_builder.buffer_ptr: expected a buffer (tir.decl_buffer or an extern's argument), "
                          f"got {buf!r}")
        return BufferPtr(self, buf)


def _empty(s: Stmt) -> bool:
    from .nodes import Seq

    return isinstance(s, Seq) and not s.stmts


def create() -> IRBuilder:
    return IRBuilder()
