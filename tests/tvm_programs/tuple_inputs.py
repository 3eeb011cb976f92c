# ruff: noqa  (TVM code as its users write it: only the imports are changed)
"""TVM's "Compute and Reduce with Tuple Inputs" tutorial, imports changed; the checks at the end
are added (the tutorial only prints the lowered code)."""
import vdla as tvm
from vdla import te
import numpy as np

n = te.var("n")
m = te.var("m")
A0 = te.placeholder((m, n), name="A0")
A1 = te.placeholder((m, n), name="A1")
B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] + 2, A1[i, j] * 3), name="B")

# The generated IR code would be:
s = te.create_schedule(B0.op)
print(tvm.lower(s, [A0, A1, B0, B1], simple_mode=True))
f_ew = tvm.build(s, [A0, A1, B0, B1], "llvm")


# x and y are the operands of reduction, both of them is a tuple of index
# and value.
def fcombine(x, y):
    lhs = tvm.tir.Select((x[1] >= y[1]), x[0], y[0])
    rhs = tvm.tir.Select((x[1] >= y[1]), x[1], y[1])
    return lhs, rhs


# our identity element also need to be a tuple, so `fidentity` accepts
# two types as inputs.
def fidentity(t0, t1):
    return tvm.tir.const(-1, t0), tvm.te.min_value(t1)


argmax = te.comm_reducer(fcombine, fidentity, name="argmax")

# describe the reduction computation
m = te.var("m")
n = te.var("n")
idx = te.placeholder((m, n), name="idx", dtype="int32")
val = te.placeholder((m, n), name="val", dtype="int32")
k = te.reduce_axis((0, n), "k")
T0, T1 = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")

# the generated IR code would be:
s = te.create_schedule(T0.op)
print(tvm.lower(s, [idx, val, T0, T1], simple_mode=True))
f_argmax = tvm.build(s, [idx, val, T0, T1], "llvm")

n = te.var("n")
m = te.var("m")
A0 = te.placeholder((m, n), name="A0")
B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] + 2, A0[i, j] * 3), name="B")
A1 = te.placeholder((m, n), name="A1")
C = te.compute((m, n), lambda i, j: A1[i, j] + B0[i, j], name="C")

s = te.create_schedule(C.op)
s[B0].compute_at(s[C], C.op.axis[0])
# as you can see in the below generated IR code:
print(tvm.lower(s, [A0, A1, C], simple_mode=True))
f_at = tvm.build(s, [A0, A1, C], "llvm")

# ---- checks (added)
rng = np.random.default_rng(0)
a0 = tvm.nd.array(rng.standard_normal((5, 7)).astype("float32"))
a1 = tvm.nd.array(rng.standard_normal((5, 7)).astype("float32"))
b0, b1 = tvm.nd.empty((5, 7)), tvm.nd.empty((5, 7))
f_ew(a0, a1, b0, b1)
tvm.testing.assert_allclose(b0.numpy(), a0.numpy() + 2, rtol=1e-6)
tvm.testing.assert_allclose(b1.numpy(), a1.numpy() * 3, rtol=1e-6)
v = rng.integers(-100, 100, (6, 9)).astype("int32")
ix = np.tile(np.arange(9, dtype="int32"), (6, 1))
t0, t1 = tvm.nd.empty((6,), "int32"), tvm.nd.empty((6,), "int32")
f_argmax(tvm.nd.array(ix), tvm.nd.array(v), t0, t1)
np.testing.assert_array_equal(t0.numpy(), v.argmax(axis=1))
np.testing.assert_array_equal(t1.numpy(), v.max(axis=1))
c = tvm.nd.empty((5, 7))
f_at(a0, a1, c)
tvm.testing.assert_allclose(c.numpy(), a1.numpy() + (a0.numpy() + 2), rtol=1e-5, atol=1e-6)
print("tuple inputs: all checks passed")
