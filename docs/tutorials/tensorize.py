"""Tensorize: use a hand-written micro-kernel
==========================================

``tensorize`` replaces a stage's inner loops by an intrinsic: a small compute that says
*what* the micro-kernel computes, and a function that emits the call. Here the kernel is
a GEMV written as LLVM IR and linked into the module with the ``import_llvm`` pragma (a
C version compiled with ``vdla.contrib.clang.create_llvm`` works the same where clang is
installed). The intrinsic has a reset and an update part, so the reduction may be split
outside it.

Run: ``python docs/tutorials/tensorize.py``
"""

import numpy as np

import vdla
from vdla import te, tir

N, M, L = 64, 32, 32
factor = 16
A = te.placeholder((N, L), name="A")
B = te.placeholder((M, L), name="B")
k = te.reduce_axis((0, L), name="k")
C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")

GEMV_LL = """
define i32 @tut_gemv_update(ptr %cc, ptr %aa, ptr %bb, i32 %m, i32 %l, i32 %stride) {
entry:
  br label %outer
outer:
  %i = phi i32 [0, %entry], [%i1, %latch]
  %ci = icmp slt i32 %i, %m
  br i1 %ci, label %pre, label %exit
pre:
  %cptr = getelementptr float, ptr %cc, i32 %i
  %row = mul i32 %i, %stride
  br label %inner
inner:
  %j = phi i32 [0, %pre], [%j1, %body]
  %cj = icmp slt i32 %j, %l
  br i1 %cj, label %body, label %latch
body:
  %ap = getelementptr float, ptr %aa, i32 %j
  %av = load float, ptr %ap
  %bi = add i32 %row, %j
  %bp = getelementptr float, ptr %bb, i32 %bi
  %bv = load float, ptr %bp
  %cv = load float, ptr %cptr
  %p = fmul float %av, %bv
  %sum = fadd float %cv, %p
  store float %sum, ptr %cptr
  %j1 = add i32 %j, 1
  br label %inner
latch:
  %i1 = add i32 %i, 1
  br label %outer
exit:
  ret i32 0
}

define i32 @tut_gemv_reset(ptr %cc, i32 %m) {
entry:
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %body]
  %c = icmp slt i32 %i, %m
  br i1 %c, label %body, label %exit
body:
  %p = getelementptr float, ptr %cc, i32 %i
  store float 0.0, ptr %p
  %i1 = add i32 %i, 1
  br label %loop
exit:
  ret i32 0
}
"""


def intrin_gemv(m, n):
    """c[i] = sum_k a[k] * b[i, k]: the compute the micro-kernel stands for, and its calls."""
    a = te.placeholder((n,), name="a")
    b = te.placeholder((m, n), name="b")
    kk = te.reduce_axis((0, n), name="k")
    c = te.compute((m,), lambda i: te.sum(a[kk] * b[i, kk], axis=kk), name="c")

    def intrin_func(ins, outs):
        aa, bb = ins
        cc = outs[0]
        update = tir.call_extern("int32", "tut_gemv_update", cc.access_ptr("w"), aa.access_ptr("r"),
                                 bb.access_ptr("r"), m, n, bb.strides[0])
        reset = tir.call_extern("int32", "tut_gemv_reset", cc.access_ptr("w"), m)
        body = tir.ir_builder.create()
        body.emit(reset)
        body.emit(update)
        return body.get(), reset, update  # whole reduction inside / reset / one more chunk

    return te.decl_tensor_intrin(c.op, intrin_func)


s = te.create_schedule(C.op)
x, y = C.op.axis
(z,) = C.op.reduce_axis
yo, yi = s[C].split(y, factor=factor)
zo, zi = s[C].split(z, factor=factor)
s[C].reorder(x, yo, zo, yi, zi)
s[C].tensorize(yi, intrin_gemv(factor, factor))
s[C].pragma(x, "import_llvm", GEMV_LL)
print(vdla.lower(s, [A, B, C], simple_mode=True))

f = vdla.build(s, [A, B, C], "llvm", name="gemv")
rng = np.random.default_rng(0)
a = rng.uniform(size=(N, L)).astype("float32")
b = rng.uniform(size=(M, L)).astype("float32")
c = vdla.nd.empty((N, M), "float32")
f(vdla.nd.array(a), vdla.nd.array(b), c)
vdla.testing.assert_allclose(c.numpy(), a @ b.T, rtol=1e-5)
print("tensorize: OK")
