"""``vdla.contrib``: the helpers TVM programs import from ``tvm.contrib`` (``utils.tempdir``, ``clang.create_llvm``)."""

from . import clang, utils

__all__ = ["clang", "utils"]
