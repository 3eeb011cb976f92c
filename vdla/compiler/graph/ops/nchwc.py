"""The CPU's packed layouts: NCHW[x]c (TVM's x86 layout) with its layout transform and the
convolutions on it, and dense weights packed by blocks of output features.

A value in NCHW[x]c is rank 5, ``(N, C/x, H, W, x)``: channel ``c`` of pixel ``(h, w)`` is at
``[n, c // x, h, w, c % x]``, so ``x`` channels of one pixel are one vector. The graph pass
:mod:`..cpu_layout` rewrites a float graph onto it for the llvm target; these are the ops it
uses (element-wise ops and the pools take rank-5 values as they are):

* ``layout_transform`` ``src`` -> ``dst`` blocks (0: plain NCHW): packs, unpacks or re-blocks;
* ``conv2d_nchwc``: data ``(N, C/cb, H, W, cb)``, weight ``(OC/ob, C/cb, KH, KW, cb, ob)``, optional
  bias ``(1, OC/ob, 1, 1, ob)`` -> ``(N, OC/ob, OH, OW, ob)``;
* ``depthwise_conv2d_nchwc``: data ``(N, C/cb, H, W, cb)``, weight ``(C/cb, KH, KW, cb)``, optional
  bias ``(1, C/cb, 1, 1, cb)`` -> ``(N, C/cb, OH, OW, cb)``;
* ``conv2d_winograd_nchwc`` ``m``: a 3x3, stride-1 convolution by Winograd's F(m x m, 3 x 3)
  (:mod:`vdla.compiler.topi.winograd`): data ``(N, C/cb, H, W, cb)``, the transformed weight
  ``(alpha^2, OC/ob, C/cb, cb, ob)`` (``alpha = m + 2``), optional bias -> ``(N, OC/ob, OH, OW, ob)``;
* ``dense_blocked``: data ``(B, K)``, weight ``(O/bn, K, bn)`` (``bn`` outputs one vector), optional
  bias ``(O,)`` -> ``(B, O)``;
* ``channel_shuffle`` ``groups``: ShuffleNet's reshape to ``(N, g, C/g, H, W)``, swap of the two
  channel axes and reshape back, as one permutation of the channels of NCHW or NCHW[x]c data
  (output channel ``c`` is input channel ``(c % g) * (C/g) + c // g``).

Their numpy semantics unpack, run the NCHW reference and pack again (the reference executor
checks the packed kernels against it).

Each op registers itself (:func:`.registry.register`) when this module is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...topi.conv2d import pack_nchwc, unpack_nchwc
from ...topi.util import conv_out
from ...topi.winograd import WINOGRAD_TILES, winograd_matrices
from ..ir import TensorType
from .nn import conv2d_nchw
from .registry import _err, register

__all__ = ["to_blocks", "unpack_weight", "unpack_depthwise_weight", "unpack_winograd_weight", "block_dense_weight",
           "shuffle_source"]


def to_blocks(x: np.ndarray, src: int, dst: int) -> np.ndarray:
    """``x`` from ``src`` blocks to ``dst`` blocks (0: plain NCHW)."""
    plain = unpack_nchwc(x) if src else x
    return pack_nchwc(plain, dst) if dst else np.ascontiguousarray(plain)


def _lt_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, src, dst = ts[0], int(at["src"]), int(at["dst"])
    if src < 0 or dst < 0 or src == dst:
        raise _err(f"layout_transform: blocks src={src}, dst={dst} must be >= 0 and differ (0: NCHW)")
    if src:
        if len(x.shape) != 5 or x.shape[4] != src:
            raise _err(f"layout_transform: src={src} needs NCHW{src}c data (rank 5, last dim {src}), got {x}")
        n, cc, h, w, _ = x.shape
        c = cc * src
    else:
        if len(x.shape) != 4:
            raise _err(f"layout_transform: src=0 needs NCHW data, got {x}")
        n, c, h, w = x.shape
    if not dst:
        return TensorType((n, c, h, w), x.dtype)
    if c % dst:
        raise _err(f"layout_transform: {c} channels are not a multiple of the block {dst}")
    return TensorType((n, c // dst, h, w, dst), x.dtype)


register("layout_transform", "injective", (1, 1), {"src": 0, "dst": 0})(
    (_lt_infer, lambda at, xs: to_blocks(xs[0], int(at["src"]), int(at["dst"]))))


def unpack_weight(w: np.ndarray) -> np.ndarray:
    """``(OC/ob, C/cb, KH, KW, cb, ob)`` -> OIHW."""
    occ, icc, kh, kw, cb, ob = w.shape
    return np.ascontiguousarray(w.transpose(0, 5, 1, 4, 2, 3).reshape(occ * ob, icc * cb, kh, kw))


def unpack_depthwise_weight(w: np.ndarray) -> np.ndarray:
    """``(C/cb, KH, KW, cb)`` -> ``(C, 1, KH, KW)``."""
    cc, kh, kw, cb = w.shape
    return np.ascontiguousarray(w.transpose(0, 3, 1, 2).reshape(cc * cb, 1, kh, kw))


def _out_hw(at: dict[str, Any], h: int, w: int, kh: int, kw: int, op: str) -> tuple[int, int]:
    (sh, sw), (dh, dw) = at["strides"], at["dilation"]
    pt, pl, pb, pr = at["padding"]
    oh, ow = conv_out(h, (kh - 1) * dh + 1, sh, pt, pb), conv_out(w, (kw - 1) * dw + 1, sw, pl, pr)
    if oh <= 0 or ow <= 0:
        raise _err(f"{op}: input {h}x{w} is smaller than the kernel {kh}x{kw}")
    return oh, ow


def _check_packed_bias(ts: list[TensorType], occ: int, ob: int, op: str) -> None:
    if len(ts) == 3 and ts[2].shape != (1, occ, 1, 1, ob):
        raise _err(f"{op}: bias must be float32[1, {occ}, 1, 1, {ob}], got {ts[2]}")


def _float5(x: TensorType, op: str) -> None:
    if len(x.shape) != 5 or x.dtype != "float32":
        raise _err(f"{op} needs float32 NCHW[x]c data (rank 5), got {x}")


def _conv_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts[0], ts[1]
    _float5(x, "conv2d_nchwc")
    n, cc, h, wd, cb = x.shape
    if len(w.shape) != 6 or w.shape[1] != cc or w.shape[4] != cb:
        raise _err(f"conv2d_nchwc: weight must be (OC/ob, {cc}, KH, KW, {cb}, ob), got {w}")
    occ, _, kh, kw, _, ob = w.shape
    _check_packed_bias(ts, occ, ob, "conv2d_nchwc")
    return TensorType((n, occ, *_out_hw(at, h, wd, kh, kw, "conv2d_nchwc"), ob), "float32")


def _on_nchw(at: dict[str, Any], xs: list[np.ndarray], w_oihw: np.ndarray, groups: int, block: int) -> np.ndarray:
    """A packed convolution's semantics: the NCHW reference on the unpacked data (and bias, whose
    ``(1, C/b, 1, 1, b)`` elements are in channel order), packed by ``block`` again."""
    y = conv2d_nchw(unpack_nchwc(xs[0]), w_oihw, at["strides"], at["padding"], at["dilation"], groups)
    if len(xs) == 3:
        y = y + xs[2].reshape(1, -1, 1, 1)
    return pack_nchwc(y.astype(np.float32), block)


def _conv(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    return _on_nchw(at, xs, unpack_weight(xs[1]), 1, xs[1].shape[5])


_ATTRS = {"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1)}
register("conv2d_nchwc", "complex", (2, 3), _ATTRS)((_conv_infer, _conv))


def _dw_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts[0], ts[1]
    _float5(x, "depthwise_conv2d_nchwc")
    n, cc, h, wd, cb = x.shape
    if len(w.shape) != 4 or w.shape[0] != cc or w.shape[3] != cb:
        raise _err(f"depthwise_conv2d_nchwc: weight must be ({cc}, KH, KW, {cb}), got {w}")
    _check_packed_bias(ts, cc, cb, "depthwise_conv2d_nchwc")
    return TensorType((n, cc, *_out_hw(at, h, wd, w.shape[1], w.shape[2], "depthwise_conv2d_nchwc"), cb), "float32")


def _dw(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    _, cc, _, _, cb = xs[0].shape
    return _on_nchw(at, xs, unpack_depthwise_weight(xs[1]), cc * cb, cb)


register("depthwise_conv2d_nchwc", "complex", (2, 3), _ATTRS)((_dw_infer, _dw))


def unpack_winograd_weight(u: np.ndarray, m: int) -> np.ndarray:
    """``(alpha^2, OC/ob, C/cb, cb, ob)`` (``U = G w G^T`` per channel pair) -> the OIHW 3x3 weight,
    ``w = G+ U G+^T`` with ``G+`` the left inverse of ``G`` (exact up to rounding: ``G`` has full
    column rank)."""
    e2, occ, cc, cb, ob = u.shape
    alpha = m + 2
    _, g, _ = winograd_matrices(m)
    gi = np.linalg.pinv(g.astype(np.float64))  # (3, alpha)
    u4 = u.astype(np.float64).transpose(0, 1, 4, 2, 3).reshape(alpha, alpha, occ * ob, cc * cb)
    return np.einsum("ia,aboc,jb->ocij", gi, u4, gi).astype(np.float32)


def _winograd_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts[0], ts[1]
    _float5(x, "conv2d_winograd_nchwc")
    m = int(at["m"])
    if m not in WINOGRAD_TILES:
        raise _err(f"conv2d_winograd_nchwc: output tile m={m} has no transform (m in {WINOGRAD_TILES})")
    n, cc, h, wd, cb = x.shape
    a2 = (m + 2) ** 2
    if len(w.shape) != 5 or w.shape[0] != a2 or w.shape[2] != cc or w.shape[3] != cb:
        raise _err(f"conv2d_winograd_nchwc: weight must be ({a2}, OC/ob, {cc}, {cb}, ob) for m={m}, got {w}")
    occ, ob = w.shape[1], w.shape[4]
    _check_packed_bias(ts, occ, ob, "conv2d_winograd_nchwc")
    return TensorType((n, occ, *_out_hw({**at, "strides": (1, 1), "dilation": (1, 1)}, h, wd, 3, 3,
                                        "conv2d_winograd_nchwc"), ob), "float32")


def _winograd(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    # the reference is the direct convolution with the weight recovered from its transform, not
    # Winograd's algorithm again: the executor's kernel is checked against a different method
    return _on_nchw({**at, "strides": (1, 1), "dilation": (1, 1)}, xs, unpack_winograd_weight(xs[1], int(at["m"])), 1,
                    xs[1].shape[4])


register("conv2d_winograd_nchwc", "complex", (2, 3), {"padding": (1, 1, 1, 1), "m": 2})((_winograd_infer, _winograd))


def block_dense_weight(w: np.ndarray, bn: int) -> np.ndarray:
    """``(O, K)`` -> ``(O/bn, K, bn)``."""
    o, k = w.shape
    return np.ascontiguousarray(w.reshape(o // bn, bn, k).transpose(0, 2, 1))


def _dense_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts[0], ts[1]
    if len(x.shape) != 2 or x.dtype != "float32":
        raise _err(f"dense_blocked needs float32 [B, K] data, got {x}")
    if len(w.shape) != 3 or w.shape[1] != x.shape[1] or w.dtype != "float32":
        raise _err(f"dense_blocked: weight must be float32 (O/bn, {x.shape[1]}, bn), got {w}")
    o = w.shape[0] * w.shape[2]
    if len(ts) == 3 and ts[2].shape != (o,):
        raise _err(f"dense_blocked: bias must be float32[{o}], got {ts[2]}")
    return TensorType((x.shape[0], o), "float32")


def _dense(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    w = xs[1]
    y = xs[0] @ w.transpose(0, 2, 1).reshape(-1, w.shape[1]).T
    return (y + xs[2] if len(xs) == 3 else y).astype(np.float32)


register("dense_blocked", "complex", (2, 3))((_dense_infer, _dense))


def shuffle_source(c: int, channels: int, groups: int) -> int:
    """The input channel that output channel ``c`` of a channel shuffle reads."""
    return (c % groups) * (channels // groups) + c // groups


def _shuffle_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, g = ts[0], int(at["groups"])
    if len(x.shape) not in (4, 5):
        raise _err(f"channel_shuffle needs NCHW or NCHW[x]c data, got {x}")
    c = x.shape[1] * (x.shape[4] if len(x.shape) == 5 else 1)
    if g < 1 or c % g:
        raise _err(f"channel_shuffle: {c} channels do not split into {g} groups")
    return x


def _shuffle(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x, g = xs[0], int(at["groups"])
    b = x.shape[4] if x.ndim == 5 else 0
    n, c, h, w = (plain := to_blocks(x, b, 0)).shape
    return to_blocks(plain.reshape(n, g, c // g, h, w).transpose(0, 2, 1, 3, 4).reshape(n, c, h, w), 0, b)


register("channel_shuffle", "injective", (1, 1), {"groups": 2})((_shuffle_infer, _shuffle))
