"""Loop partitioning (tir/passes/partition.py): a serial loop splits where a guard linear in its
variable flips, the pieces lose the guards; ragged register tiles built for the CPU agree with
numpy for every width and tile (hypothesis), and their hot loops carry no guard."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vdla
from vdla.compiler import te, topi
from vdla.compiler.targets.llvm import schedules
from vdla.compiler.targets.llvm.schedules.conv2d import NCHWcConfig
from vdla.compiler.tir.nodes import Buffer, BufferStore, For, IfThenElse, IntImm, Var, make_const
from vdla.compiler.tir.passes.partition import MAX_PIECES, partition_loops
from vdla.compiler.tir.visitor import walk


def _loop(cond_of, extent: int = 10, kind: str = "serial") -> For:
    i = Var("i")
    buf = Buffer("A", "int32", [IntImm(extent)])
    body = IfThenElse(cond_of(i), BufferStore(buf, i, make_const(1, "int32")))
    return For(i, IntImm(0), IntImm(extent), kind, body)


def _loops(s) -> list[tuple[int, int, int]]:
    """(min, extent, guards inside) of each loop."""
    return [(n.min.value, n.extent.value, sum(isinstance(m, IfThenElse) for m in walk(n.body)))
            for n in walk(s) if isinstance(n, For)]


@pytest.mark.parametrize(("cond", "want"), [
    (lambda i: i * 3 + 1 < 20, [(0, 7, 0)]),        # true for i <= 6: the rest is dropped
    (lambda i: i >= 4, [(4, 6, 0)]),                 # false before 4
    (lambda i: (i >= 1) & (i < 9), [(1, 8, 0)]),     # a padded border on each side
    (lambda i: i * 2 <= 100, [(0, 10, 0)]),          # always true: simplify alone
])
def test_guards_split_the_loop_and_vanish(cond, want) -> None:
    assert _loops(partition_loops(_loop(cond))) == want


def test_what_it_leaves_alone() -> None:
    par = partition_loops(_loop(lambda i: i < 7, kind="parallel"))  # one parallel region stays one
    assert _loops(par) == [(0, 10, 1)]
    j = Var("j")
    other = partition_loops(_loop(lambda i: i + j < 7))  # depends on another variable
    assert _loops(other) == [(0, 10, 1)]
    many = partition_loops(_loop(lambda i: (i >= 2) & (i < 4) & (i != 5) & (i < 8) & (i >= 1)))
    assert len(_loops(many)) == 1 and MAX_PIECES == 3  # 4 cuts would be 5 copies of the body


@settings(max_examples=25, deadline=None)
@given(width=st.integers(2, 13), cols=st.integers(2, 6), k=st.sampled_from([1, 3]))
def test_ragged_register_tiles_match_numpy(width: int, cols: int, k: int) -> None:
    print(f"width {width} cols {cols} kernel {k}")
    cb, ob = 4, 8
    x = te.placeholder((1, 2, width, width, cb), name="data")
    w = te.placeholder((1, 2, k, k, cb, ob), name="kernel")
    y = topi.relu(topi.conv2d_NCHWc(x, w, 1, k // 2))
    s = schedules.schedule_conv2d_NCHWc(y, NCHWcConfig(reg_n=cols, unroll_kw=True))
    f = vdla.build(s, [x, w, y], target="llvm", name=f"ragged_{width}_{cols}_{k}")
    if width % cols:  # a ragged tile: no guard left inside the reduction loops
        inner = [n for n in walk(f.lowered.body) if isinstance(n, For) and n.var.name == "rco"]
        assert inner and not any(isinstance(m, IfThenElse) for n in inner for m in walk(n.body))
    rng = np.random.default_rng(width * 100 + cols)
    a = rng.standard_normal((1, 2, width, width, cb)).astype("float32")
    b = rng.standard_normal((1, 2, k, k, cb, ob)).astype("float32")
    out = np.empty((1, 1, width, width, ob), "float32")
    f(a, b, out)
    pad = k // 2
    ap = np.pad(a, ((0, 0), (0, 0), (pad, pad), (pad, pad), (0, 0)))
    want = np.zeros_like(out)
    for ky in range(k):
        for kx in range(k):
            win = ap[:, :, ky:ky + width, kx:kx + width, :]  # (1, 2, W, W, cb)
            want[:, 0] += np.einsum("ncyxi,cio->nyxo", win, b[0, :, ky, kx])
    np.testing.assert_allclose(out, np.maximum(want, 0), rtol=1e-5, atol=1e-4)
