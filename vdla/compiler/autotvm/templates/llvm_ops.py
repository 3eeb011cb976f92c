"""CPU templates of the rest of the operator library: depthwise conv2d, 2-D pooling and matmul.

Each declares the operator with the library's topi function and calls the library's CPU
schedule (:mod:`vdla.compiler.targets.llvm.schedules`), which defines the knobs and takes
the hand-picked values as the fallback; each workload is the one its declaration's
``workload`` attribute names, so the graph compiler's nodes (and ``vdla.build`` users)
find their tuned records under ``apply_history_best``.

* ``depthwise_conv2d_nchw.x86`` ``[data, kernel [C, M, KH, KW], stride, padding4, dilation]``
  (MobileNet's; the graph's ``[C*M, 1, KH, KW]`` weights are read as ``[C, M, KH, KW]``);
* ``depthwise_conv2d_NCHWc.x86`` ``[data [N, C/cb, H, W, cb], [KH, KW], stride, padding4, dilation]``
  (the CPU graph's packed depthwise layers: ``tile_ow`` output columns in registers, ``unroll_kw``);
* ``pool2d.x86`` ``[data, kernel, stride, padding4, "max"|"avg", count_include_pad]``;
* ``matmul.x86`` ``[n, m, k]`` (topi's packed-panel matmul; the template also chooses the
  panel width ``tile_bn``, which :func:`vdla.compiler.topi.matmul` declares with when tuned).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te, topi
from ...targets.llvm import schedules
from ...topi import testing as ref
from ...topi.matmul import DEFAULT_BN
from ..dispatch import get_config
from ..registry import template
from . import reference

__all__ = ["depthwise_conv2d_nchw", "depthwise_conv2d_nchwc", "pool2d", "matmul"]



def _depthwise_reference(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    _, _, stride, padding, dilation = args
    if not reference.uniform(stride, padding) or list(dilation) != [1, 1]:
        return []  # the numpy reference takes one stride and padding, no dilation: unchecked
    return [ref.depthwise_conv2d_nchw(inputs[0], inputs[1], stride[0], padding[0])]


@template("depthwise_conv2d_nchw.x86", reference=_depthwise_reference)
def depthwise_conv2d_nchw(data: list[int], kernel: list[int], stride: list[int], padding: list[int],
                          dilation: list[int]) -> tuple[Any, list[Any]]:
    x = te.placeholder(tuple(data), name="data")
    wt = te.placeholder(tuple(kernel), name="kernel")
    y = topi.depthwise_conv2d_nchw(x, wt, tuple(stride), tuple(padding), tuple(dilation))
    shp = [int(getattr(d, "value", d)) for d in y.shape]
    get_config().add_flop(2.0 * float(np.prod(shp)) * kernel[2] * kernel[3])
    return schedules.schedule_depthwise_conv2d_nchw(y), [x, wt, y]


def _depthwise_nchwc_reference(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    _, _, stride, padding, dilation = args
    if not reference.uniform(stride, padding) or list(dilation) != [1, 1]:
        return []
    x, w = inputs
    cc, kh, kw, cb = w.shape
    xn = topi.unpack_nchwc(x)
    wn = w.transpose(0, 3, 1, 2).reshape(cc * cb, 1, kh, kw)
    return [topi.pack_nchwc(ref.depthwise_conv2d_nchw(xn, wn, stride[0], padding[0]), cb)]


@template("depthwise_conv2d_NCHWc.x86", reference=_depthwise_nchwc_reference)
def depthwise_conv2d_nchwc(data: list[int], kernel: list[int], stride: list[int], padding: list[int],
                           dilation: list[int]) -> tuple[Any, list[Any]]:
    n, cc, h, w, cb = data
    x = te.placeholder(tuple(data), name="data")
    wt = te.placeholder((cc, kernel[0], kernel[1], cb), name="kernel")
    y = topi.depthwise_conv2d_NCHWc(x, wt, tuple(stride), tuple(padding), tuple(dilation))
    shp = [int(getattr(d, "value", d)) for d in y.shape]
    get_config().add_flop(2.0 * float(np.prod(shp)) * kernel[0] * kernel[1])
    return schedules.schedule_depthwise_conv2d_NCHWc(y), [x, wt, y]


def _pool_reference(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    data, kernel, stride, padding, kind, count_include_pad = args
    if not reference.uniform(kernel, stride, padding):
        return []
    x = inputs[0]
    if len(data) == 5:  # NCHW[x]c: pooled as NCHW, the block back after
        return [topi.pack_nchwc(ref.pool2d(topi.unpack_nchwc(x), kernel[0], stride[0], padding[0], kind,
                                           count_include_pad), data[4])]
    return [ref.pool2d(x, kernel[0], stride[0], padding[0], kind, count_include_pad)]


@template("pool2d.x86", reference=_pool_reference)
def pool2d(data: list[int], kernel: list[int], stride: list[int], padding: list[int], kind: str,
           count_include_pad: bool) -> tuple[Any, list[Any]]:
    x = te.placeholder(tuple(data), name="data")
    y = topi.pool2d(x, tuple(kernel), tuple(stride), tuple(padding), kind, count_include_pad)
    shp = [int(getattr(d, "value", d)) for d in y.shape]
    get_config().add_flop(float(np.prod(shp)) * kernel[0] * kernel[1])  # one compare or add per window element
    return schedules.schedule_pool(y), [x, y]



@template("matmul.x86", reference=reference.matmul)
def matmul(n: int, m: int, k: int) -> tuple[Any, list[Any]]:
    cfg = get_config()
    widths = [b for b in (16, 32, 64) if m % b == 0] or [m]
    cfg.define_knob("tile_bn", widths)
    if cfg.is_fallback:  # the untuned declaration's panels (the widest that fits where those do not)
        cfg.set("tile_bn", DEFAULT_BN if DEFAULT_BN in widths else widths[-1])
    a, b, c = topi.matmul(n, m, k, bn=int(cfg["tile_bn"].val))
    cfg.add_flop(2.0 * n * m * k)
    return schedules.schedule_matmul_cpu(c), [a, b, c]
