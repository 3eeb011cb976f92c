# ruff: noqa  (TVM code as its users write it: only the imports are changed)
"""The GPU part of TVM's "Working with Operators Using Tensor Expression" tutorial
(tensor_expr_get_started.py, the ``run_cuda`` section): the vector add bound to blocks and
threads, built for ``Target("cuda", host="llvm")``, run, and its device code printed from
``fadd.imported_modules[0]``; v0.18 spellings, imports changed. vdla's cuda target emits
PTX, so the device code printed is PTX where TVM prints CUDA C.

TVM's tutorial runs this section when ``run_cuda`` is set; here it runs when a CUDA GPU is
present. Without one, the build and its device code are still checked: the PTX assembled
by ptxas for sm_80 and sm_90, the loop nest (threads as loops) run on the CPU against numpy."""
import vdla as tvm
import vdla.testing
from vdla import te
import numpy as np

run_cuda = tvm.cuda(0).exist  # TVM: False, set by hand on a machine with a GPU
# Change this target to the correct backend for your GPU (cuda for NVIDIA GPUs)
tgt_gpu = tvm.target.Target(target="cuda", host="llvm")

# Recreate the schedule
n = te.var("n")
A = te.placeholder((n,), name="A")
B = te.placeholder((n,), name="B")
C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
print(type(C))

s = te.create_schedule(C.op)

bx, tx = s[C].split(C.op.axis[0], factor=64)

# Bind the iteration axes to the GPU's blocks and threads
s[C].bind(bx, te.thread_axis("blockIdx.x"))
s[C].bind(tx, te.thread_axis("threadIdx.x"))

# Compilation: a host wrapper and the device function it launches
fadd = tvm.build(s, [A, B, C], target=tgt_gpu, name="myadd")

if run_cuda:
    dev = tvm.device(tgt_gpu.kind.name, 0)

    n = 1024
    a = tvm.nd.array(np.random.uniform(size=n).astype(A.dtype), dev)
    b = tvm.nd.array(np.random.uniform(size=n).astype(B.dtype), dev)
    c = tvm.nd.array(np.zeros(n, dtype=C.dtype), dev)
    fadd(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
    ran = "ran on the GPU"
else:
    # No GPU: prove the PTX with ptxas, and run the loop nest on the CPU (a size the guard matters for)
    for arch, report in tvm.testing.assemble_cuda(s, [A, B, C], name="myadd").items():
        print(arch, report.strip().splitlines()[-2].strip())
    a_np = np.random.uniform(size=1000).astype(A.dtype)
    b_np = np.random.uniform(size=1000).astype(B.dtype)
    c_np = np.zeros(1000, dtype=C.dtype)
    tvm.testing.run_cuda_schedule_on_cpu(s, [A, B, C], a_np, b_np, c_np)
    tvm.testing.assert_allclose(c_np, a_np + b_np)
    ran = "built only: no CUDA GPU; PTX assembled for sm_80 and sm_90, loop nest checked on the CPU"

# Inspect the generated GPU code: the host module imports the device module
if (
    tgt_gpu.kind.name == "cuda"
    or tgt_gpu.kind.name == "rocm"
    or tgt_gpu.kind.name.startswith("opencl")
):
    dev_module = fadd.imported_modules[0]
    print("-----GPU code-----")
    print(dev_module.get_source())
else:
    print(fadd.get_source())
assert ".visible .entry myadd_kernel" in dev_module.get_source()
print(f"TE getting started (cuda): all checks passed ({ran})")
