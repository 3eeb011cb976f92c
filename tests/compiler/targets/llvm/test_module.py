"""The CPU built function as TVM's Module: NDArray arguments, save / export_library / load_module,
get_source, time_evaluator."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
from vdla import te
from vdla.compiler.targets.llvm.module import ArgumentError
from vdla.runtime.module import ModuleLoadError


def _vadd(symbolic=True):
    n = te.var("n") if symbolic else 16
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] * 2 + B[i], name="C")
    s = te.create_schedule(C.op)
    return vdla.build(s, [A, B, C], "llvm", name="myadd")


class _Foreign:
    """An array of another runtime: only .numpy() and .copyfrom()."""

    def __init__(self, x):
        self.x = x

    def numpy(self):
        return self.x.copy()

    def copyfrom(self, src):
        self.x[...] = src


def test_ndarrays_in_and_out():
    rng = np.random.default_rng(1)
    f = _vadd()
    dev = vdla.cpu(0)
    a = vdla.nd.array(rng.standard_normal(16).astype("float32"), dev)
    b = vdla.nd.array(rng.standard_normal(16).astype("float32"), dev)
    c = vdla.nd.empty((16,), "float32", dev)
    f(a, b, c)
    vdla.testing.assert_allclose(c.numpy(), a.numpy() * 2 + b.numpy(), rtol=1e-6)
    c2 = _Foreign(np.zeros(16, "float32"))
    f(dev, a, b.numpy(), c2)  # a device first, mixed array kinds
    vdla.testing.assert_allclose(c2.x, a.numpy() * 2 + b.numpy(), rtol=1e-6)
    with pytest.raises(ArgumentError, match="dtype"):
        f(a, b, vdla.nd.empty((16,), "float64"))
    with pytest.raises(ArgumentError, match="not for ext_dev"):
        f(vdla.ext_dev(), a, b, c)
    with pytest.raises(ArgumentError, match="takes 3 arguments"):
        f(a, a, b, c)  # an extra array is not taken for a device


def test_export_and_load(tmp_path):
    f = _vadd()
    path = tmp_path / "myadd.so"
    f.export_library(path)
    g = vdla.runtime.load_module(str(path))
    assert g.entry_name == "myadd" and g["myadd"] is g
    a, b = np.arange(7, dtype="float32"), np.ones(7, "float32")
    c = np.zeros(7, "float32")
    g(a, b, c)  # the symbolic size is bound from the arrays after loading too
    np.testing.assert_array_equal(c, a * 2 + b)
    with pytest.raises(ArgumentError, match="'n' was bound to 7"):
        g(a, b, np.zeros(6, "float32"))
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(ModuleLoadError):
        vdla.runtime.load_module(path)


def test_save_formats(tmp_path):
    f = _vadd(symbolic=False)
    f.save(tmp_path / "k.o")
    f.save(tmp_path / "k.ll")
    f.save(tmp_path / "k.s")
    assert (tmp_path / "k.o").read_bytes()[:4] in (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"d\x86\x00\x00")
    assert "define" in (tmp_path / "k.ll").read_text()
    assert f.get_source("asm") == (tmp_path / "k.s").read_text()
    assert "define" in f.get_source()


def test_time_evaluator():
    f = _vadd(symbolic=False)
    a, b, c = (vdla.nd.array(np.ones(16, "float32")) for _ in range(3))
    ev = f.time_evaluator(f.entry_name, vdla.cpu(0), number=3, repeat=2)
    r = ev(a, b, c)
    assert len(r.results) == 2 and 0 < r.mean < 1
    np.testing.assert_array_equal(c.numpy(), 3)
    with pytest.raises(AttributeError, match="no function 'other'"):
        f.time_evaluator("other", vdla.cpu(0))
