"""Built kernels called in order by one JIT-compiled function (targets/llvm/sequence.py), against numpy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import vdla
from vdla import te
from vdla.compiler.targets.llvm.module import BuiltFunction
from vdla.compiler.targets.llvm.sequence import Call, View, compile_sequence, sequence_ir


def _built(name: str, fn: Callable[[Any, Any], Any]) -> BuiltFunction:
    a = te.placeholder((4, 6), "float32", name="a")
    b = te.placeholder((4, 6), "float32", name="b")
    c = te.compute((4, 6), lambda i, j: fn(a[i, j], b[i, j]), name="c")
    return vdla.build(te.create_schedule(c.op), [a, b, c], target="llvm", name=name)


def test_calls_and_views_run_in_order() -> None:
    add = _built("seq_add", lambda x, y: x + y)
    mul = _built("seq_mul", lambda x, y: x * y)
    (add_at, add_sig), (mul_at, _) = add.native_entry(), mul.native_entry()
    assert add_sig == [(np.dtype("float32"), (4, 6))] * 3
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((4, 6)).astype("float32") for _ in range(2))
    # slots: 0 a, 1 b, 2 t = a + b, 3 the view of t from row 0 (same pointer), 4 out = t * b
    t, out = np.empty((4, 6), "float32"), np.empty((4, 6), "float32")
    ops = [Call(add_at, (0, 1, 2)), View(2, 0, 3), Call(mul_at, (3, 1, 4))]
    seq = compile_sequence(ops, 5)
    table = seq.slots()
    for s, arr in enumerate((a, b, t)):
        table[s] = arr.ctypes.data
    table[4] = out.ctypes.data
    assert seq(table) is None
    np.testing.assert_array_equal(t, a + b)
    np.testing.assert_array_equal(out, (a + b) * b)
    assert table[3] == table[2]  # the view's slot was written by the sequence
    out[...] = 0
    times = seq(table, timed=True)  # the timed twin: the same work, a time per op
    np.testing.assert_array_equal(out, (a + b) * b)
    assert len(times) == 3 and all(s >= 0 for s in times)
    assert "call void" in sequence_ir(ops, "f") and "getelementptr i8" in sequence_ir(ops, "f")


def test_bad_slots_are_named() -> None:
    with pytest.raises(ValueError, match=r"sequence op 1 .* slot\(s\) \[7\] outside the table of 3"):
        compile_sequence([View(0, 0, 1), View(1, 4, 7)], 3)
    seq = compile_sequence([View(0, 4, 1)], 2)
    table = seq.slots()
    table[0] = 4096
    seq(table)
    assert table[1] == 4100  # the byte offset
