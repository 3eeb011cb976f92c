"""The CUDA runtime: without a GPU a built function raises "no CUDA device" (after checking its
arguments, which needs no GPU); with one, results match numpy, device arrays stay on the GPU,
timing uses CUDA events and a faulting kernel is reported by name."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from support.cuda import needs_gpu

import vdla
from vdla.compiler import te, topi
from vdla.compiler.targets.cuda import runtime, schedules
from vdla.compiler.targets.llvm.module import ArgumentError


def _vadd(n: int = 1000) -> object:
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=128)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    return vdla.build(s, [A, B, C], target="cuda")


@pytest.mark.skipif(runtime.device_count() > 0, reason="this machine has a GPU")
def test_no_cuda_device_is_a_clear_error() -> None:
    f = _vadd()
    a = np.ones(1000, "float32")
    with pytest.raises(runtime.NoCudaDevice, match="no CUDA device"):
        f(a, a.copy(), np.zeros(1000, "float32"))
    with pytest.raises(runtime.NoCudaDevice, match="no CUDA device"):
        runtime.to_device(a)
    assert runtime.device_count() == 0


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((np.ones(1000, "float32"), np.ones(1000, "float64"), np.zeros(1000, "float32")),
         r"argument 1 \('B'\): expected dtype float32, got float64"),
        ((np.ones(1000, "float32"), np.ones(999, "float32"), np.zeros(1000, "float32")),
         r"argument 1 \('B'\): expected shape \(1000,\), got \(999,\)"),
        ((np.ones(1000, "float32"), np.ones((1000, 1), "float32"), np.zeros(1000, "float32")),
         r"argument 1 \('B'\): expected 1 dimension"),
        ((np.ones(1000, "float32"),), r"takes 3 arguments \(A, B, C\), got 1"),
        ((np.ones(1000, "float32"), [1.0] * 1000, np.zeros(1000, "float32")), r"argument 1 \('B'\) must be a numpy array"),
    ],
)  # fmt: skip
def test_bad_arguments_are_named_before_any_gpu_is_touched(args: tuple[object, ...], match: str) -> None:
    with pytest.raises(ArgumentError, match=match):
        _vadd()(*args)


def test_tvm_style_calls_without_a_gpu(tmp_path: object) -> None:
    """TVM's way in -- f(dev, ...), vdla.nd arrays, time_evaluator(name, dev, number, repeat) --
    checks the arguments without a GPU and then reports "no CUDA device" (or runs, on a GPU)."""
    f = _vadd()
    a = vdla.nd.array(np.ones(1000, "float32"))
    with pytest.raises(ArgumentError, match=r"built for the GPU \(cuda\), not for cpu\(0\)"):
        f(vdla.cpu(0), a, a, vdla.nd.empty((1000,)))
    with pytest.raises(ArgumentError, match=r"argument 2 \('C'\): expected shape \(1000,\), got \(999,\)"):
        f(vdla.cuda(0), a, a, vdla.nd.empty((999,)))  # an NDArray's shape is named before the GPU is asked for
    with pytest.raises(ArgumentError, match=r"argument 1 \('B'\): expected shape"):
        f.time_evaluator(f.entry_name, vdla.cuda(0), number=2)(a, vdla.nd.empty((3,)), a)
    with pytest.raises(AttributeError, match="has no function 'nope'"):
        f.time_evaluator("nope", vdla.cuda(0))
    with pytest.raises(ArgumentError, match="not for cpu"):
        f.time_evaluator(f.entry_name, vdla.cpu(0))
    with pytest.raises(ValueError, match="repeat"):
        f.time_evaluator(f.entry_name, vdla.cuda(0), number=1, repeat=0)
    from vdla.runtime.module import ModuleLoadError

    with pytest.raises(ModuleLoadError, match="cuda module; save it as .ptx"):
        f.export_library(str(tmp_path) + "/f.so")
    f.save(str(tmp_path) + "/f.ptx")
    assert open(str(tmp_path) + "/f.ptx").read() == f.get_source("ptx")
    if runtime.device_count() == 0:
        for run in (lambda: f(vdla.cuda(0), a, a, vdla.nd.empty((1000,))),
                    lambda: f.time_evaluator(f.entry_name, vdla.cuda(0), number=2, repeat=2)(a, a, vdla.nd.empty((1000,)))):  # fmt: skip
            with pytest.raises(runtime.NoCudaDevice, match="no CUDA device"):
                run()


# ---------------------------------------------------------------------------- on a GPU


@needs_gpu
def test_nd_arrays_on_the_gpu_and_on_the_cpu(rng: np.random.Generator) -> None:
    """GPU NDArrays are used in place; CPU NDArrays are copied in and their results written back."""
    f = _vadd()
    x, y = rng.standard_normal(1000).astype("float32"), rng.standard_normal(1000).astype("float32")
    dev = vdla.cuda(0)
    a, b, c = vdla.nd.array(x, dev), vdla.nd.array(y, dev), vdla.nd.empty((1000,), "float32", dev)
    f(a, b, c)
    np.testing.assert_allclose(c.numpy(), x + y, rtol=1e-6)
    c2 = vdla.nd.empty((1000,))  # on the CPU
    f(dev, vdla.nd.array(x), b, c2)
    np.testing.assert_allclose(c2.numpy(), x + y, rtol=1e-6)
    r = f.time_evaluator(f.entry_name, dev, number=5, repeat=3, min_repeat_ms=1)(a, b, c)
    assert len(r.results) == 3 and 0 < r.min <= r.mean




@needs_gpu
def test_vector_add_on_the_gpu(rng: np.random.Generator) -> None:
    f = _vadd()
    a, b = rng.standard_normal(1000).astype("float32"), rng.standard_normal(1000).astype("float32")
    c = np.zeros(1000, "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


@needs_gpu
def test_matmul_with_device_arrays_and_timing(rng: np.random.Generator) -> None:
    dev = runtime.get_device(0)
    A, B, C = schedules.matmul(256, 256, 128)
    f = vdla.build(schedules.schedule_matmul(C), [A, B, C], target=f"cuda -arch={dev.arch}")
    a, b = rng.standard_normal((256, 128)).astype("float32"), rng.standard_normal((128, 256)).astype("float32")
    da, db, dc = runtime.to_device(a), runtime.to_device(b), runtime.empty((256, 256), "float32")
    f(da, db, dc)
    np.testing.assert_allclose(dc.numpy(), a @ b, rtol=1e-4, atol=1e-3)
    assert f.time_evaluator(f.entry_name, vdla.cuda(0), number=3, repeat=2)(da, db, dc).mean > 0


@needs_gpu
def test_softmax_runs_its_kernels_in_order(rng: np.random.Generator) -> None:
    x = te.placeholder((6, 100), name="x")
    y = topi.softmax(x)
    f = vdla.build(schedules.schedule_softmax(y), [x, y], target="cuda")
    xa = rng.standard_normal((6, 100)).astype("float32")
    out = np.zeros((6, 100), "float32")
    f(xa, out)
    e = np.exp(xa - xa.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5)


#: A kernel that reads 8 GiB below its input: the index comes from data, so no bounds check can
#: refuse it at compile time. Run in a process of its own, since a fault leaves CUDA's context
#: unusable until the process ends; the process prints what each step raised.
FAULT = """
import numpy as np, vdla
from vdla.compiler import te
A = te.placeholder((64,), name="A")
idx = te.placeholder((64,), name="idx", dtype="int32")
C = te.compute((64,), lambda i: A[idx[i]], name="C")
s = te.create_schedule(C.op)
s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.x"))
f = vdla.build(s, [A, idx, C], target="cuda", name="oob")
for step in ("fault", "after"):
    try:
        f(np.ones(64, "float32"), np.full(64, -(2**31), "int32"), np.zeros(64, "float32"))
        print(step, "ran")
    except Exception as e:
        print(step, type(e).__name__, e)
"""


@needs_gpu
def test_a_faulting_kernel_is_reported_by_name() -> None:
    res = subprocess.run([sys.executable, "-c", FAULT], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    fault, after = res.stdout.splitlines()[-2:]
    assert fault.startswith("fault CudaError kernel 'oob_kernel' failed on ") and "ILLEGAL_ADDRESS" in fault, fault
    # the next call says why the GPU cannot run it, naming the kernel, not a bare driver code
    assert after.startswith("after CudaError ") and "since kernel 'oob_kernel' failed" in after, after
    assert "start a new process" in after


@needs_gpu
def test_device_arrays_that_overlap_are_refused() -> None:
    d = runtime.to_device(np.ones(1000, "float32"))
    with pytest.raises(ArgumentError, match="arguments 'A' and 'C' share GPU memory"):
        _vadd()(d, runtime.to_device(np.ones(1000, "float32")), d)
