"""numpy references of the VDLA templates: the int8 operator followed by the ALU tail, with
the accelerator's integer semantics (int32 accumulation wrapping, arithmetic shift, clip,
narrowing). Tests and the strategy compare the templates' results against these.
"""

from __future__ import annotations

import numpy as np

from ....topi.util import conv_out
from .common import Tail

__all__ = ["conv2d_reference", "dense_reference", "conv2d_transpose_reference", "group_conv2d_reference"]


def _apply_tail(acc: np.ndarray, tail: Tail, bias: np.ndarray | None, residual: np.ndarray | None) -> np.ndarray:
    """numpy model of the ALU tail on an int32 ``(N, O, ...)`` accumulator; ``bias`` is ``(O,)``."""
    t = acc.astype(np.int64)
    if bias is not None:
        t = t + bias.astype(np.int64).reshape(1, -1, *[1] * (acc.ndim - 2))
    t = (t.astype(np.int32).astype(np.int64) >> tail.shift) if tail.shift else t.astype(np.int32).astype(np.int64)
    if residual is not None:
        t = (t + residual.astype(np.int64)).astype(np.int32).astype(np.int64)
    if tail.clip is not None:
        t = np.clip(t, tail.clip[0], tail.clip[1])
    return t.astype(np.int32).astype(np.int8)  # int8 OUT is the low byte


def _conv_sums(x: np.ndarray, wt: np.ndarray, stride: int, padding: int) -> np.ndarray:
    """Exact int64 sums of an NCHW x OIHW convolution (the caller wraps them to int32)."""
    n, _, h, w = x.shape
    o, _, kh, kw = wt.shape
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh, ow = conv_out(h, kh, stride, padding, padding), conv_out(w, kw, stride, padding, padding)
    acc = np.zeros((n, o, oh, ow), np.int64)
    wl = wt.astype(np.int64)
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, :, ky : ky + stride * oh : stride, kx : kx + stride * ow : stride]
            acc += np.einsum("nchw,oc->nohw", patch, wl[:, :, ky, kx], optimize=True)
    return acc


def conv2d_reference(x: np.ndarray, wt: np.ndarray, stride: int = 1, padding: int = 0, tail: Tail | None = None,
                     bias: np.ndarray | None = None, residual: np.ndarray | None = None) -> np.ndarray:
    """numpy NCHW int8 reference: exact int32 accumulation (wrapping), then the tail."""
    acc = _conv_sums(x, wt, stride, padding).astype(np.int32)
    return _apply_tail(acc, tail or Tail(), bias, residual)


def dense_reference(x: np.ndarray, wt: np.ndarray, tail: Tail | None = None, bias: np.ndarray | None = None,
                    residual: np.ndarray | None = None) -> np.ndarray:
    acc = (x.astype(np.int64) @ wt.astype(np.int64).T).astype(np.int32)
    return _apply_tail(acc, tail or Tail(), bias, residual)


def conv2d_transpose_reference(x: np.ndarray, wt: np.ndarray, stride: int, padding: int, tail: Tail | None = None,
                               bias: np.ndarray | None = None) -> np.ndarray:
    """numpy NCHW int8 reference of conv2d_transpose (IOHW weights), straight from the definition:
    ``out[n, o, iy*s - p + ky, ix*s - p + kx] += x[n, i, iy, ix] * w[i, o, ky, kx]``, then the tail."""
    tail = tail or Tail()
    n, ic, h, w = x.shape
    _, o, kh, kw = wt.shape
    s, p = stride, padding
    oh, ow = (h - 1) * s - 2 * p + kh, (w - 1) * s - 2 * p + kw
    full = np.zeros((n, o, (h - 1) * s + kh, (w - 1) * s + kw), np.int64)
    xl, wl = x.astype(np.int64), wt.astype(np.int64)
    for ky in range(kh):
        for kx in range(kw):
            full[:, :, ky : ky + (h - 1) * s + 1 : s, kx : kx + (w - 1) * s + 1 : s] += np.einsum(
                "nihw,io->nohw", xl, wl[:, :, ky, kx], optimize=True)
    acc = full[:, :, p : p + oh, p : p + ow].astype(np.int32)
    return _apply_tail(acc, tail, bias, None)


def group_conv2d_reference(x: np.ndarray, wt: np.ndarray, groups: int, stride: int = 1, padding: int = 0,
                           tail: Tail | None = None, bias: np.ndarray | None = None,
                           residual: np.ndarray | None = None) -> np.ndarray:
    """numpy NCHW int8 reference of a grouped conv (OIHW weights, ``I/G`` input channels each)."""
    cg, og = wt.shape[1], wt.shape[0] // groups
    acc = np.concatenate(
        [_conv_sums(x[:, g * cg : (g + 1) * cg], wt[g * og : (g + 1) * og], stride, padding) for g in range(groups)],
        axis=1,
    ).astype(np.int32)
    return _apply_tail(acc, tail or Tail(), bias, residual)
