"""``cblas.matmul(A, B)``: a matrix product computed by numpy's BLAS, as an extern op (TVM's
``tvm.contrib.cblas``). The packed function is registered as ``vdla.contrib.cblas.matmul`` and,
for TVM programs that call it by name, ``tvm.contrib.cblas.matmul``."""

from __future__ import annotations

from typing import Any

from ...compiler import te
from ...compiler.tir.op import call_packed
from ...runtime.packed import get_global_func, register_func

__all__ = ["matmul"]

NAME = "vdla.contrib.cblas.matmul"


def _matmul(a: Any, b: Any, c: Any, transa: bool, transb: bool) -> None:
    x, y = a.numpy(), b.numpy()
    c.copyfrom((x.T if transa else x) @ (y.T if transb else y))


for _name in (NAME, "tvm.contrib.cblas.matmul"):
    if get_global_func(_name, allow_missing=True) is None:
        register_func(_name, _matmul)


def matmul(lhs: Any, rhs: Any, transa: bool = False, transb: bool = False, **_: Any) -> Any:
    """``lhs @ rhs`` (each optionally transposed) as a te.extern tensor."""
    n = lhs.shape[1] if transa else lhs.shape[0]
    m = rhs.shape[0] if transb else rhs.shape[1]
    return te.extern((n, m), [lhs, rhs], lambda ins, outs: call_packed(NAME, ins[0], ins[1], outs[0], transa, transb),
                     name="C")
