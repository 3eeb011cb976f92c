"""Each loop-IR pass on its own: simplify, storage_flatten, vectorize, unroll, and lower's trace."""
from __future__ import annotations

from vdla.compiler.tir.nodes import (
    Buffer,
    BufferStore,
    For,
    Seq,
    Var,
    make_const,
)
from vdla.compiler.tir.passes import unroll


def _loop(var: Var, ext: int, body, kind: str = "serial") -> For:  # type: ignore[no-untyped-def]
    return For(var, make_const(0, "int32"), make_const(ext, "int32"), kind, body)


def test_unroll_copies() -> None:
    buf = Buffer("A", "int32", [make_const(4, "int32")])
    i = Var("i")
    out = unroll(_loop(i, 4, BufferStore(buf, i, i * 3), "unrolled"))
    assert isinstance(out, Seq) and len(out.stmts) == 4
    assert [s.value.value for s in out.stmts] == [0, 3, 6, 9]  # type: ignore[union-attr]
