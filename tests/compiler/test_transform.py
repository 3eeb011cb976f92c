"""PassContext: TVM's `with tvm.transform.PassContext(opt_level=...)` around builds."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
import vdla.vta as vta
from vdla import te
from vdla.compiler.transform import PassContext


def _add():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 3 + 1, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(xi)
    return s, [A, B]


def test_opt_level_reaches_the_cpu_build():
    s, args = _add()
    with vdla.transform.PassContext(opt_level=0) as ctx:
        assert PassContext.current() is ctx
        f0 = vdla.build(s, args, "llvm")
    f3 = vdla.build(s, args, "llvm")
    assert PassContext.current().opt_level == 3
    # opt_level 0 leaves the IR as generated; 3 optimises it (the text changes)
    assert f0.get_source("opt").count("\n") != f3.get_source("opt").count("\n")
    a = np.arange(64, dtype="float32")
    for f in (f0, f3):
        b = np.zeros(64, "float32")
        f(a, b)
        np.testing.assert_array_equal(b, a * 3 + 1)


def test_bad_opt_level_and_vta_build_config():
    with pytest.raises(ValueError, match="opt_level"):
        PassContext(opt_level=9)
    ctx = vta.build_config(debug_flag=2, disabled_pass={"tir.CommonSubexprElimTIR"})
    assert isinstance(ctx, PassContext) and ctx.config["vta.debug_flag"] == 2
    assert ctx.disabled_pass == ["tir.CommonSubexprElimTIR"]
