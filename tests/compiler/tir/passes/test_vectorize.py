"""Each loop-IR pass on its own: simplify, storage_flatten, vectorize, unroll, and lower's trace."""
from __future__ import annotations

from vdla.compiler.tir.nodes import (
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    Ramp,
    Var,
    make_const,
)
from vdla.compiler.tir.passes import simplify, vectorize
from vdla.compiler.tir.printer import to_str
from vdla.compiler.tir.visitor import walk


def _loop(var: Var, ext: int, body, kind: str = "serial") -> For:  # type: ignore[no-untyped-def]
    return For(var, make_const(0, "int32"), make_const(ext, "int32"), kind, body)


def test_vectorize_contiguous_and_fallback() -> None:
    buf_a = Buffer("A", "float32", [make_const(64, "int32")])
    buf_b = Buffer("B", "float32", [make_const(64, "int32")])
    i, j = Var("i"), Var("j")
    body = BufferStore(buf_b, i * 8 + j, BufferLoad(buf_a, i * 8 + j, "float32") * 2.0)
    out = simplify(vectorize(_loop(i, 8, _loop(j, 8, body, "vectorized"))))
    stores = [n for n in walk(out) if isinstance(n, BufferStore)]
    assert isinstance(stores[0].index, Ramp) and stores[0].value.dtype == "float32x8"
    assert to_str(stores[0].index) == "ramp((i * 8), 1, 8)"
    # a reduction into one address cannot be vectorized: stays a loop with a hint
    red = BufferStore(buf_b, i, BufferLoad(buf_b, i, "float32") + BufferLoad(buf_a, j, "float32"))
    out2 = vectorize(_loop(i, 8, _loop(j, 8, red, "vectorized")))
    inner = out2.body
    assert isinstance(inner, For) and inner.kind == "serial" and inner.annotations.get("vectorize_hint")
