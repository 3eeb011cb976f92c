"""Property tests: random shapes and split factors (hypothesis), compared with numpy."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vdla.compiler import lower, te
from vdla.compiler.tir.passes import simplify_expr


def _eval(e, env):  # type: ignore[no-untyped-def]
    from vdla.compiler.tir.nodes import BinOp, IntImm, Var

    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        return env[e]
    assert isinstance(e, BinOp), e
    a, b = _eval(e.a, env), _eval(e.b, env)
    return {
        "add": lambda: a + b,
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "floordiv": lambda: a // b,
        "floormod": lambda: a % b,
        "truncdiv": lambda: int(a / b),
        "truncmod": lambda: a - b * int(a / b),
        "min": lambda: min(a, b),
        "max": lambda: max(a, b),
    }[e.op]()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    a=st.integers(-50, 50),
    b=st.integers(-50, 50),
    c=st.integers(-9, 9).filter(lambda x: x != 0),
    x=st.integers(0, 30),
    y=st.integers(0, 7),
)
def test_simplifier_preserves_value(a: int, b: int, c: int, x: int, y: int) -> None:
    """Simplifying with loop ranges never changes an expression's value inside those ranges."""
    vx, vy = te.var("x"), te.var("y")
    exprs = [
        (vx * a + vy * b + 3) // c,
        te.floormod(vx * a + vy * b, c),
        (vx * 8 + vy) // 8 * a + te.floormod(vx * 8 + vy, 8),
        te.min(vx * a, vy + b) - te.max(vx, b),
        te.truncdiv(vx + vy + abs(a), abs(c)),
    ]
    env = {vx: x, vy: y}
    for e in exprs:
        simple = simplify_expr(e, {vx: (0, 30), vy: (0, 7)})
        assert _eval(simple, env) == _eval(e, env), (str(e), str(simple))


def test_lowered_guards_only_where_needed() -> None:
    A = te.placeholder((30,), name="A")
    B = te.compute((30,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=10)
    assert "if" not in str(lower(s, [A, B]))
