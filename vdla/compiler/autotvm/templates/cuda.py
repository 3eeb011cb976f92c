"""GPU templates: the operators a model runs on ``cuda``, each with TVM's knobs and a numpy reference.

Their arguments are the ``workload`` the topi declarations record (so a model's kernels and a
tuning task agree on it: ``apply_history_best`` finds a model's tuned kernels by it); the knobs
are defined by the GPU schedules (:mod:`vdla.compiler.targets.cuda.schedules`), whose hand tiles
are each template's fallback and a point of its space:

* ``conv2d_nchw.cuda`` ``[data, kernel, stride, padding4, dilation]``: TVM's ``conv2d_direct``
  (``tile_f / tile_y / tile_x`` in four: blocks, virtual threads, threads, per thread;
  ``tile_rc / tile_ry / tile_rx``; ``auto_unroll_max_step``, ``unroll_explicit``);
* ``group_conv2d_nchw.cuda`` ``[data, kernel, stride, padding4, dilation, groups]``: the same
  space, a block's channels inside one group or whole groups;
* ``depthwise_conv2d_nchw.cuda`` ``[data, kernel [C, M, KH, KW], stride, padding4, dilation]``:
  ``num_thread``, ``tile_x`` (columns per thread), ``unroll_kw``;
* ``dense.cuda`` ``[batch, in, out, has bias]``: ``num_thread``, ``tile_k`` (unrolled reduction);
* ``matmul.cuda`` ``[m, n, k]``: the register-blocked shared-memory GEMM (``tile_y / tile_x`` in
  four, ``tile_k``, the fetch vector width ``vec``, unrolling, ``double_buffer``: the shared tiles
  in two halves, the next step's fetched while this one's is read; 0 in the fallback and in older logs);
* ``conv2d_1x1.cuda`` ``[channels, height, width, out channels]``: a stride-1 1x1 convolution of
  batch 1 as that GEMM (``kernel[OC, C] x data[C, H*W]``: the same memory as NCHW and OIHW),
  the same space as ``matmul.cuda`` (``double_buffer`` too; 0 in older logs); its fallback is the
  GEMM's hand tiles where they divide. A model's 1x1 convolution runs it when its best record
  beats the direct template's (:mod:`vdla.compiler.graph.strategy.cuda`).

``conv2d_nchw_winograd.cuda`` (3x3 stride-1 Winograd, the weight transformed at compile time) is
:mod:`.cuda_winograd`'s, registered with these.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ... import te, topi
from ...targets.cuda import schedules
from ...targets.cuda.schedules.matmul import define_matmul_space, hand_matmul_knobs, matmul_tiles
from ...topi import testing as ref
from ..dispatch import get_config
from ..registry import template
from ..space import ConfigSpace
from . import (
    cuda_winograd,  # noqa: F401 - registers conv2d_nchw_winograd.cuda with the other GPU templates
    reference,
)

__all__ = ["conv2d_nchw", "group_conv2d_nchw", "depthwise_conv2d_nchw", "dense", "matmul", "conv2d_1x1"]


def _shape(t: Any) -> list[int]:
    return [int(getattr(d, "value", d)) for d in t.shape]




@template("conv2d_nchw.cuda", reference=reference.conv2d_nchw)
def conv2d_nchw(data: list[int], kernel: list[int], stride: list[int], padding: list[int],
                dilation: list[int]) -> tuple[Any, list[Any]]:
    x = te.placeholder(tuple(data), name="data")
    wt = te.placeholder(tuple(kernel), name="kernel")
    y = topi.conv2d_nchw(x, wt, tuple(stride), tuple(padding), tuple(dilation))
    get_config().add_flop(2.0 * float(np.prod(_shape(y))) * kernel[1] * kernel[2] * kernel[3])
    return schedules.schedule_conv2d_nchw(y), [x, wt, y]


def _group_reference(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    _, kernel, stride, padding, dilation, groups = args
    if not reference.uniform(stride, padding, dilation):
        return []
    x, w = inputs
    cg, og = x.shape[1] // groups, kernel[0] // groups
    parts = [ref.conv2d_nchw(x[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og], stride[0], padding[0], dilation[0])
             for g in range(groups)]
    return [np.concatenate(parts, axis=1)]


@template("group_conv2d_nchw.cuda", reference=_group_reference)
def group_conv2d_nchw(data: list[int], kernel: list[int], stride: list[int], padding: list[int], dilation: list[int],
                      groups: int) -> tuple[Any, list[Any]]:
    x = te.placeholder(tuple(data), name="data")
    wt = te.placeholder(tuple(kernel), name="kernel")
    y = topi.group_conv2d_nchw(x, wt, tuple(stride), tuple(padding), tuple(dilation), groups=groups)
    get_config().add_flop(2.0 * float(np.prod(_shape(y))) * kernel[1] * kernel[2] * kernel[3])
    return schedules.schedule_group_conv2d_nchw(y), [x, wt, y]


def _depthwise_reference(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    _, kernel, stride, padding, dilation = args
    if not reference.uniform(stride, padding) or list(dilation) != [1, 1]:
        return []
    x, w = inputs
    c, m, kh, kw = kernel
    return [ref.depthwise_conv2d_nchw(x, w.reshape(c * m, 1, kh, kw), stride[0], padding[0])]


@template("depthwise_conv2d_nchw.cuda", reference=_depthwise_reference)
def depthwise_conv2d_nchw(data: list[int], kernel: list[int], stride: list[int], padding: list[int],
                          dilation: list[int]) -> tuple[Any, list[Any]]:
    x = te.placeholder(tuple(data), name="data")
    wt = te.placeholder(tuple(kernel), name="kernel")
    y = topi.depthwise_conv2d_nchw(x, wt, tuple(stride), tuple(padding), tuple(dilation))
    get_config().add_flop(2.0 * float(np.prod(_shape(y))) * kernel[2] * kernel[3])
    return schedules.schedule_depthwise_conv2d_nchw(y), [x, wt, y]



@template("dense.cuda", reference=reference.dense)
def dense(batch: int, k: int, o: int, bias: bool = False) -> tuple[Any, list[Any]]:
    x = te.placeholder((batch, k), name="data")
    wt = te.placeholder((o, k), name="weight")
    b = te.placeholder((o,), name="bias") if bias else None
    y = topi.dense(x, wt, b)
    get_config().add_flop(2.0 * batch * k * o)
    return schedules.schedule_dense(y), [x, wt, *([b] if b is not None else []), y]



def _gemm_point(m: int, n: int, k: int) -> Any:
    """The GEMM knobs on the template's config; the schedule's tiles of its point (the hand
    tiles for the fallback, where they divide the shape; the space's first point otherwise)."""
    cfg = get_config()
    define_matmul_space(cfg, m, n, k)
    hand = schedules.MatmulTiles()
    fits = m % hand.bm == 0 and n % hand.bn == 0 and k % hand.bk == 0
    if isinstance(cfg, ConfigSpace):  # the space being built: any valid tiles declare it
        return hand if fits else _ONES
    if cfg.is_fallback:
        if fits:
            for name, v in hand_matmul_knobs(m, n, k).items():
                cfg.set(name, v)
            return hand
        for name, sp in cfg.space.space_map.items():  # the space's first point: one element per thread
            cfg.set(name, sp.entities[0].to_json())
    return matmul_tiles(cfg)


#: the space's first point (every split's inner factors 1): valid for any shape
_ONES = schedules.MatmulTiles(bm=1, bn=1, bk=1, tm=1, tn=1, vec=1)


@template("matmul.cuda", reference=reference.matmul)
def matmul(m: int, n: int, k: int) -> tuple[Any, list[Any]]:
    a, b, c = schedules.matmul(m, n, k)
    tiles = _gemm_point(m, n, k)
    cfg = get_config()
    cfg.add_flop(2.0 * m * n * k)
    cfg.workload = ["matmul.cuda", [m, n, k]]
    return schedules.schedule_matmul(c, _double_buffer(tiles)), [a, b, c]


def _double_buffer(tiles: Any) -> Any:
    """The ``double_buffer`` knob (defined last, so the other knobs keep their indices; records
    written before it were measured without): the GEMM's shared tiles double-buffered, by
    ``schedule_matmul`` (which reads it from a record too, so a model builds what was measured)."""
    cfg = get_config()
    cfg.define_knob("double_buffer", [0, 1], absent=0)
    if cfg.is_fallback:
        cfg.set("double_buffer", 0)  # the hand schedule, unchanged
    return replace(tiles, double_buffer=bool(cfg["double_buffer"].val))


def _conv1x1_reference(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    x, w = inputs  # data [C, H*W], kernel [OC, C]
    return [(w.astype(np.float64) @ x.astype(np.float64)).astype(np.float32)]


@template("conv2d_1x1.cuda", reference=_conv1x1_reference)
def conv2d_1x1(c: int, h: int, w: int, oc: int) -> tuple[Any, list[Any]]:
    data = te.placeholder((c, h * w), name="data")  # NCHW data of batch 1, its pixels as one axis
    kernel = te.placeholder((oc, c), name="kernel")  # OIHW 1x1 weights
    out = schedules.conv2d_1x1(data, kernel, (h, w))  # a model's conv2d_1x1 node declares the same
    tiles = _gemm_point(oc, h * w, c)
    cfg = get_config()
    cfg.add_flop(2.0 * oc * h * w * c)
    cfg.workload = ["conv2d_1x1.cuda", [c, h, w, oc]]
    return schedules.schedule_matmul(out, _double_buffer(tiles)), [data, kernel, out]
