"""Each loop-IR pass on its own: simplify, storage_flatten, vectorize, unroll, and lower's trace."""
from __future__ import annotations

from vdla.compiler import te
from vdla.compiler.schedule.loop_nest import schedule_to_stmt
from vdla.compiler.tir.nodes import (
    Buffer,
)
from vdla.compiler.tir.passes import simplify, storage_flatten
from vdla.compiler.tir.printer import to_str


def test_storage_flatten_offsets_region() -> None:
    A = te.placeholder((6, 10), name="A")
    B = te.compute((6, 10), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((6, 10), lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    stmt = schedule_to_stmt(s, [A, C])
    text = to_str(stmt)
    assert "realize B[i:1, 0:10]" in text
    bufs = {t: Buffer(t.name, t.dtype, list(t.shape)) for t in (A, C)}
    flat = simplify(storage_flatten(stmt, bufs))
    text = to_str(flat)
    assert "allocate B[float32 * 1, 10]" in text
    assert "B[j] = (A[((i * 10) + j)] + 1.0f)" in text
