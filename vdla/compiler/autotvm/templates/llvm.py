"""CPU templates: conv2d in TVM's NCHW[x]c layout and dense.

``conv2d_NCHWc.x86`` takes an NCHW workload ``[N, IC, H, W, OC, K, stride, pad]`` and
chooses the channel blocking itself (``tile_ic`` / ``tile_oc``: the inner factor is the
block, as TVM's x86 template); the schedule adds ``tile_ow`` (the register tile of output
columns), ``tile_oh`` (output rows per task of the one parallel loop: its granularity),
``unroll_kw`` and ``tile_rows`` (output rows of the register tile; records written before it
existed read as one row). The fallback is the blocking the untuned graph picks
(:func:`~vdla.compiler.targets.llvm.schedules.conv2d.channel_block` for the input,
:func:`~vdla.compiler.targets.llvm.schedules.conv2d.conv_block` for the output) and the schedule's
hand pick.
Inputs are pre-packed (the layout transform is outside the measured kernel, as in the paper).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te, topi
from ...targets.llvm import schedules
from ...topi import testing as ref
from ..dispatch import get_config
from ..registry import template
from . import reference

__all__ = ["conv2d_nchwc", "conv2d_nchw", "dense"]

_BLOCKS = (4, 8, 16, 32, 64)


def _hand_block(c: int) -> int:
    """The untuned graph's block of ``c`` channels (the cost rule; a few channels are one block)."""
    return schedules.channel_block(c) or c


def _conv_reference(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    n, ic, h, w, oc, k, stride, pad = args
    x, wt = inputs
    ob = wt.shape[-1]
    xn = topi.unpack_nchwc(x)
    wn = wt.transpose(0, 5, 1, 4, 2, 3).reshape(oc, ic, k, k)  # OIHW[cb]i[ob]o -> OIHW
    return [topi.pack_nchwc(ref.conv2d_nchw(xn, wn, stride, pad), ob)]


@template("conv2d_NCHWc.x86", reference=_conv_reference)
def conv2d_nchwc(n: int, ic: int, h: int, w: int, oc: int, k: int, stride: int, pad: int) -> tuple[Any, list[Any]]:
    cfg = get_config()
    cfg.define_split("tile_ic", ic, num_outputs=2, filter=lambda e: e.size[-1] in _BLOCKS or e.size[-1] == ic)
    cfg.define_split("tile_oc", oc, num_outputs=2, filter=lambda e: e.size[-1] in _BLOCKS[1:4])
    if cfg.is_fallback:
        cfg.set("tile_ic", [ic // _hand_block(ic), _hand_block(ic)])
        ob = schedules.conv_block(oc, (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1) or oc
        cfg.set("tile_oc", [oc // ob, ob])
    cb, ob = cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1]
    x = te.placeholder((n, ic // cb, h, w, cb), name="data")
    wt = te.placeholder((oc // ob, ic // cb, k, k, cb, ob), name="kernel")
    y = topi.conv2d_NCHWc(x, wt, stride, pad)
    oh = (h + 2 * pad - k) // stride + 1
    cfg.add_flop(2.0 * n * oc * ic * k * k * oh * oh)
    return schedules.schedule_conv2d_NCHWc(y), [x, wt, y]



@template("dense.x86", reference=reference.dense)
def dense(batch: int, k: int, o: int, bias: bool = False) -> tuple[Any, list[Any]]:
    x = te.placeholder((batch, k), name="data")
    wt = te.placeholder((o, k), name="weight")
    b = te.placeholder((o,), name="bias") if bias else None
    y = topi.dense(x, wt, b)
    get_config().add_flop(2.0 * batch * k * o)
    return schedules.schedule_dense(y), [x, wt, *([b] if b is not None else []), y]



@template("conv2d_nchw.x86", reference=reference.conv2d_nchw)
def conv2d_nchw(data: list[int], kernel: list[int], stride: list[int], padding: list[int],
                dilation: list[int]) -> tuple[Any, list[Any]]:
    """The NCHW conv2d the graph compiler runs on the CPU (``schedule_conv2d_nchw``: ``tile_x`` the
    vector width along output columns, ``tile_f`` the output channels unrolled)."""
    x = te.placeholder(tuple(data), name="data")
    wt = te.placeholder(tuple(kernel), name="kernel")
    y = topi.conv2d_nchw(x, wt, tuple(stride), tuple(padding), tuple(dilation))
    shp = [int(getattr(d, "value", d)) for d in y.shape]
    get_config().add_flop(2.0 * float(np.prod(shp)) * kernel[1] * kernel[2] * kernel[3])
    return schedules.schedule_conv2d_nchw(y), [x, wt, y]
