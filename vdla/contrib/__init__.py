"""``vdla.contrib``: the helpers TVM programs import from ``tvm.contrib`` (``utils.tempdir``,
``clang.create_llvm``; ``from vdla.contrib import cblas`` for the BLAS extern op)."""

from . import clang, utils

__all__ = ["clang", "utils"]
