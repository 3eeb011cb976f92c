# ruff: noqa  (TVM code as its users write it: only the imports are changed)
"""TVM's "How to optimize convolution on GPU" (opt_conv_cuda.py): a 3x3 convolution in HWCN
layout tiled into shared memory and registers, with virtual threads, v0.18 spellings, imports
changed. The sizes are smaller (a comment says which) to keep the test quick.

With a CUDA GPU the program runs and times the kernel as TVM's does, and compares it with
numpy. Without one, the part after the build checks what it can: the PTX assembled by ptxas
for sm_80 and sm_90, and the same loop nest (threads as loops) run on the CPU against numpy."""
import numpy as np
import vdla as tvm
from vdla import te

# The sizes of the convolution (TVM: batch 256, in_channel 256, out_channel 512, in_size 14;
# smaller here, keeping every tile full, so that the CPU check is quick)
batch = 64
in_channel = 32
out_channel = 64
in_size = 7
kernel = 3
pad = 1
stride = 1

# Algorithm
A = te.placeholder((in_size, in_size, in_channel, batch), name="A")
W = te.placeholder((kernel, kernel, in_channel, out_channel), name="W")
out_size = (in_size - kernel + 2 * pad) // stride + 1
# Pad input
Apad = te.compute(
    (in_size + 2 * pad, in_size + 2 * pad, in_channel, batch),
    lambda yy, xx, cc, nn: tvm.tir.if_then_else(
        tvm.tir.all(yy >= pad, yy - pad < in_size, xx >= pad, xx - pad < in_size),
        A[yy - pad, xx - pad, cc, nn],
        tvm.tir.const(0.0, "float32"),
    ),
    name="Apad",
)
# Create reduction variables
rc = te.reduce_axis((0, in_channel), name="rc")
ry = te.reduce_axis((0, kernel), name="ry")
rx = te.reduce_axis((0, kernel), name="rx")
# Compute the convolution
B = te.compute(
    (out_size, out_size, out_channel, batch),
    lambda yy, xx, ff, nn: te.sum(
        Apad[yy * stride + ry, xx * stride + rx, rc, nn] * W[ry, rx, rc, ff], axis=[ry, rx, rc]
    ),
    name="B",
)

# Memory hierarchy: the padded input and the weights in shared memory, then registers
s = te.create_schedule(B.op)
s[Apad].compute_inline()  # compute Apad inline
AA = s.cache_read(Apad, "shared", [B])
WW = s.cache_read(W, "shared", [B])
AL = s.cache_read(AA, "local", [B])
WL = s.cache_read(WW, "local", [B])
BL = s.cache_write(B, "local")

# Blocking
tile = 8
num_thread = 8
block_factor = tile * num_thread
step = 8
vthread = 2

# Get the GPU thread indices
block_x = te.thread_axis("blockIdx.x")
block_y = te.thread_axis("blockIdx.y")
block_z = te.thread_axis("blockIdx.z")
thread_x = te.thread_axis((0, num_thread), "threadIdx.x")
thread_y = te.thread_axis((0, num_thread), "threadIdx.y")
thread_xz = te.thread_axis((0, vthread), "vthread", name="vx")
thread_yz = te.thread_axis((0, vthread), "vthread", name="vy")

# Split the workloads
hi, wi, fi, ni = s[B].op.axis
bz = s[B].fuse(hi, wi)
by, fi = s[B].split(fi, factor=block_factor)
bx, ni = s[B].split(ni, factor=block_factor)

# Bind the iteration variables to GPU thread indices
s[B].bind(bz, block_z)
s[B].bind(by, block_y)
s[B].bind(bx, block_x)

# Virtual threads: strided tiles, so that neighbouring threads touch neighbouring memory
tyz, fi = s[B].split(fi, nparts=vthread)  # virtual thread split
txz, ni = s[B].split(ni, nparts=vthread)  # virtual thread split
ty, fi = s[B].split(fi, nparts=num_thread)
tx, ni = s[B].split(ni, nparts=num_thread)
s[B].reorder(bz, by, bx, tyz, txz, ty, tx, fi, ni)

s[B].bind(tyz, thread_yz)
s[B].bind(txz, thread_xz)
s[B].bind(ty, thread_y)
s[B].bind(tx, thread_x)

# Cooperative fetching: each thread's tile in registers, the block's in shared memory
# Schedule BL local write
s[BL].compute_at(s[B], tx)
yi, xi, fi, ni = s[BL].op.axis
ry, rx, rc = s[BL].op.reduce_axis
rco, rci = s[BL].split(rc, factor=step)
s[BL].reorder(rco, ry, rx, rci, fi, ni)

# Attach computation to iteration variables
s[AA].compute_at(s[BL], rx)
s[WW].compute_at(s[BL], rx)
s[AL].compute_at(s[BL], rci)
s[WL].compute_at(s[BL], rci)

# Schedule for A's shared memory load
yi, xi, ci, ni = s[AA].op.axis
ty, ci = s[AA].split(ci, nparts=num_thread)
tx, ni = s[AA].split(ni, nparts=num_thread)
_, ni = s[AA].split(ni, factor=4)
s[AA].reorder(ty, tx, yi, xi, ci, ni)
s[AA].bind(ty, thread_y)
s[AA].bind(tx, thread_x)
s[AA].vectorize(ni)  # vectorize memory load

# Schedule for W's shared memory load
yi, xi, ci, fi = s[WW].op.axis
ty, ci = s[WW].split(ci, nparts=num_thread)
tx, fi = s[WW].split(fi, nparts=num_thread)
_, fi = s[WW].split(fi, factor=4)
s[WW].reorder(ty, tx, yi, xi, ci, fi)
s[WW].bind(ty, thread_y)
s[WW].bind(tx, thread_x)
s[WW].vectorize(fi)  # vectorize memory load

# Generate the CUDA kernel (PTX here)
func = tvm.build(s, [A, W, B], "cuda")

a_np = np.random.uniform(size=(in_size, in_size, in_channel, batch)).astype(A.dtype)
w_np = np.random.uniform(size=(kernel, kernel, in_channel, out_channel)).astype(W.dtype)


def conv_hwcn(a, w):
    """numpy's answer: the padded input's 3x3 windows times the weights, summed over channels."""
    ap = np.pad(a, ((pad, pad), (pad, pad), (0, 0), (0, 0)))
    out = np.zeros((out_size, out_size, out_channel, batch), dtype="float64")
    for y in range(kernel):
        for x in range(kernel):
            win = ap[y : y + out_size * stride : stride, x : x + out_size * stride : stride]
            out += np.einsum("hwcn,cf->hwfn", win, w[y, x], dtype="float64")
    return out


if tvm.cuda(0).exist:
    dev = tvm.cuda(0)
    a = tvm.nd.array(a_np, dev)
    w = tvm.nd.array(w_np, dev)
    b = tvm.nd.array(np.zeros((out_size, out_size, out_channel, batch), dtype=B.dtype), dev)
    func(a, w, b)
    evaluator = func.time_evaluator(func.entry_name, dev, number=1)
    print("Convolution: %f ms" % (evaluator(a, w, b).mean * 1e3))
    tvm.testing.assert_allclose(b.numpy(), conv_hwcn(a_np, w_np), rtol=1e-4)
    print("opt conv cuda: all checks passed (ran on the GPU)")
else:
    # No GPU: prove the PTX with ptxas, and run the loop nest on the CPU
    for arch, report in tvm.testing.assemble_cuda(s, [A, W, B]).items():
        print(arch, report.strip().splitlines()[-2].strip())
    b_np = np.zeros((out_size, out_size, out_channel, batch), dtype=B.dtype)
    tvm.testing.run_cuda_schedule_on_cpu(s, [A, W, B], a_np, w_np, b_np)
    tvm.testing.assert_allclose(b_np, conv_hwcn(a_np, w_np), rtol=1e-4)
    print("opt conv cuda: all checks passed (built only: no CUDA GPU; PTX assembled for sm_80 and sm_90, "
          "loop nest checked on the CPU)")
