"""2D convolution on VDLA with virtual threads
===========================================

A packed int8 convolution (VTA's convolution tutorial) scheduled by hand: output tiles,
input-channel chunks loaded into the on-chip buffers, GEMM for the inner tile, the ALU for
the shift and the clip. Binding an outer loop to a *virtual thread* (``cthread``) gives
two interleaved instruction streams, so that the load module fetches one thread's data
while the GEMM core works on the other's: same result, fewer cycles.

Run: ``python docs/tutorials/vdla_conv_vthread.py``
"""

import numpy as np

import vdla
from vdla import te, topi
from vdla.compiler.targets.vdla.env import get_env

env = get_env(vdla.preset("default"))
H = W = 14
CI, CO, KH, KW, PAD = 32, 64, 3, 3, 1
data_shape = (1, CI // env.BLOCK_IN, H, W, env.BATCH, env.BLOCK_IN)
kernel_shape = (CO // env.BLOCK_OUT, CI // env.BLOCK_IN, KH, KW, env.BLOCK_OUT, env.BLOCK_IN)
out_shape = (1, CO // env.BLOCK_OUT, H, W, env.BATCH, env.BLOCK_OUT)


def declare():
    data = te.placeholder(data_shape, env.inp_dtype, name="data")
    kernel = te.placeholder(kernel_shape, env.wgt_dtype, name="kernel")
    data_buf = topi.nn.pad(data, (0, 0, PAD, PAD, 0, 0), name="data_buf")
    kernel_buf = te.compute(kernel_shape, lambda *i: kernel(*i), "kernel_buf")
    ic = te.reduce_axis((0, CI // env.BLOCK_IN), name="ic")
    dy = te.reduce_axis((0, KH), name="dy")
    dx = te.reduce_axis((0, KW), name="dx")
    ic_t = te.reduce_axis((0, env.BLOCK_IN), name="ic_t")
    conv = te.compute(out_shape, lambda bo, co, i, j, bi, ci: te.sum(
        data_buf[bo, ic, i + dy, j + dx, bi, ic_t].astype(env.acc_dtype)
        * kernel_buf[co, ic, dy, dx, ci, ic_t].astype(env.acc_dtype), axis=[ic, dy, dx, ic_t]), name="conv")
    shr = te.compute(out_shape, lambda *i: conv(*i) >> 8, name="shr")
    clip = te.compute(out_shape, lambda *i: te.min(te.max(shr(*i), 0), 127), name="clip")
    res = te.compute(out_shape, lambda *i: clip(*i).astype(env.inp_dtype), name="res")
    return data, kernel, data_buf, kernel_buf, conv, shr, clip, res, ic, dy, dx, ic_t


def schedule(v_threads):
    data, kernel, data_buf, kernel_buf, conv, shr, clip, res, ic, dy, dx, ic_t = declare()
    s = te.create_schedule(res.op)
    b, oc, y, x, b_t, oc_t = s[res].op.axis
    oc_out, oc_inn = s[res].split(oc, factor=2)        # 2 output-channel tiles per task
    y_out, y_inn = s[res].split(y, factor=7)
    s[res].reorder(oc_out, y_out, b, oc_inn, y_inn, x, b_t, oc_t)
    if v_threads > 1:  # the outer channel loop becomes two interleaved threads
        _, tx = s[res].split(oc_out, factor=v_threads)
        s[res].reorder(tx, _)
        s[res].bind(tx, te.thread_axis("cthread"))
    for t in (conv, shr, clip):
        s[t].compute_at(s[res], y_out)
        s[t].set_scope(env.acc_scope)
    b_i, oc_i, y_i, x_i, b_ti, oc_ti = s[conv].op.axis
    s[conv].reorder(ic, b_i, oc_i, y_i, dy, dx, x_i, b_ti, oc_ti, ic_t)
    s[data_buf].set_scope(env.inp_scope)
    s[kernel_buf].set_scope(env.wgt_scope)
    s[data_buf].compute_at(s[conv], ic)
    s[kernel_buf].compute_at(s[conv], ic)
    s[data_buf].pragma(s[data_buf].op.axis[0], env.dma_copy)
    s[kernel_buf].pragma(s[kernel_buf].op.axis[0], env.dma_copy)
    s[conv].tensorize(b_ti, env.gemm)
    for t in (shr, clip):
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[res].pragma(b_t, env.dma_copy)
    return s, [data, kernel, res]


rng = np.random.default_rng(0)
x = rng.integers(-128, 128, (1, CI, H, W), dtype=np.int8)
w = rng.integers(-128, 128, (CO, CI, KH, KW), dtype=np.int8)
xp = x.reshape(1, env.BATCH, CI // env.BLOCK_IN, env.BLOCK_IN, H, W).transpose(0, 2, 4, 5, 1, 3).copy()
wp = w.reshape(CO // env.BLOCK_OUT, env.BLOCK_OUT, CI // env.BLOCK_IN, env.BLOCK_IN, KH, KW).transpose(
    0, 2, 4, 5, 1, 3).copy()
ref = topi.testing.conv2d_nchw_python(x.astype(np.int32), w.astype(np.int32), 1, PAD).astype(np.int32)
ref = np.clip(ref >> 8, 0, 127).astype(np.int8)
ref = ref.reshape(1, env.BATCH, CO // env.BLOCK_OUT, env.BLOCK_OUT, H, W).transpose(0, 2, 4, 5, 1, 3)

dev = vdla.Device("fsim", config=env.config)
cycles = {}
for vt in (1, 2):
    s, args = schedule(vt)
    f = vdla.build(s, args, target="vdla", config=env.config, name=f"conv_vt{vt}")
    out = np.zeros(out_shape, np.int8)
    report = f(dev, xp, wp, out)
    np.testing.assert_array_equal(out, ref)
    cycles[vt] = report.cycles
    print(f"{vt} virtual thread(s): {report.cycles} cycles, GEMM busy {100 * report.gemm_utilisation:.0f}%")
assert cycles[2] < cycles[1], cycles
print("vdla_conv_vthread: OK")
