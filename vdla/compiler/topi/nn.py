"""``topi.nn``: TVM's spellings of the operator declarations (``topi.nn.pad(data, before, after,
pad_value=, name=)``, ``topi.nn.conv2d_nchw``, ``topi.nn.relu`` ...), over this package's."""

from __future__ import annotations

from collections.abc import Sequence

from .. import te
from .conv2d import conv2d_nchw, conv2d_transpose_nchw, depthwise_conv2d_nchw, group_conv2d_nchw
from .dense import dense
from .elemwise import relu
from .matmul import batch_matmul
from .pooling import pool2d
from .softmax import softmax
from .util import pad as _pad

__all__ = ["pad", "conv2d_nchw", "conv2d_transpose_nchw", "depthwise_conv2d_nchw", "group_conv2d_nchw", "batch_matmul",
           "dense", "relu", "pool2d", "softmax"]


def pad(data: te.Tensor, pad_before: Sequence[int], pad_after: Sequence[int] | None = None,
        pad_value: float = 0.0, name: str = "PadInput") -> te.Tensor:
    """Constant padding of ``data`` (TVM's argument names)."""
    return _pad(data, pad_before, pad_after, pad_value, name)
