"""pragma(ax, "import_llvm", ir) links the IR into the kernel; a call nothing defines is an error
at build time (it was a segfault at run time)."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
from vdla import te, tir
from vdla.compiler.targets.llvm.jit import LinkError

TWICE = """
define i32 @vdla_test_twice(ptr %dst, ptr %src, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %body]
  %c = icmp slt i32 %i, %n
  br i1 %c, label %body, label %exit
body:
  %sp = getelementptr float, ptr %src, i32 %i
  %v = load float, ptr %sp
  %w = fadd float %v, %v
  %dp = getelementptr float, ptr %dst, i32 %i
  store float %w, ptr %dp
  %i1 = add i32 %i, 1
  br label %loop
exit:
  ret i32 0
}
"""


def _intrin(fname, n=4):
    a = te.placeholder((n,), name="a")
    c = te.compute((n,), lambda i: a[i] * 2, name="c")

    def f(ins, outs):
        return tir.call_extern("int32", fname, outs[0].access_ptr("w"), ins[0].access_ptr("r"), n)

    return te.decl_tensor_intrin(c.op, f, binds={a: tir.decl_buffer((n,), "float32", "Ab")})


def _sched(fname, ir=None):
    A = te.placeholder((16,), name="A")
    C = te.compute((16,), lambda i: A[i] * 2, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].tensorize(xi, _intrin(fname))
    if ir is not None:
        s[C].pragma(xo, "import_llvm", ir)
    return s, [A, C]


def test_imported_function_runs_and_two_kernels_share_it():
    for _ in range(2):  # the second build imports the same symbol again: no clash
        s, args = _sched("vdla_test_twice", TWICE)
        f = vdla.build(s, args, "llvm")
        a = np.arange(16, dtype="float32")
        c = np.zeros(16, "float32")
        f(a, c)
        np.testing.assert_array_equal(c, a * 2)
        assert "vdla_test_twice" in f.get_source()


def test_missing_extern_is_an_error_not_a_crash():
    s, args = _sched("vdla_test_undefined_fn")
    with pytest.raises(LinkError, match="'vdla_test_undefined_fn' is not defined.*import_llvm"):
        vdla.build(s, args, "llvm")


def test_bad_ir_is_named():
    s, args = _sched("vdla_test_twice", "this is not llvm ir")
    with pytest.raises(LinkError, match="import_llvm pragma 0 does not parse"):
        vdla.build(s, args, "llvm")


def test_binds_are_checked():
    a = te.placeholder((4,), name="a")
    c = te.compute((4,), lambda i: a[i] * 2, name="c")
    with pytest.raises(ValueError, match="must be float32 with 1 dimension"):
        te.decl_tensor_intrin(c.op, lambda i, o: None, binds={a: tir.decl_buffer((4, 1), "float32")})
    other = te.placeholder((4,), name="other")
    with pytest.raises(ValueError, match="neither an input nor the output"):
        te.decl_tensor_intrin(c.op, lambda i, o: None, binds={other: tir.decl_buffer((4,), "float32")})
