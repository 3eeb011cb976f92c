"""vdla.testing: TVM's checking helpers over NDArrays and numpy arrays."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
import vdla.testing


def test_assert_allclose_accepts_ndarrays():
    x = np.linspace(0, 1, 5).astype("float32")
    vdla.testing.assert_allclose(vdla.nd.array(x), x + 1e-9)
    with pytest.raises(AssertionError):
        vdla.testing.assert_allclose(vdla.nd.array(x), x + 1e-3)
    with pytest.raises(AssertionError):  # shapes must match, no broadcasting
        vdla.testing.assert_allclose(np.zeros((2, 1)), np.zeros((2, 2)))
    vdla.testing.assert_allclose(vdla.nd.array(x), x * 1.01, rtol=0.02)


def test_assert_equal_and_targets():
    vdla.testing.assert_equal(vdla.nd.array([1, 2]), [1, 2])
    with pytest.raises(AssertionError):
        vdla.testing.assert_equal(vdla.nd.array([1, 2]), [1, 3])
    assert vdla.testing.device_enabled("llvm") and vdla.testing.device_enabled(vdla.target.Target("ext_dev"))
    names = [t for t, _ in vdla.testing.enabled_targets()]
    assert "llvm" in names and ("cuda" in names) == vdla.cuda().exist
