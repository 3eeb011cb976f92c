"""Getting started with tensor expressions
=======================================

The vector add of TVM's first tutorial, on vdla: declare *what* to compute with ``te``,
say *how* with a schedule, build it for the CPU and run it on arrays.

Run: ``python docs/tutorials/tensor_expr_get_started.py``
"""

import numpy as np

import vdla
from vdla import te

# %%
# Describe the computation: C[i] = A[i] + B[i] for a symbolic length n.
n = te.var("n")
A = te.placeholder((n,), name="A")
B = te.placeholder((n,), name="B")
C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")

# %%
# A default schedule runs the loop in order; the lowered function shows it.
s = te.create_schedule(C.op)
print(vdla.lower(s, [A, B, C], simple_mode=True))

# %%
# Build for the CPU (LLVM JIT) and run on NDArrays (numpy arrays work as well).
tgt = vdla.target.Target("llvm")
fadd = vdla.build(s, [A, B, C], tgt, name="myadd")
dev = vdla.device(tgt.kind.name, 0)
a = vdla.nd.array(np.random.uniform(size=1024).astype(A.dtype), dev)
b = vdla.nd.array(np.random.uniform(size=1024).astype(B.dtype), dev)
c = vdla.nd.empty((1024,), C.dtype, dev)
fadd(a, b, c)
vdla.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())

# %%
# Split the loop, run the outer part on threads and the inner part as one vector.
s = te.create_schedule(C.op)
outer, inner = s[C].split(C.op.axis[0], factor=4)
s[C].parallel(outer)
s[C].vectorize(inner)
fadd_vec = vdla.build(s, [A, B, C], tgt, name="myadd_vec")
fadd_vec(a, b, c)
vdla.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())

# %%
# Time it: seconds per call (the mean of the repeats).
timer = fadd_vec.time_evaluator(fadd_vec.entry_name, dev, number=20, repeat=3)
print(f"vector add of 1024: {timer(a, b, c).mean * 1e6:.2f} us")

# %%
# Save the module and load it back (vdla's own file; the schedule is not needed again).
tmp = vdla.contrib.utils.tempdir()
fadd_vec.export_library(tmp.relpath("myadd.so"))
loaded = vdla.runtime.load_module(tmp.relpath("myadd.so"))
loaded(a, b, c)
vdla.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
print(loaded.get_source()[:200])
print("tensor_expr_get_started: OK")
