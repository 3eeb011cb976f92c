"""``vdla.contrib``: the helpers TVM programs import from ``tvm.contrib`` (``utils.tempdir``)."""

from . import utils

__all__ = ["utils"]
