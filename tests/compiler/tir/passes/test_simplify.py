"""Each loop-IR pass on its own: simplify, storage_flatten, vectorize, unroll, and lower's trace."""
from __future__ import annotations

from vdla.compiler import lower, te
from vdla.compiler.tir.nodes import (
    Buffer,
    BufferStore,
    For,
    IfThenElse,
    IntImm,
    Var,
    make_const,
)
from vdla.compiler.tir.passes import simplify, simplify_expr
from vdla.compiler.tir.printer import to_str
from vdla.compiler.tir.visitor import walk


def _loop(var: Var, ext: int, body, kind: str = "serial") -> For:  # type: ignore[no-untyped-def]
    return For(var, make_const(0, "int32"), make_const(ext, "int32"), kind, body)


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


def test_simplify_removes_dead_guard_and_unit_loop() -> None:
    buf = Buffer("A", "float32", [make_const(16, "int32")])
    i, j = Var("i"), Var("j")
    store = BufferStore(buf, i + j, make_const(1.0, "float32"))
    stmt = _loop(i, 8, _loop(j, 1, IfThenElse(i < 8, store)))
    out = simplify(stmt)
    assert isinstance(out, For) and isinstance(out.body, BufferStore)
    assert to_str(out.body.index) == "i"
    assert to_str(simplify(_loop(i, 0, store))) == ""


def test_non_divisible_split_guard_removed_when_exact() -> None:
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4)
    assert " if " not in str(lower(s, [A, B]))
    assert all(not isinstance(n, IfThenElse) for n in walk(lower(s, [A, B]).body))
    assert IntImm(1).value == 1
