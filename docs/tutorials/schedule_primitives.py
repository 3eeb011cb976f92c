"""Schedule primitives
===================

The same computation, many loop nests: ``split``, ``tile``, ``fuse``, ``reorder``,
``compute_at``, ``compute_inline`` and ``cache_write`` change how a stage runs, never what
it computes -- every variant below is checked against numpy.

Run: ``python docs/tutorials/schedule_primitives.py``
"""

import numpy as np

import vdla
from vdla import te

M, N = 64, 48
A = te.placeholder((M, N), name="A")
rng = np.random.default_rng(0)
a = rng.standard_normal((M, N)).astype("float32")


def check(s, args, want, label):
    print(f"---- {label}")
    print(vdla.lower(s, args, simple_mode=True))
    f = vdla.build(s, args, "llvm")
    out = np.zeros(want.shape, "float32")
    f(a, out)
    vdla.testing.assert_allclose(out, want, rtol=1e-5)


B = te.compute((M, N), lambda i, j: A[i, j] * 2, name="B")

# %%
# split: one loop becomes an outer and an inner loop (by factor, or by number of parts).
s = te.create_schedule(B.op)
xo, xi = s[B].split(B.op.axis[0], factor=32)
check(s, [A, B], a * 2, "split")

# %%
# tile: split two loops and put the tiles outside; fuse: one loop over both tile loops.
s = te.create_schedule(B.op)
xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=16, y_factor=8)
fused = s[B].fuse(xo, yo)
s[B].parallel(fused)
check(s, [A, B], a * 2, "tile + fuse + parallel")

# %%
# reorder: any order of the loops.
s = te.create_schedule(B.op)
i, j = B.op.axis
s[B].reorder(j, i)
check(s, [A, B], a * 2, "reorder")

# %%
# compute_at: compute a producer inside a loop of its consumer (here one row at a time);
# compute_inline: no loop and no storage at all.
C = te.compute((M, N), lambda i, j: B[i, j] + 1, name="C")
s = te.create_schedule(C.op)
s[B].compute_at(s[C], C.op.axis[0])
check(s, [A, C], a * 2 + 1, "compute_at")
s = te.create_schedule(C.op)
s[B].compute_inline()
check(s, [A, C], a * 2 + 1, "compute_inline")

# %%
# A reduction with cache_write: accumulate in a local tile, then copy out.
k = te.reduce_axis((0, N), name="k")
R = te.compute((M,), lambda i: te.sum(A[i, k] * A[i, k], axis=k), name="R")
s = te.create_schedule(R.op)
RL = s.cache_write(R, "local")
xo, xi = s[R].split(R.op.axis[0], factor=8)
s[RL].compute_at(s[R], xo)
check(s, [A, R], (a * a).sum(axis=1), "reduction + cache_write")
print("schedule_primitives: OK")
