"""Virtual threads: ``bind(axis, te.thread_axis("vthread"/"cthread"))`` and the
``inject_virtual_thread`` pass (interleaved thread bodies, replicated private buffers)."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler import build, lower, te
from vdla.compiler.tir.nodes import Allocate, AttrStmt, Buffer, BufferLoad, BufferStore, For, IntImm, Seq, Var
from vdla.compiler.tir.passes import inject_virtual_thread
from vdla.compiler.tir.passes.vthread import VirtualThreadError
from vdla.compiler.tir.visitor import walk


def _matmul_vthread(tag: str, nthread: int, n: int = 12, m: int = 32, k: int = 9):  # type: ignore[no-untyped-def]
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    i, j = C.op.axis
    vt, ir_ = s[C].split(i, nparts=nthread)
    jo, ji = s[C].split(j, factor=8)
    s[C].reorder(jo, vt, ir_, ji)
    s[C].bind(vt, te.thread_axis(tag))
    s[C].vectorize(ji)
    s[CC].compute_at(s[C], vt)  # one private accumulator tile per virtual thread
    ic, jc = s[CC].op.axis
    s[CC].reorder(s[CC].op.reduce_axis[0], ic, jc)
    s[CC].vectorize(jc)
    return s, A, B, C


@pytest.mark.parametrize("tag", ["vthread", "cthread"])
@pytest.mark.parametrize("nthread", [2, 3, 20])
def test_vthread_matmul_equals_numpy(tag: str, nthread: int) -> None:
    n = 12 if nthread < 20 else 40
    s, A, B, C = _matmul_vthread(tag, nthread, n=n)
    f = lower(s, [A, B, C])
    assert not any(isinstance(x, For) and x.kind == "thread_binding" for x in walk(f.body))
    assert any(isinstance(x, AttrStmt) and x.key == "virtual_thread" for x in walk(f.body))
    # the local tile is replicated once per thread and hoisted out of the thread loop
    allocs = [x for x in walk(f.body) if isinstance(x, Allocate) and x.buffer.name == "C.local"]
    assert len(allocs) == 1
    per_thread = (n + nthread - 1) // nthread * 8
    assert allocs[0].buffer.shape[0].value == per_thread * nthread
    g = build(s, [A, B, C])
    rng = np.random.default_rng(nthread)
    a = rng.standard_normal((n, 9)).astype("float32")
    b = rng.standard_normal((9, 32)).astype("float32")
    c = np.full((n, 32), np.nan, "float32")
    g(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_threads_are_interleaved_inside_shared_loops() -> None:
    """The reduction loop is kept once; both threads' updates sit inside it, unrolled."""
    s, A, B, C = _matmul_vthread("cthread", 2, n=4, m=8, k=5)
    text = str(lower(s, [A, B, C]))
    assert text.count("for (r, 0, 5)") == 1, text
    f = lower(s, [A, B, C])
    (loop,) = [x for x in walk(f.body) if isinstance(x, For) and x.var.name == "r"]
    stores = [x for x in walk(loop.body) if isinstance(x, BufferStore)]
    offsets = {str(x.index) for x in stores}
    assert len(stores) >= 2 and len(offsets) == len(stores)  # one store per thread, distinct tiles


def test_pass_on_hand_written_ir_and_errors() -> None:
    out = Buffer("out", "int32", [IntImm(8)])
    tmp = Buffer("tmp", "int32", [IntImm(4)])
    vt, i, i2 = Var("vt"), Var("i"), Var("i2")
    # vthread vt in [0, 2): allocate tmp[4]; tmp[i] = 10 i + vt; out[4 vt + i2] = tmp[i2]
    fill = For(i, IntImm(0), IntImm(4), "serial", BufferStore(tmp, i, i * 10 + vt))
    copy = For(i2, IntImm(0), IntImm(4), "serial", BufferStore(out, vt * 4 + i2, BufferLoad(tmp, i2, "int32")))
    body = Allocate(tmp, Seq([fill, copy]))
    res = inject_virtual_thread(For(vt, IntImm(0), IntImm(2), "thread_binding", body, "vthread"))
    (alloc,) = [x for x in walk(res) if isinstance(x, Allocate)]
    assert alloc.buffer.shape[0].value == 8  # tmp depends on vt: one copy per thread
    assert sum(isinstance(x, For) for x in walk(res)) == 2  # fill and copy loops kept once each
    bad = For(vt, IntImm(0), Var("n"), "thread_binding", body, "cthread")
    with pytest.raises(VirtualThreadError, match="constant extent"):
        inject_virtual_thread(bad)
