"""vdla.target.Target: TVM's Target objects (kind.name, host, options) and build() taking them."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
from vdla import te
from vdla.compiler.targets.target import Target, TargetError


@pytest.mark.parametrize(
    "text, kind, backend, host",
    [("llvm", "llvm", "llvm", None), ("llvm -mcpu=cortex-a53 -mtriple=aarch64-linux-gnu", "llvm", "llvm", None),
     ("ext_dev", "ext_dev", "vdla", "llvm"), ("vdla", "vdla", "vdla", "llvm"), ("cuda", "cuda", "cuda", "llvm")],
)
def test_parse(text, kind, backend, host):
    t = vdla.target.Target(text, host=host)
    assert t.kind.name == kind and t.backend == backend and str(t) == text
    assert (str(t.host) if t.host else None) == host
    assert Target(t) == t and hash(Target(t)) == hash(t)


def test_options_and_dict():
    t = Target({"kind": "llvm", "mcpu": "cortex-a53"})
    assert t.mcpu == "cortex-a53" and t.keys == ["cpu"]
    assert Target("llvm", host="llvm").host.kind.name == "llvm"


@pytest.mark.parametrize("bad, msg", [("tpu", "unknown target kind"), ("", "must be a string"),
                                      ("llvm mcpu", "must start with '-'")])
def test_bad_targets(bad, msg):
    with pytest.raises(TargetError, match=msg):
        Target(bad)
    with pytest.raises(TargetError, match="host must be a CPU"):
        Target("ext_dev", host="cuda")


def _vadd():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    return A, B, C, te.create_schedule(C.op)


def test_build_takes_target_objects_and_context():
    A, B, C, s = _vadd()
    a, b = np.arange(5, dtype="float32"), np.ones(5, "float32")
    for tgt in (Target("llvm"), Target("llvm", host="llvm")):
        f = vdla.build(s, [A, B, C], tgt, name="vadd")
        c = np.zeros(5, "float32")
        f(a, b, c)
        np.testing.assert_array_equal(c, a + b)
    with Target("llvm"):
        assert Target.current().kind.name == "llvm"
        f = vdla.build(s, [A, B, C], None)
    assert Target.current() is None
    # a Target("cuda") object reaches the GPU back end, which wants the loop nest bound to threads
    with pytest.raises(Exception, match="not bound to any GPU thread"):
        vdla.build(s, [A, B, C], Target("cuda"))
    # no target given (TVM's tutorials: `with tvm.target.Target("cuda"): tvm.build(s, args)`): the context's
    with Target("cuda"), pytest.raises(Exception, match="not bound to any GPU thread"):
        vdla.build(s, [A, B, C])
