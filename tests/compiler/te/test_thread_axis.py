"""TVM's ``te.thread_axis(dom=None, tag="", name="")`` and ``Var.equal``: the domain form, the tag
given first as a string, names, and the one-line errors for a missing tag or an axis too long."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
from vdla import te
from vdla.compiler.schedule.primitives import ScheduleError
from vdla.compiler.targets.cuda.lower import threads_as_loops
from vdla.compiler.te.operation import TensorError
from vdla.compiler.tir.nodes import Cmp, IntImm, Var


def test_string_first_is_the_tag() -> None:
    tx = te.thread_axis("threadIdx.x")
    assert (tx.thread_tag, tx.var.name, tx.dom) == ("threadIdx.x", "threadIdx.x", None)
    vx = te.thread_axis("vthread", name="vx")
    assert (vx.thread_tag, vx.var.name) == ("vthread", "vx")
    assert te.thread_axis(tag="blockIdx.y").thread_tag == "blockIdx.y"


def test_domain_and_tag() -> None:
    tx = te.thread_axis((0, 8), "threadIdx.x")
    assert tx.thread_tag == "threadIdx.x" and tx.iter_type == "thread"
    assert isinstance(tx.dom.extent, IntImm) and (tx.dom.min.value, tx.dom.extent.value) == (0, 8)
    vy = te.thread_axis((0, 2), "vthread", name="vy")
    assert (vy.var.name, vy.dom.extent.value) == ("vy", 2)


def test_bad_thread_axes() -> None:
    with pytest.raises(TensorError, match="give a tag"):
        te.thread_axis((0, 8))
    with pytest.raises(TensorError, match="tag is given twice"):
        te.thread_axis("threadIdx.x", tag="threadIdx.y")
    with pytest.raises(TensorError, match="empty"):
        te.thread_axis((0, 0), "threadIdx.x")


def _vadd(n: int, factor: int, dom: int) -> tuple[te.Schedule, list[te.Tensor]]:
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=factor)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis((0, dom), "threadIdx.x"))
    return s, [A, C]


def test_bound_loop_within_the_domain_runs(rng: np.random.Generator) -> None:
    s, args = _vadd(100, 32, 32)
    f = vdla.build(threads_as_loops(vdla.lower(s, args)), target="llvm")
    a = rng.random(100, dtype=np.float32)
    c = np.zeros(100, np.float32)
    f(a, c)
    np.testing.assert_allclose(c, a * 2)


def test_bound_loop_longer_than_the_domain_is_named() -> None:
    s, args = _vadd(100, 64, 32)
    with pytest.raises(ScheduleError, match=r"axis 'i.inner' has extent 64 but is bound to threadIdx.x .*extent 32"):
        vdla.lower(s, args)


def test_var_equal_is_an_expression() -> None:
    tx = te.thread_axis("threadIdx.x")
    e = tx.var.equal(0)
    assert isinstance(e, Cmp) and e.op == "eq" and e.dtype == "bool"
    assert e.a is tx.var and isinstance(e.b, IntImm) and e.b.value == 0
    v = Var("v")
    assert v.equal(v + 0).op == "eq"
