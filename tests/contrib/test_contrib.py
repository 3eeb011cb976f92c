"""vdla.contrib: tempdir, clang (found on PATH or a clear error), the cblas extern."""

from __future__ import annotations

import os

import numpy as np
import pytest

import vdla
from vdla import te
from vdla.contrib import cblas, clang, utils


def test_tempdir():
    t = utils.tempdir()
    path = t.relpath("x.txt")
    with open(path, "w") as fh:
        fh.write("1")
    assert t.listdir() == ["x.txt"]
    t.remove()
    assert not os.path.exists(path)


def test_clang_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(clang.shutil, "which", lambda name: None)
    assert clang.find_clang() is None
    with pytest.raises(RuntimeError, match="no clang on PATH"):
        clang.create_llvm("int f() { return 0; }")


@pytest.mark.parametrize("transa, transb", [(False, False), (True, False), (False, True), (True, True)])
def test_cblas_matmul(transa, transb):
    rng = np.random.default_rng(8)
    print("seed 8")
    a = rng.standard_normal((5, 7) if not transa else (7, 5)).astype("float32")
    b = rng.standard_normal((7, 3) if not transb else (3, 7)).astype("float32")
    A = te.placeholder(a.shape, name="A")
    B = te.placeholder(b.shape, name="B")
    C = cblas.matmul(A, B, transa, transb)
    D = te.compute(C.shape, lambda i, j: C[i, j] * 2, name="D")
    f = vdla.build(te.create_schedule(D.op), [A, B, D], "llvm")
    d = vdla.nd.empty((5, 3), "float32")
    f(a, b, d)
    want = (a.T if transa else a) @ (b.T if transb else b) * 2
    np.testing.assert_allclose(d.numpy(), want, rtol=1e-5, atol=1e-5)
