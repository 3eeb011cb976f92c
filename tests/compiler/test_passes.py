"""Each loop-IR pass on its own: simplify, storage_flatten, vectorize, unroll, and lower's trace."""

from __future__ import annotations

from vdla.compiler import lower, te
from vdla.compiler.schedule.loop_nest import schedule_to_stmt
from vdla.compiler.tir.nodes import (
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    IfThenElse,
    IntImm,
    Ramp,
    Seq,
    Var,
    make_const,
)
from vdla.compiler.tir.passes import simplify, simplify_expr, storage_flatten, unroll, vectorize
from vdla.compiler.tir.printer import to_str
from vdla.compiler.tir.visitor import walk


def test_constant_folding() -> None:
    assert simplify_expr(te.const(3) * 4 + 2).value == 14
    assert simplify_expr(te.const(7) // -2).value == -4  # floor semantics
    assert simplify_expr(te.floormod(te.const(-7), 3)).value == 2
    assert simplify_expr(te.truncdiv(te.const(-7), 2)).value == -3
    assert simplify_expr(te.const(2.5, "float32") * 2.0).value == 5.0
    assert simplify_expr(te.const(127, "int8") + 1).value == -128  # int8 wraps
    assert simplify_expr(te.const(3.7, "float32").astype("int32")).value == 3


def test_canonical_linear_form() -> None:
    i, j = te.var("i"), te.var("j")
    e = (i + j) * 4 - j * 4 + 3 - i
    assert to_str(simplify_expr(e)) == "((i * 3) + 3)"
    assert to_str(simplify_expr(i - i)) == "0"
    assert to_str(simplify_expr((i + 1) * 2 - 2)) == "(i * 2)"


def test_floordiv_with_ranges() -> None:
    io, ii = te.var("io"), te.var("ii")
    ranges = {io: (0, 15), ii: (0, 7)}
    e = (io * 8 + ii) // 8
    assert to_str(simplify_expr(e, ranges)) == "io"
    assert to_str(simplify_expr(te.floormod(io * 8 + ii, 8), ranges)) == "ii"
    assert to_str(simplify_expr((io * 8 + ii + 16) // 8, ranges)) == "(io + 2)"
    # unknown range: kept
    x = te.var("x")
    assert "floordiv" in to_str(simplify_expr((x * 8 + ii) // 3))


def test_provable_comparisons() -> None:
    i = te.var("i")
    ranges = {i: (0, 9)}
    assert simplify_expr(i < 10, ranges).value == 1
    assert simplify_expr(i >= 10, ranges).value == 0
    assert isinstance(simplify_expr(i < 5, ranges), type(i < 5))
    assert to_str(simplify_expr(te.min(i, 20), ranges)) == "i"


def _loop(var: Var, ext: int, body, kind: str = "serial") -> For:  # type: ignore[no-untyped-def]
    return For(var, make_const(0, "int32"), make_const(ext, "int32"), kind, body)


def test_simplify_removes_dead_guard_and_unit_loop() -> None:
    buf = Buffer("A", "float32", [make_const(16, "int32")])
    i, j = Var("i"), Var("j")
    store = BufferStore(buf, i + j, make_const(1.0, "float32"))
    stmt = _loop(i, 8, _loop(j, 1, IfThenElse(i < 8, store)))
    out = simplify(stmt)
    assert isinstance(out, For) and isinstance(out.body, BufferStore)
    assert to_str(out.body.index) == "i"
    assert to_str(simplify(_loop(i, 0, store))) == ""


def test_storage_flatten_offsets_region() -> None:
    A = te.placeholder((6, 10), name="A")
    B = te.compute((6, 10), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((6, 10), lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    stmt = schedule_to_stmt(s, [A, C])
    text = to_str(stmt)
    assert "realize B[i:1, 0:10]" in text
    bufs = {t: Buffer(t.name, t.dtype, list(t.shape)) for t in (A, C)}
    flat = simplify(storage_flatten(stmt, bufs))
    text = to_str(flat)
    assert "allocate B[float32 * 1, 10]" in text
    assert "B[j] = (A[((i * 10) + j)] + 1.0f)" in text


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


def test_unroll_copies() -> None:
    buf = Buffer("A", "int32", [make_const(4, "int32")])
    i = Var("i")
    out = unroll(_loop(i, 4, BufferStore(buf, i, i * 3), "unrolled"))
    assert isinstance(out, Seq) and len(out.stmts) == 4
    assert [s.value.value for s in out.stmts] == [0, 3, 6, 9]  # type: ignore[union-attr]


def test_lower_prints_each_pass(capsys) -> None:  # type: ignore[no-untyped-def]
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    s[B].vectorize(xi)
    f = lower(s, [A, B], print_passes=True)
    out = capsys.readouterr().out
    for name in ("schedule_ops", "storage_flatten", "simplify", "vectorize", "unroll"):
        assert f"after {name}" in out
    text = str(f)
    assert text.startswith("primfn main(A: float32[10], B: float32[10])")
    # the non-divisible split keeps a guard; the guarded vector loop falls back to a hinted scalar loop
    assert "if (((i.outer * 4) + i.inner) < 10)" in text


def test_non_divisible_split_guard_removed_when_exact() -> None:
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4)
    assert " if " not in str(lower(s, [A, B]))
    assert all(not isinstance(n, IfThenElse) for n in walk(lower(s, [A, B]).body))
    assert IntImm(1).value == 1
