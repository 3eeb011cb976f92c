# ruff: noqa  (TVM code as its users write it: only the imports are changed)
"""TVM's "Reduce" how-to (reduction.py): a row sum split, rfactor-ed and reduced across the
threads of a block (a cross-thread reduction, stored by thread 0 through
set_store_predicate), a 2D convolution's loops and a custom comm_reducer; v0.18 spellings,
imports changed.

With a CUDA GPU the row sum runs as TVM's does and is checked against numpy. Without one,
the part after the build checks the PTX with ptxas for sm_80 and sm_90 and runs the loop
nest (threads as loops) on the CPU against numpy."""
import vdla as tvm
import vdla.testing
from vdla import te
import numpy as np

# Describe the sum of rows
n = te.var("n")
m = te.var("m")
A = te.placeholder((n, m), name="A")
k = te.reduce_axis((0, m), "k")
B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")

s = te.create_schedule(B.op)
print(tvm.lower(s, [A, B], simple_mode=True))

# Schedule the reduction: split the reduce axis and the row axis
ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
xo, xi = s[B].split(B.op.axis[0], factor=32)
print(tvm.lower(s, [A, B], simple_mode=True))

s[B].bind(xo, te.thread_axis("blockIdx.x"))
s[B].bind(xi, te.thread_axis("threadIdx.x"))
print(tvm.lower(s, [A, B], simple_mode=True))

# Reduction factoring: the inner part of the split becomes a data-parallel axis of B.rf
s = te.create_schedule(B.op)
ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
BF = s.rfactor(B, ki)
print(tvm.lower(s, [A, B], simple_mode=True))

# B now reduces B.rf over its first axis
print(s[B].op.body)
assert BF.name == "B.rf" and len(BF.shape) == 2

# Cross-thread reduction: the factored axis bound to threadIdx.x, thread 0 stores the result
xo, xi = s[B].split(s[B].op.axis[0], factor=32)
s[B].bind(xo, te.thread_axis("blockIdx.x"))
s[B].bind(xi, te.thread_axis("threadIdx.y"))
tx = te.thread_axis("threadIdx.x")
s[B].bind(s[B].op.reduce_axis[0], tx)
s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
s[B].set_store_predicate(tx.var.equal(0))
fcuda = tvm.build(s, [A, B], "cuda")
print(fcuda.imported_modules[0].get_source())

# The kernel: 16 x 32 threads a block, the threads' partial sums combined in shared memory
ptx = fcuda.imported_modules[0].get_source()
assert ".maxntid 16, 32, 1" in ptx and ".shared" in ptx and "bar.sync" in ptx

nn = 128
a_np = np.random.uniform(size=(nn, nn)).astype(A.dtype)
if tvm.cuda(0).exist:
    dev = tvm.cuda(0)
    a = tvm.nd.array(a_np, dev)
    b = tvm.nd.array(np.zeros(nn, dtype=B.dtype), dev)
    fcuda(a, b)
    tvm.testing.assert_allclose(b.numpy(), np.sum(a.numpy(), axis=1), rtol=1e-4)
    ran = "ran on the GPU"
else:
    # No GPU: prove the PTX with ptxas, and run the loop nest on the CPU (a shape that needs the guards)
    for arch, report in tvm.testing.assemble_cuda(s, [A, B]).items():
        print(arch, report.strip().splitlines()[-2].strip())
    a_np = np.random.uniform(size=(100, 77)).astype(A.dtype)
    b_np = np.zeros(100, dtype=B.dtype)
    tvm.testing.run_cuda_schedule_on_cpu(s, [A, B], a_np, b_np)
    tvm.testing.assert_allclose(b_np, np.sum(a_np, axis=1), rtol=1e-4)
    ran = "built only: no CUDA GPU; PTX assembled for sm_80 and sm_90, loop nest checked on the CPU"

# Describe a convolution with a 2D reduction
n = te.var("n")
Input = te.placeholder((n, n), name="Input")
Filter = te.placeholder((3, 3), name="Filter")
di = te.reduce_axis((0, 3), name="di")
dj = te.reduce_axis((0, 3), name="dj")
Output = te.compute(
    (n - 2, n - 2),
    lambda i, j: te.sum(Input[i + di, j + dj] * Filter[di, dj], axis=[di, dj]),
    name="Output",
)
s = te.create_schedule(Output.op)
print(tvm.lower(s, [Input, Filter, Output], simple_mode=True))

# A commutative reducer of our own: the product
n = te.var("n")
m = te.var("m")
product = te.comm_reducer(lambda x, y: x * y, lambda t: tvm.tir.const(1, dtype=t), name="product")
A = te.placeholder((n, m), name="A")
k = te.reduce_axis((0, m), name="k")
B = te.compute((n,), lambda i: product(A[i, k], axis=k), name="B")

# (not in TVM's tutorial) the product runs too
s = te.create_schedule(B.op)
f = tvm.build(s, [A, B], "llvm")
a_np = np.random.uniform(0.5, 1.5, size=(6, 5)).astype(A.dtype)
b_np = np.zeros(6, dtype=B.dtype)
f(a_np, b_np)
tvm.testing.assert_allclose(b_np, np.prod(a_np, axis=1), rtol=1e-5)
print(f"reduction: all checks passed ({ran})")
