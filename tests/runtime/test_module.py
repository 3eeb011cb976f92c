"""TVM's Module methods shared by built functions: BenchmarkResult, time_calls, load_module errors."""

from __future__ import annotations

import pytest

import vdla
from vdla.runtime.module import BenchmarkResult, ModuleLoadError, load_module, time_calls


def test_benchmark_result_statistics():
    r = BenchmarkResult((1.0, 2.0, 6.0))
    assert (r.mean, r.median, r.min, r.max) == (3.0, 2.0, 1.0, 6.0)
    assert r.std == pytest.approx(((4 + 1 + 9) / 3) ** 0.5)
    assert "mean (ms)" in str(r)


def test_time_calls_counts_calls_and_uses_device_time():
    calls = []
    ev = time_calls(lambda *a: calls.append(a), number=3, repeat=2)
    res = ev(1, 2)
    assert len(calls) == 6 and calls[0] == (1, 2) and len(res.results) == 2
    dev = time_calls(lambda: None, number=4, repeat=1, device_seconds=lambda: 0.5)
    assert dev().mean == 0.5  # the device's time per call, not the host's
    with pytest.raises(ValueError, match="number"):
        time_calls(lambda: None, number=0, repeat=1)


def test_load_module_names_the_problem(tmp_path):
    with pytest.raises(ModuleLoadError, match="no such file"):
        load_module(tmp_path / "missing.so")
    p = tmp_path / "native.so"
    p.write_bytes(b"\x7fELF" + b"\0" * 60)
    with pytest.raises(ModuleLoadError, match="not a vdla module file"):
        vdla.runtime.load_module(p)


def test_runtime_enabled():
    assert vdla.runtime.enabled("llvm") and vdla.runtime.enabled("ext_dev")
    assert not vdla.runtime.enabled("rpc")
    assert vdla.runtime.enabled("cuda") == vdla.cuda().exist
