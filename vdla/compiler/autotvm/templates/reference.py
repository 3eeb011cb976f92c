"""The numpy references the CPU and GPU templates share: a template's reference depends on its
operator, not on the target it is scheduled for (``conv2d_nchw.x86`` and ``conv2d_nchw.cuda``
check against the same function)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...topi import testing as ref

__all__ = ["uniform", "conv2d_nchw", "dense", "matmul"]


def uniform(*pairs: list[int]) -> bool:
    """Is each pair (stride, padding ...) one value repeated (what the numpy references take)?"""
    return all(len(set(p)) == 1 for p in pairs)


def conv2d_nchw(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    """``[data, kernel, stride, padding, dilation]``'s NCHW convolution."""
    _, _, stride, padding, dilation = args
    if not uniform(stride, padding, dilation):
        return []  # the numpy reference takes one stride, padding and dilation: unchecked
    return [ref.conv2d_nchw(inputs[0], inputs[1], stride[0], padding[0], dilation[0])]


def dense(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    """``[batch, k, o, bias]``: data @ weight.T (+ bias), in float64."""
    y = inputs[0].astype(np.float64) @ inputs[1].astype(np.float64).T
    if args[3]:
        y = y + inputs[2]
    return [y.astype(np.float32)]


def matmul(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    a, b = inputs
    return [(a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)]
