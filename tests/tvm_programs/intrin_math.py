# ruff: noqa  (TVM code as its users write it: only the imports are changed)
"""TVM's "Intrinsics and Math Functions" how-to (intrin_math.py, v0.17, the last release with
it): a direct call of CUDA's ``__expf``, ``te.exp`` lowered by the default rule and by a rule of our own
(``register_intrin_lowering``), and a new intrinsic ``tir.mylog`` (``register_op_attr``);
imports changed. vdla's cuda target emits PTX, so ``get_source()`` shows PTX where TVM shows
CUDA C: the math calls are libdevice's (``__nv_expf``; ``__expf`` is ``__nv_fast_expf``,
one ``ex2.approx``). vdla has no OpenCL back end: the OpenCL build is left out.

With a CUDA GPU the kernels run and are checked against numpy. Without one, each is
assembled by ptxas for sm_80 and sm_90 and the loop nests run on the CPU against numpy."""
import numpy as np

import vdla as tvm
from vdla import te
from vdla.ir import register_op_attr, register_intrin_lowering

# Direct declaration of an external call: CUDA's fast exponential
n = te.var("n")
A = te.placeholder((n,), name="A")
B = te.compute(A.shape, lambda i: tvm.tir.call_pure_extern("float32", "__expf", A[i]), name="B")
s = te.create_schedule(B.op)
num_thread = 64
bx, tx = s[B].split(B.op.axis[0], factor=num_thread)
s[B].bind(bx, te.thread_axis("blockIdx.x"))
s[B].bind(tx, te.thread_axis("threadIdx.x"))
f = tvm.build(s, [A, B], "cuda", name="myexp")
print(f.imported_modules[0].get_source())
fast_src = f.imported_modules[0].get_source()
assert "ex2.approx" in fast_src  # __expf: the hardware's approximate 2^x
checks = [(f, s, [A, B], np.exp, 1e-5)]

# Unified intrinsic call: te.exp, lowered for the target
n = te.var("n")
A = te.placeholder((n,), name="A")
B = te.compute(A.shape, lambda i: te.exp(A[i]), name="B")
s = te.create_schedule(B.op)
num_thread = 64
bx, tx = s[B].split(B.op.axis[0], factor=num_thread)
s[B].bind(bx, te.thread_axis("blockIdx.x"))
s[B].bind(tx, te.thread_axis("threadIdx.x"))
fcuda = tvm.build(s, [A, B], "cuda", name="myexp")
print(fcuda.imported_modules[0].get_source())
default_src = fcuda.imported_modules[0].get_source()
assert default_src != fast_src  # the precise exp (libdevice's __nv_expf), not the fast one
checks.append((fcuda, s, [A, B], np.exp, 1e-6))


# Intrinsic lowering rule: exp calls the float function expf for float32
def my_cuda_math_rule(op):
    """Customized CUDA intrinsic lowering rule"""
    assert isinstance(op, tvm.tir.Call)
    name = op.op.name
    assert name.startswith("tir.")
    dispatch_name = name[4:]
    if op.dtype == "float32":
        # call float function
        return tvm.tir.call_pure_extern("float32", "%sf" % dispatch_name, op.args[0])
    elif op.dtype == "float64":
        # call double function
        return tvm.tir.call_pure_extern("float32", dispatch_name, op.args[0])
    else:
        # cannot do translation, return self.
        return op


register_intrin_lowering("tir.exp", target="cuda", f=my_cuda_math_rule, level=99)
fcuda = tvm.build(s, [A, B], "cuda", name="myexp")
print(fcuda.imported_modules[0].get_source())
assert fcuda.imported_modules[0].get_source() == default_src  # expf is what the default rule calls too
checks.append((fcuda, s, [A, B], np.exp, 1e-6))


# Add a new intrinsic: mylog, lowered to logf for cuda
def mylog(x):
    """customized log intrinsic function"""
    return tvm.tir.call_intrin(x.dtype, "tir.mylog", x)


def my_cuda_mylog_rule(op):
    """CUDA lowering rule for log"""
    if op.dtype == "float32":
        return tvm.tir.call_pure_extern("float32", "logf", op.args[0])
    elif op.dtype == "float64":
        return tvm.tir.call_pure_extern("float64", "log", op.args[0])
    else:
        return op


register_op_attr("tir.mylog", "TCallEffectKind", tvm.tir.CallEffectKind.Pure)
register_intrin_lowering("tir.mylog", target="cuda", f=my_cuda_mylog_rule, level=99)

n = te.var("n")
A = te.placeholder((n,), name="A")
B = te.compute(A.shape, lambda i: mylog(A[i]), name="B")
s = te.create_schedule(B.op)
num_thread = 64
bx, tx = s[B].split(B.op.axis[0], factor=num_thread)
s[B].bind(bx, te.thread_axis("blockIdx.x"))
s[B].bind(tx, te.thread_axis("threadIdx.x"))
fcuda = tvm.build(s, [A, B], "cuda", name="mylog")
print(fcuda.imported_modules[0].get_source())
checks.append((fcuda, s, [A, B], np.log, 1e-6))

# Check every kernel: on the GPU, or (no GPU) ptxas and the loop nest on the CPU
a_np = np.random.uniform(0.1, 4.0, size=1000).astype("float32")
for func, sch, args, ref, rtol in checks:
    b_np = np.zeros_like(a_np)
    if tvm.cuda(0).exist:
        dev = tvm.cuda(0)
        a = tvm.nd.array(a_np, dev)
        b = tvm.nd.array(b_np, dev)
        func(a, b)
        tvm.testing.assert_allclose(b.numpy(), ref(a_np), rtol=rtol)
    else:
        tvm.testing.assemble_cuda(sch, args)
        if func is not checks[0][0]:  # __expf is CUDA's own: the CPU has no such function
            tvm.testing.run_cuda_schedule_on_cpu(sch, args, a_np, b_np)
            tvm.testing.assert_allclose(b_np, ref(a_np), rtol=rtol)
if tvm.cuda(0).exist:
    print("intrin math: all checks passed (ran on the GPU)")
else:
    print("intrin math: all checks passed (built only: no CUDA GPU; PTX assembled for sm_80 and sm_90, "
          "loop nests checked on the CPU)")
