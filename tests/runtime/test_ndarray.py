"""vdla.device / cpu / cuda / ext_dev and vdla.nd arrays (TVM's tvm.device, tvm.nd)."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
from vdla.runtime.ndarray import DLDevice, NDArrayError, host_view


@pytest.mark.parametrize(
    "name, kind, code",
    [("llvm", "cpu", 1), ("cpu", "cpu", 1), ("llvm -mcpu=native", "cpu", 1), ("cuda", "cuda", 2),
     ("ext_dev", "ext_dev", 12), ("vdla", "ext_dev", 12)],
)
def test_device_names(name, kind, code):
    d = vdla.device(name, 0)
    assert (d.kind, d.device_type, d.device_id) == (kind, code, 0)
    assert repr(d) == f"{kind}(0)"
    assert d == DLDevice(code, 0) and hash(d) == hash(DLDevice(code, 0))


def test_shorthands_and_existence():
    assert vdla.cpu() == vdla.device("cpu") and vdla.cpu().exist
    assert vdla.ext_dev() == vdla.device("ext_dev") and vdla.ext_dev().exist
    gpu = vdla.cuda(0)
    assert repr(gpu) == "cuda(0)"
    assert isinstance(gpu.exist, bool)  # describable with or without a GPU
    # the driver's name for the GPU ("NVIDIA H200"), or the reason there is none
    assert gpu.device_name == "no CUDA GPU" if not gpu.exist else gpu.device_name.startswith("NVIDIA")
    assert not vdla.cuda(99).exist


@pytest.mark.parametrize("bad", ["tpu", "", 7, None])
def test_unknown_device_is_named(bad):
    with pytest.raises(NDArrayError):
        vdla.device(bad)


def test_array_roundtrip_and_attributes():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype("float32")
    a = vdla.nd.array(x, vdla.cpu(0))
    assert a.shape == (3, 4) and a.dtype == "float32" and a.device == vdla.cpu(0)
    np.testing.assert_array_equal(a.numpy(), x)
    x[0, 0] = 99  # the array holds a copy
    assert a.numpy()[0, 0] != 99
    got = a.numpy()
    got[1, 1] = 7  # and .numpy() gives one
    assert a.numpy()[1, 1] != 7
    b = vdla.nd.array([[1, 2], [3, 4]])
    assert b.dtype == "int64" and b.device == vdla.cpu(0)


def test_empty_copyfrom_copyto():
    e = vdla.nd.empty((2, 3), "int8", vdla.ext_dev())
    assert e.shape == (2, 3) and e.dtype == "int8" and e.device == vdla.ext_dev()
    e.copyfrom(np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(e.numpy(), np.arange(6, dtype=np.int8).reshape(2, 3))
    c = e.copyto(vdla.cpu())
    assert c.device == vdla.cpu() and c.dtype == "int8"
    np.testing.assert_array_equal(c.numpy(), e.numpy())
    d = vdla.nd.empty((2, 3), "int8")
    e.copyto(d)
    np.testing.assert_array_equal(d.numpy(), e.numpy())
    d[:] = np.ones((2, 3))
    assert d.numpy().sum() == 6
    with pytest.raises(NDArrayError, match=r"shape \(2, 3\).*\(3, 2\)"):
        d.copyfrom(np.zeros((3, 2)))
    with pytest.raises(NDArrayError, match="dtype"):
        vdla.nd.empty((2,), "notatype")


class _Foreign:
    """An array from another runtime (e.g. the CUDA back end's): only .numpy() and copyfrom."""

    def __init__(self, x):
        self.x = x

    def numpy(self):
        return self.x.copy()

    def copyfrom(self, src):
        self.x[...] = src


def test_host_view():
    x = np.zeros(3)
    assert host_view(x) == (x, None)
    nd = vdla.nd.array(np.zeros(3))
    view, back = host_view(nd)
    assert back is None and view is nd._data  # the kernel writes the NDArray's storage
    f = _Foreign(np.zeros(3))
    view, back = host_view(f)
    view[:] = 5
    back()
    np.testing.assert_array_equal(f.x, 5)
    assert host_view(3) == (3, None)
