"""vdla.runtime.cuda_driver through TVM's API: ``vdla.cuda(0).exist`` asks the real driver, and a cuda
NDArray lives in GPU memory -- so without a GPU, making one is the clear "no CUDA device" error."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
from vdla.runtime import cuda_driver as rt
from vdla.runtime.ndarray import CudaNDArray, host_view

HAS_GPU = rt.device_count() > 0
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU on this machine (the driver or device is absent)")
no_gpu = pytest.mark.skipif(HAS_GPU, reason="this machine has a GPU")


def test_exist_is_the_drivers_device_count() -> None:
    n = rt.device_count()
    assert [vdla.cuda(i).exist for i in range(n + 1)] == [True] * n + [False]
    assert vdla.device("cuda", 0).exist == (n > 0) == vdla.runtime.module.enabled("cuda")


@no_gpu
@pytest.mark.parametrize(
    "make",
    [
        lambda: vdla.nd.array(np.ones(4, "float32"), vdla.cuda(0)),
        lambda: vdla.nd.array(np.ones(4, "float32"), "cuda"),
        lambda: vdla.nd.empty((2, 3), "float32", vdla.device("cuda", 0)),
        lambda: vdla.nd.array(np.ones(4, "float32")).copyto(vdla.cuda(0)),
    ],
)  # fmt: skip
def test_no_gpu_a_cuda_array_is_a_clear_error(make: object) -> None:
    with pytest.raises(rt.NoCudaDevice, match="no CUDA device"):
        make()  # type: ignore[operator]
    assert vdla.cuda(0).device_name == "no CUDA GPU"
    vdla.cuda(0).sync()  # nothing queued anywhere: not an error


# ---------------------------------------------------------------------------- on a GPU


@needs_gpu
def test_cuda_ndarray_round_trip() -> None:
    x = np.random.default_rng(1234).standard_normal((3, 5)).astype("float32")
    a = vdla.nd.array(x, vdla.cuda(0))
    assert isinstance(a, CudaNDArray) and a.device == vdla.cuda(0)
    assert (a.shape, a.dtype, a.ndim, a.size) == ((3, 5), "float32", 2, 15)
    np.testing.assert_array_equal(a.numpy(), x)
    a[:] = 2 * x
    np.testing.assert_array_equal(a.numpy(), 2 * x)
    b = a.copyto(vdla.cpu(0))
    assert not isinstance(b, CudaNDArray)
    np.testing.assert_array_equal(b.numpy(), 2 * x)
    host, back = host_view(a)  # a CPU function computes on a host copy, written back after
    host += 1
    assert back is not None
    back()
    np.testing.assert_array_equal(a.numpy(), 2 * x + 1)
    assert vdla.cuda(0).device_name == rt.get_device(0).name
