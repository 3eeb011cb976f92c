"""``vdla.contrib``: the helpers TVM programs import from ``tvm.contrib`` (``utils.tempdir``,
``clang.create_llvm``, ``cblas.matmul``: the BLAS extern op, whose packed function is
registered on ``import vdla`` as TVM's is, for programs that call it by name)."""

from . import cblas, clang, utils

__all__ = ["cblas", "clang", "utils"]
