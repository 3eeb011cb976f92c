"""The native timing loop behind the CPU kernels' ``time_evaluator``: the calls it makes, the
clock it reads, and which calls of ``time_evaluator`` take it."""

from __future__ import annotations

import ctypes
import time

import numpy as np
import pytest

import vdla
from vdla import te
from vdla.compiler.targets.llvm import timer

_KERNEL2 = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


def _counting_kernel(seen: list[tuple[int, int]], sleep_s: float = 0.0):
    def kernel(a, b):
        seen.append((a, b))
        if sleep_s:
            time.sleep(sleep_s)

    cb = _KERNEL2(kernel)
    return cb, ctypes.cast(cb, ctypes.c_void_p).value


@pytest.mark.parametrize("number,repeat", [(1, 1), (3, 2), (5, 4)])
def test_the_loop_calls_number_times_repeat_with_the_pointers(number, repeat):
    seen: list[tuple[int, int]] = []
    cb, addr = _counting_kernel(seen)
    secs = timer.time_calls(addr, [0x1000, 0x2000], number, repeat)
    assert len(secs) == repeat and all(s > 0 for s in secs)
    assert seen == [(0x1000, 0x2000)] * (number * repeat)


def test_the_clock_is_read_around_each_repeat():
    seen: list[tuple[int, int]] = []
    cb, addr = _counting_kernel(seen, sleep_s=0.002)
    secs = timer.time_calls(addr, [1, 2], number=2, repeat=3)
    # seconds per call: each call sleeps 2 ms (the clock is monotonic, never early)
    assert all(0.002 <= s < 0.5 for s in secs), secs


def test_min_repeat_ms_doubles_number():
    # Calls 1-6 return at once, the later ones take 250 ms: against a 200 ms minimum the first
    # repeat runs 1, 2, then 4 calls (the 7th is slow), the second 1 call (the 8th). The margin
    # is wide, so a loaded machine (a fast call descheduled for a few ms) gives the same count.
    seen: list[tuple[int, int]] = []

    def kernel(a, b):
        seen.append((a, b))
        if len(seen) > 6:
            time.sleep(0.25)

    cb = _KERNEL2(kernel)
    secs = timer.time_calls(ctypes.cast(cb, ctypes.c_void_p).value, [1, 2], number=1, repeat=2, min_repeat_ms=200)
    assert len(seen) == (1 + 2 + 4) + 1, len(seen)
    # seconds per call of the repeat that counted: 4 calls (one slow) and 1 slow call
    assert 0.25 / 4 <= secs[0] < 0.25 and 0.25 <= secs[1] < 1, secs


@pytest.mark.parametrize("number,repeat", [(0, 1), (1, 0), (-2, 3)])
def test_number_and_repeat_must_be_positive(number, repeat):
    with pytest.raises(ValueError, match="must be >= 1"):
        timer.time_calls(1, [1], number, repeat)


def _scale():
    A = te.placeholder((64,), name="A")
    B = te.compute(A.shape, lambda i: A[i] * 3, name="B")
    s = te.create_schedule(B.op)
    return vdla.build(s, [A, B], "llvm", name="scale")


def test_time_evaluator_on_numpy_arrays_loops_natively(monkeypatch):
    f = _scale()
    a = np.arange(64, dtype="float32")
    b = np.zeros(64, "float32")
    calls = []
    real = timer.time_calls
    monkeypatch.setattr(timer, "time_calls", lambda *args, **kw: calls.append(args) or real(*args, **kw))
    r = f.time_evaluator(f.entry_name, number=4, repeat=3)(a, b)
    assert len(r.results) == 3 and all(0 < t < 1 for t in r.results)
    np.testing.assert_array_equal(b, a * 3)  # the kernel really ran on these arrays
    assert len(calls) == 1 and calls[0][1] == [a.ctypes.data, b.ctypes.data]


def test_time_evaluator_on_other_arguments_takes_the_checked_path(monkeypatch):
    f = _scale()
    calls = []
    monkeypatch.setattr(timer, "time_calls", lambda *args, **kw: calls.append(args))
    a = vdla.nd.array(np.ones(64, "float32"))
    b = vdla.nd.array(np.zeros(64, "float32"))
    r = f.time_evaluator(f.entry_name, number=2, repeat=2)(a, b)
    assert len(r.results) == 2 and not calls
    np.testing.assert_array_equal(b.numpy(), 3)
    with pytest.raises(Exception, match="shape"):  # a wrong shape is explained, not timed blindly
        f.time_evaluator(f.entry_name)(np.ones(8, "float32"), np.zeros(8, "float32"))
