"""``tensorize`` with declared intrinsics on the CPU: an inline IR body, and an extern
micro-kernel written in LLVM IR; matching errors."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler import build, lower, te
from vdla.compiler.schedule.tensorize import TensorizeError
from vdla.compiler.targets.llvm import jit
from vdla.compiler.tir.nodes import For, IntImm, Var, seq

JB, KB = 16, 8  # the intrinsic: out[16] (+)= b[16, 8] . a[8]


def gemv_decl(dtype: str = "float32") -> te.Tensor:
    a = te.placeholder((KB,), dtype, name="a")
    b = te.placeholder((JB, KB), dtype, name="b")
    k = te.reduce_axis((0, KB), name="k")
    return te.compute((JB,), lambda j: te.sum(a[k] * b[j, k], axis=k), name="gemv")


def _loop(n: int, body_fn, kind: str = "serial", name: str = "v"):  # type: ignore[no-untyped-def]
    v = Var(name, "int32")
    return For(v, IntImm(0), IntImm(n), kind, body_fn(v))


def inline_intrin() -> te.TensorIntrin:  # type: ignore[name-defined]
    """Lowers to loops in the IR (the j loop vectorised by the normal pipeline)."""

    def fintrin(ins, outs):  # type: ignore[no-untyped-def]
        a, b = ins
        (c,) = outs
        reset = _loop(JB, lambda j: c.vstore([j], 0.0), "vectorized", "j")
        update = _loop(
            KB,
            lambda k: _loop(JB, lambda j: c.vstore([j], c.vload(j) + a.vload(k) * b.vload(j, k)), "vectorized", "j"),
            name="k",
        )
        return seq(reset, update), reset, update

    return te.decl_tensor_intrin(gemv_decl().op, fintrin, name="gemv_inline")


UKERNEL = r"""
define void @vdla_test_gemv_update(ptr noalias %out, ptr noalias %a, ptr noalias %b, i32 %ldb) {
entry:
  br label %jloop
jloop:
  %j = phi i32 [0, %entry], [%j1, %jend]
  %jb = mul i32 %j, %ldb
  %op = getelementptr float, ptr %out, i32 %j
  %acc0 = load float, ptr %op
  br label %kloop
kloop:
  %k = phi i32 [0, %jloop], [%k1, %kloop]
  %acc = phi float [%acc0, %jloop], [%acc1, %kloop]
  %ap = getelementptr float, ptr %a, i32 %k
  %av = load float, ptr %ap
  %bi = add i32 %jb, %k
  %bp = getelementptr float, ptr %b, i32 %bi
  %bv = load float, ptr %bp
  %m = fmul float %av, %bv
  %acc1 = fadd float %acc, %m
  %k1 = add i32 %k, 1
  %kc = icmp slt i32 %k1, 8
  br i1 %kc, label %kloop, label %jend
jend:
  store float %acc1, ptr %op
  %j1 = add i32 %j, 1
  %jc = icmp slt i32 %j1, 16
  br i1 %jc, label %jloop, label %exit
exit:
  ret void
}
"""


def extern_intrin() -> te.TensorIntrin:  # type: ignore[name-defined]
    """``update`` is a call of an LLVM-IR micro-kernel; ``reset`` an IR loop."""
    jit.compile_module(UKERNEL)  # defines vdla_test_gemv_update in the JIT (idempotent use is fine)

    def fintrin(ins, outs):  # type: ignore[no-untyped-def]
        a, b = ins
        (c,) = outs
        reset = _loop(JB, lambda j: c.vstore([j], 0.0), "vectorized", "j")
        update = te.call_extern(
            "void", "vdla_test_gemv_update", c.access_ptr(), a.access_ptr(), b.access_ptr(), b.strides[0]
        )
        return None, reset, update

    return te.decl_tensor_intrin(gemv_decl().op, fintrin, name="gemv_extern")


_EXTERN: list[te.TensorIntrin] = []  # type: ignore[name-defined]


def _extern() -> te.TensorIntrin:  # type: ignore[name-defined]
    if not _EXTERN:
        _EXTERN.append(extern_intrin())
    return _EXTERN[0]


def matvec_schedule(n: int, m: int, kk: int, intrin, split_k: bool, cache: bool = False):  # type: ignore[no-untyped-def]
    A = te.placeholder((n, kk), name="A")  # rows of inputs
    B = te.placeholder((m, kk), name="B")
    r = te.reduce_axis((0, kk), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[j, r], axis=r), name="C")
    s = te.create_schedule(C.op)
    st = s[C]
    if cache:
        CC = s.cache_write(C, "local")
        i, j = C.op.axis
        jo, ji = s[C].split(j, factor=JB)
        s[CC].compute_at(s[C], jo)
        st = s[CC]
    i, j = st.op.axis
    (r,) = st.op.reduce_axis
    jo, ji = (None, j) if cache else st.split(j, factor=JB)
    if split_k:
        ro, ri = st.split(r, factor=KB)
        if cache:
            st.reorder(i, ro, ji, ri)
        else:
            st.reorder(i, jo, ro, ji, ri)
    st.tensorize(ji, intrin)
    return s, A, B, C


@pytest.mark.parametrize(
    ("which", "kk", "split_k", "cache"),
    [
        ("inline", KB, False, False),  # reduction inside: body
        ("inline", 5 * KB, True, False),  # k split outside: reset at ro == 0 ... update
        ("extern", 3 * KB, True, False),
        ("extern", 2 * KB, True, True),  # tensorized stage is a compute_at cache
    ],
)
def test_tensorized_matvec(which: str, kk: int, split_k: bool, cache: bool) -> None:
    intrin = inline_intrin() if which == "inline" else _extern()
    n, m = 3, 4 * JB
    s, A, B, C = matvec_schedule(n, m, kk, intrin, split_k, cache)
    text = str(lower(s, [A, B, C]))
    assert f"attr tensorized = {intrin.name}" in text
    if which == "extern":
        assert "call_extern('vdla_test_gemv_update'" in text
    f = build(s, [A, B, C])
    rng = np.random.default_rng(7)
    a = rng.standard_normal((n, kk)).astype("float32")
    b = rng.standard_normal((m, kk)).astype("float32")
    c = np.full((n, m), np.nan, "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-4, atol=1e-4)


def test_tensorize_elementwise_intrinsic_with_extern_python_callback() -> None:
    """A non-reduction intrinsic whose lowering calls a registered (ctypes) function."""
    import ctypes

    calls = []
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)

    def vadd4(out: int, x: int, n: int) -> None:
        calls.append(n)
        o = (ctypes.c_float * 4).from_address(out)
        xi = (ctypes.c_float * 4).from_address(x)
        for q in range(4):
            o[q] = xi[q] + 1.0

    cb = proto(vadd4)
    jit.register_extern("vdla_test_vadd4", cb)
    x = te.placeholder((4,), name="x")
    y = te.compute((4,), lambda i: x[i] + 1.0, name="y")
    intrin = te.decl_tensor_intrin(
        y.op, lambda ins, outs: te.call_extern("void", "vdla_test_vadd4", outs[0].access_ptr(), ins[0].access_ptr(), 4)
    )
    X = te.placeholder((6, 8), name="X")
    Y = te.compute((6, 8), lambda i, j: X[i, j] + 1.0, name="Y")
    s = te.create_schedule(Y.op)
    _, ji = s[Y].split(Y.op.axis[1], factor=4)
    s[Y].tensorize(ji, intrin)
    f = build(s, [X, Y])
    xa = np.arange(48, dtype="float32").reshape(6, 8)
    ya = np.zeros_like(xa)
    f(xa, ya)
    np.testing.assert_array_equal(ya, xa + 1)
    assert len(calls) == 12


def test_tensorize_mismatches_are_named() -> None:
    intrin = inline_intrin()
    # wrong extent: j split by 8 instead of 16
    A = te.placeholder((2, KB), name="A")
    B = te.placeholder((32, KB), name="B")
    r = te.reduce_axis((0, KB), name="r")
    C = te.compute((2, 32), lambda i, j: te.sum(A[i, r] * B[j, r], axis=r), name="C")
    s = te.create_schedule(C.op)
    _, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].tensorize(ji, intrin)
    with pytest.raises(TensorizeError, match=r"stage 'C'.*axis 'j.inner'.*axis 'j' covers 8 iterations.*has 16"):
        lower(s, [A, B, C])
    # wrong body: + instead of *
    C2 = te.compute((2, 32), lambda i, j: te.sum(A[i, r] + B[j, r], axis=r), name="C2")
    s = te.create_schedule(C2.op)
    _, ji = s[C2].split(C2.op.axis[1], factor=16)
    s[C2].tensorize(ji, intrin)
    with pytest.raises(TensorizeError, match="the stage computes"):
        lower(s, [A, B, C2])
    # transposed operand access: B[r, j] does not match b[j, k]
    Bt = te.placeholder((KB, 32), name="Bt")
    C3 = te.compute((2, 32), lambda i, j: te.sum(A[i, r] * Bt[r, j], axis=r), name="C3")
    s = te.create_schedule(C3.op)
    _, ji = s[C3].split(C3.op.axis[1], factor=16)
    s[C3].tensorize(ji, intrin)
    with pytest.raises(TensorizeError):
        lower(s, [A, Bt, C3])
    # non-divisible split inside the tensorized loops
    B4 = te.placeholder((20, KB), name="B4")
    C4 = te.compute((2, 20), lambda i, j: te.sum(A[i, r] * B4[j, r], axis=r), name="C4")
    s = te.create_schedule(C4.op)
    _, ji = s[C4].split(C4.op.axis[1], factor=16)
    s[C4].tensorize(ji, intrin)
    with pytest.raises(ValueError, match="guard"):
        lower(s, [A, B4, C4])
