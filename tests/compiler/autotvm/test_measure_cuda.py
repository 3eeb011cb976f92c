"""Measuring cuda points: the measuring process that is replaced when it dies or hangs, the one
line said when no worker holds a GPU, builds on Dask workers, and (on a GPU only) a real run."""

from __future__ import annotations

import math
import os
import time

import pytest
from support.cuda import needs_gpu, needs_ptxas

from vdla.compiler.autotvm import measure_cuda as M
from vdla.compiler.autotvm.measure import LocalBuilder, LocalRunner, MeasureErrorNo, MeasureInput, measure_option
from vdla.compiler.autotvm.task import create
from vdla.compiler.autotvm.tuner import RandomTuner

CONV = [[1, 16, 14, 14], [16, 16, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1]]


def test_measuring_process_is_replaced_after_a_crash_or_a_hang() -> None:
    proc = M.MeasureProcess()
    try:
        assert proc.call(math.sqrt, 16.0, timeout=60) == ("ok", 4.0)
        status, msg = proc.call(os._exit, 3, timeout=60)  # the process dies, as after a GPU fault
        assert status == "dead" and "exit code 3" in msg and "replaced" in msg
        assert proc.call(math.sqrt, 9.0, timeout=60) == ("ok", 3.0)
        status, msg = proc.call(time.sleep, 30, timeout=0.5)
        assert status == "timeout" and "replaced" in msg
        assert proc.call(math.sqrt, 4.0, timeout=60) == ("ok", 2.0)
        assert proc.started == 3
        status, msg = proc.call(math.sqrt, -1.0, timeout=60)  # an ordinary error keeps the process
        assert status == "error" and "ValueError" in msg and proc.started == 3
    finally:
        proc.close()


def test_no_gpu_worker_is_one_line(dask_client) -> None:  # type: ignore[no-untyped-def]
    if any(M._probe_gpu() for _ in [0]):
        pytest.skip("this machine has a GPU")
    with pytest.raises(M.NoCudaDevice) as e:
        M.gpu_workers(dask_client)
    assert str(e.value) == "no CUDA device: tuning cuda needs a GPU worker; pass --scheduler ADDRESS"
    task = create("conv2d_nchw.cuda", CONV, "cuda")
    with pytest.raises(M.NoCudaDevice, match="no CUDA device"):
        RandomTuner(task, seed=0).tune(2, measure_option(client=dask_client))


@needs_ptxas
def test_builds_run_on_the_workers(dask_client) -> None:  # type: ignore[no-untyped-def]
    task = create("conv2d_nchw.cuda", CONV, "cuda -arch=sm_90")
    fb = task.fallback()
    bad = dict(fb.knobs(), tile_f=[1, 1, 16, 1], tile_y=[1, 1, 14, 1], tile_x=[1, 1, 14, 1])  # 3136 threads
    ins = [MeasureInput(task, task.config_space.get(fb.index)),
           MeasureInput(task, task.config_space.get(task.config_space.index_of(bad)))]
    good, invalid = M.build_batch(ins, measure_option(LocalBuilder(timeout=60), client=dask_client))
    assert isinstance(good, M.CudaBuild) and good.arch == "sm_90" and good.kernels[0].registers > 0
    assert [a[2] for a in good.args] == [True, True, False]  # data, kernel in; the output out
    assert invalid.error_no == MeasureErrorNo.COMPILE_DEVICE
    assert invalid.error_msg.startswith("too many threads per block")


@needs_gpu
@needs_ptxas
def test_a_point_is_timed_on_the_gpu() -> None:
    from vdla.compiler.targets.cuda.target import present_arch

    task = create("conv2d_nchw.cuda", CONV, f"cuda -arch={present_arch()}")
    cfg = task.config_space.get(task.fallback().index)
    b = M.build_one(None, task.name, task.args, task.target, cfg.to_json_dict(), LocalBuilder(60))
    assert isinstance(b, M.CudaBuild)
    res = M.run_one(b, None, task.name, task.args, task.target, LocalRunner(number=2, repeat=3, min_repeat_ms=1))
    assert res.ok, res.error_msg
    assert len(res.costs) == 3 and all(0 < c < 1e-2 for c in res.costs)
