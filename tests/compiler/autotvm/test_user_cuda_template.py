"""A cuda template written as TVM's "tune_conv2d_cuda" tutorial writes one: a name that is not a
symbol ("tutorial/..."), no target suffix, the task made for ``target="cuda"``, built untuned under
``apply_history_best(None)`` and ``with Target("cuda")``, and its points built and proven by
ptxas on the cluster's workers."""

from __future__ import annotations

import cloudpickle
import numpy as np
import pytest
from support.cuda import needs_ptxas

import vdla
from vdla import autotvm, te, topi
from vdla.compiler.autotvm import measure_cuda as M
from vdla.compiler.autotvm.measure import LocalBuilder, MeasureErrorNo, MeasureInput, func_name, measure_option
from vdla.compiler.autotvm.registry import jsonable
from vdla.compiler.targets.cuda.lower import threads_as_loops
from vdla.compiler.topi.testing import conv2d_nchw_python

ARGS = (1, 6, 6, 16, 8, 3, 3, (1, 1), (1, 1))  # N, H, W, CO, CI, KH, KW, stride, padding


@autotvm.template("test/conv2d_no_batching")
def conv2d_no_batching(N, H, W, CO, CI, KH, KW, stride, padding):  # type: ignore[no-untyped-def]
    """The tutorial's template, shorter: output axes split onto blocks, threads and inner loops,
    the padded input staged in shared memory per block, and the unrolling tuned."""
    data = te.placeholder((N, CI, H, W), name="data")
    kernel = te.placeholder((CO, CI, KH, KW), name="kernel")
    conv = topi.nn.conv2d_nchw(data, kernel, stride, padding, dilation=1, out_dtype="float32")
    s = te.create_schedule([conv.op])
    n, f, y, x = s[conv].op.axis
    cfg = autotvm.get_config()
    cfg.define_split("tile_f", f, num_outputs=3)
    cfg.define_split("tile_y", y, num_outputs=3)
    cfg.define_knob("auto_unroll_max_step", [0, 512])
    pad_data = s[conv].op.input_tensors[0]  # TVM's property, indexed
    s[pad_data].compute_inline()
    AA = s.cache_read(pad_data, "shared", [conv])
    bf, tf, fi = cfg["tile_f"].apply(s, conv, f)
    by, ty, yi = cfg["tile_y"].apply(s, conv, y)
    s[conv].bind(bf, te.thread_axis("blockIdx.y"))
    s[conv].bind(by, te.thread_axis("blockIdx.x"))
    s[conv].bind(tf, te.thread_axis("threadIdx.y"))
    s[conv].bind(ty, te.thread_axis("threadIdx.x"))
    s[conv].reorder(n, bf, by, tf, ty, fi, yi, x)
    s[AA].compute_at(s[conv], by)
    fused = s[AA].fuse(*s[AA].op.axis)
    t1, fused = s[AA].split(fused, nparts=cfg["tile_f"].size[1])
    t2, fused = s[AA].split(fused, nparts=cfg["tile_y"].size[1])
    s[AA].bind(t1, te.thread_axis("threadIdx.y"))
    s[AA].bind(t2, te.thread_axis("threadIdx.x"))
    s[conv].pragma(n, "auto_unroll_max_step", cfg["auto_unroll_max_step"].val)
    return s, [data, kernel, conv]


cloudpickle.register_pickle_by_value(__import__(__name__))  # the workers cannot import this test module


def _point(task: autotvm.Task, **knobs: object) -> autotvm.ConfigEntity:
    return task.config_space.get(task.config_space.index_of(knobs))


def test_task_of_a_name_that_is_no_symbol() -> None:
    task = autotvm.task.create("test/conv2d_no_batching", args=ARGS, target="cuda")
    assert task.kind == "cuda" and task.workload == ["test/conv2d_no_batching", jsonable(list(ARGS))]
    assert task.config_space.knob_names() == ["tile_f", "tile_y", "auto_unroll_max_step"]
    assert func_name(task.name) == "test_conv2d_no_batching" and func_name("conv2d_nchw.cuda") == "conv2d_nchw"


@needs_ptxas
def test_untuned_build_under_an_empty_history_is_the_fallback() -> None:
    """The tutorial before tuning: ``apply_history_best(None)`` knows no record, so the template
    builds its first choices; ``tvm.build(s, args)`` takes the target of the ``with``."""
    task = autotvm.task.create("test/conv2d_no_batching", args=ARGS, target="cuda")
    ctx = autotvm.apply_history_best(None)
    assert len(ctx) == 0 and ctx.query(task.target, task.workload) is None
    with autotvm.apply_history_best(None), vdla.target.Target("cuda"):
        s, arg_bufs = conv2d_no_batching(*ARGS)
        func = vdla.build(s, arg_bufs)
    assert func.kernels[0].block == (1, 1, 1)  # every split's first choice: all of it outside the threads
    rng = np.random.default_rng(0)
    a = rng.random((1, 8, 6, 6), dtype=np.float32)
    w = rng.random((16, 8, 3, 3), dtype=np.float32)
    c = np.zeros((1, 16, 6, 6), np.float32)
    vdla.build(threads_as_loops(vdla.lower(s, arg_bufs)), target="llvm")(a, w, c)
    np.testing.assert_allclose(c, conv2d_nchw_python(a, w, (1, 1), (1, 1)), rtol=1e-5)


@needs_ptxas
def test_points_build_on_the_workers(dask_client) -> None:  # type: ignore[no-untyped-def]
    """The tuning's build half, which needs no GPU: the template travels to the workers, its
    points build under a symbol made of its name, ptxas proves them, and an invalid one is a record."""
    args = (1, 6, 6, 2048, 8, 3, 3, (1, 1), (1, 1))  # enough output channels for a block of too many threads
    task = autotvm.task.create("test/conv2d_no_batching", args=args, target="cuda -arch=sm_90")
    good = _point(task, tile_f=[256, 8, 1], tile_y=[1, 6, 1], auto_unroll_max_step=512)
    bad = _point(task, tile_f=[1, 256, 8], tile_y=[1, 6, 1], auto_unroll_max_step=0)  # 1536 threads
    ok, err = M.build_batch([MeasureInput(task, good), MeasureInput(task, bad)],
                            measure_option(LocalBuilder(timeout=60), client=dask_client))
    assert isinstance(ok, M.CudaBuild), getattr(ok, "error_msg", ok)
    assert [k.name for k in ok.kernels] == ["test_conv2d_no_batching_kernel"]
    assert ok.kernels[0].block == (6, 8, 1) and ok.kernels[0].grid == (1, 256, 1) and ok.registers > 0
    assert err.error_no == MeasureErrorNo.COMPILE_DEVICE and err.error_msg.startswith("too many threads per block")


def test_tuning_without_a_gpu_is_one_line(dask_client) -> None:  # type: ignore[no-untyped-def]
    if M._probe_gpu():
        pytest.skip("this machine has a GPU")
    task = autotvm.task.create("test/conv2d_no_batching", args=ARGS, target="cuda")
    tuner = autotvm.tuner.XGBTuner(task)
    with pytest.raises(M.NoCudaDevice) as e:
        tuner.tune(n_trial=2, measure_option=autotvm.measure_option(
            builder=autotvm.LocalBuilder(), runner=autotvm.LocalRunner(repeat=3, min_repeat_ms=100, timeout=4),
            client=dask_client))
    assert str(e.value) == M.NO_GPU
