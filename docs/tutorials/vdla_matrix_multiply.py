"""Matrix multiply on the VDLA accelerator
=======================================

VTA's first tutorial with vdla's names: the accelerator's environment (``get_env``) gives
its tile sizes, dtypes, on-chip memory scopes, the DMA and ALU pragmas and the GEMM
intrinsic. A schedule moves tiles into the input/weight/accumulator buffers, tensorizes the
inner loops into GEMM instructions, shifts and clips on the tensor ALU and stores the result.
``vdla.build(..., target="vdla")`` gives the instruction stream; it runs on any Device
(``fsim`` is the golden simulator) and reports cycles.

Run: ``python docs/tutorials/vdla_matrix_multiply.py``
"""

import numpy as np

import vdla
from vdla import te
from vdla.compiler.targets.vdla.env import get_env

env = get_env(vdla.preset("default"))
print(f"GEMM tile: {env.BATCH}x{env.BLOCK_IN} . {env.BLOCK_IN}x{env.BLOCK_OUT}, {env.inp_dtype} -> {env.acc_dtype}")

# %%
# Shapes are in tiles: A is (rows/BATCH, K/BLOCK_IN, BATCH, BLOCK_IN), W likewise.
m, n, k = 2, 4, 8  # output rows/BATCH, output columns/BLOCK_OUT, K/BLOCK_IN
A = te.placeholder((m, k, env.BATCH, env.BLOCK_IN), env.inp_dtype, name="A")
W = te.placeholder((n, k, env.BLOCK_OUT, env.BLOCK_IN), env.wgt_dtype, name="W")
A_buf = te.compute(A.shape, lambda *i: A(*i), "A_buf")
W_buf = te.compute(W.shape, lambda *i: W(*i), "W_buf")
ko = te.reduce_axis((0, k), name="ko")
ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
C_buf = te.compute(
    (m, n, env.BATCH, env.BLOCK_OUT),
    lambda bo, co, bi, ci: te.sum(
        A_buf[bo, ko, bi, ki].astype(env.acc_dtype) * W_buf[co, ko, ci, ki].astype(env.acc_dtype), axis=[ko, ki]),
    name="C_buf")
C_shr = te.compute(C_buf.shape, lambda *i: C_buf(*i) >> 6, name="C_shr")            # tensor ALU
C_clip = te.compute(C_buf.shape, lambda *i: te.max(te.min(C_shr(*i), 127), -128), name="C_clip")
C = te.compute(C_buf.shape, lambda *i: C_clip(*i).astype(env.out_dtype), name="C")

# %%
# The schedule: buffers in their scopes, copies as DMA, the inner tile as GEMM, the
# element-wise stages on the ALU; K is walked in chunks of 2 tiles.
s = te.create_schedule(C.op)
for t, scope in ((A_buf, env.inp_scope), (W_buf, env.wgt_scope), (C_buf, env.acc_scope),
                 (C_shr, env.acc_scope), (C_clip, env.acc_scope)):
    s[t].set_scope(scope)
bo, co, bi, ci = s[C_buf].op.axis
koo, koi = s[C_buf].split(ko, factor=2)
s[C_buf].reorder(koo, bo, co, koi, bi, ci, ki)
s[A_buf].compute_at(s[C_buf], koo)
s[W_buf].compute_at(s[C_buf], koo)
for t in (A_buf, W_buf):
    s[t].pragma(s[t].op.axis[0], env.dma_copy)
s[C_buf].tensorize(bi, env.gemm)
for t in (C_shr, C_clip):
    s[t].pragma(s[t].op.axis[0], env.alu)
s[C].pragma(s[C].op.axis[0], env.dma_copy)
print(vdla.lower(s, [A, W, C], target="vdla"))

# %%
# Build, look at the instructions, run on the golden simulator.
f = vdla.build(s, [A, W, C], target="vdla", config=env.config, name="matmul")
print(f.disassemble()[:600], "...")
rng = np.random.default_rng(0)
a = rng.integers(-128, 128, (m * env.BATCH, k * env.BLOCK_IN), dtype=np.int8)
w = rng.integers(-128, 128, (n * env.BLOCK_OUT, k * env.BLOCK_IN), dtype=np.int8)
pack = lambda x, r, c: x.reshape(x.shape[0] // r, r, x.shape[1] // c, c).transpose(0, 2, 1, 3).copy()  # noqa: E731
out = np.zeros((m, n, env.BATCH, env.BLOCK_OUT), np.int8)
report = f(vdla.Device("fsim", config=env.config), pack(a, env.BATCH, env.BLOCK_IN),
           pack(w, env.BLOCK_OUT, env.BLOCK_IN), out)
want = np.clip((a.astype(np.int32) @ w.T.astype(np.int32)) >> 6, -128, 127).astype(np.int8)
np.testing.assert_array_equal(out.transpose(0, 2, 1, 3).reshape(want.shape), want)
print(report.table())

# %%
# The same run as a picture: when each module (load, compute, store) was busy, instruction by
# instruction, from the golden simulator's cycle model. ``vdla.plot`` draws it with matplotlib
# (the ``plot`` extra); ``vdla run MODEL --plot DIR`` draws one for every layer of a model.
try:
    from vdla import plot

    timeline = plot.timeline_figure([("matmul", report.trace, report.cycles)], clock_mhz=env.config.clock_mhz,
                                    title="blocked matmul on the golden simulator")
except plot.PlotError as e:  # no matplotlib
    print(e)
print("vdla_matrix_multiply: OK")
