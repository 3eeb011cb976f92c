"""``conv2d_nchw_winograd.cuda``: TVM's GPU Winograd template, the weight transformed at compile time.

A 3x3, stride-1 convolution by F(m x m, 3 x 3) (m = 2 or 4, a template argument) as
:func:`vdla.compiler.topi.winograd.conv2d_winograd_nchw` declares it, in three kernels as TVM's
``schedule_winograd_cuda`` runs them:

* the **input transform**: one thread per (channel, tile), the tile's first pass ``B^T d`` in
  registers (``alpha x alpha``, unrolled, the padding inlined into its reads), then the
  ``alpha^2`` transformed values ``V [alpha^2, C, P]`` (consecutive threads store consecutive tiles);
* the **batched GEMM** ``M[e] = U[e]^T V[e]`` over the ``alpha^2`` tile positions, tuned: a block per
  position (``tile_b``: TVM's, blocks only) x ``tile_y`` output channels x ``tile_x`` tiles (each
  in four: blocks, virtual threads, threads, per thread), the input channels in steps of
  ``tile_rc`` copied to shared memory by the whole block, a thread's register tile unrolled, the
  reduction step unrolled up to ``auto_unroll_max_step`` copies (explicitly when ``unroll_explicit``);
* the **inverse transform**: one thread per (output channel, tile), ``M A`` in registers, then
  the tile's ``m x m`` pixels (those past a ragged edge skipped).

The kernel is the template's input already transformed (TVM's "PT", pre-transformed: a model's
weights are constants, so their transform is done once ahead of the runs, not timed with them):
``U [alpha^2, C, OC]`` (:func:`~vdla.compiler.topi.winograd.winograd_weight_nchw`, the memory of
TVM's ``(alpha, alpha, CI, CO)``). The arguments are ``conv2d_nchw.cuda``'s and ``m``: ``[data,
kernel OIHW, stride, padding4, dilation, m]``, so a direct workload becomes a Winograd task by
appending ``m`` (:func:`winograd_args`: ``create(NAME, winograd_args(task.args, m), task.target)``
for a model's 3x3 stride-1 ``conv2d_nchw.cuda`` tasks; ``vdla tune MODEL --target cuda`` lists
both, and the GPU graph build runs a convolution by Winograd when this template's best record of
its workload is faster than the direct one's: :mod:`vdla.compiler.graph.strategy.cuda`). The
schedule is :mod:`vdla.compiler.targets.cuda.schedules.winograd`'s. The numpy reference is the direct
convolution with the OIHW weights the kernel came from (the inputs are made that way; the
weights are recovered from ``U``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...targets.cuda.schedules.winograd import (  # the schedule a model's Winograd convolutions build too
    NAME,
    TRANSFORM_THREADS,
    UNROLL_STEPS,
    WinogradPoint,
    define_winograd_space,
    schedule_winograd_cuda,
    winograd_args,
)
from ...targets.cuda.schedules.winograd import hand_knobs as _hand
from ...topi import testing as ref
from ...topi.util import const_shape, find_tagged
from ...topi.winograd import WINOGRAD_TILES, conv2d_winograd_nchw, unpack_weight_nchw, winograd_weight_nchw
from ..dispatch import get_config
from ..registry import template
from ..space import ConfigSpace

__all__ = ["conv2d_nchw_winograd", "schedule_winograd_cuda", "winograd_args", "WinogradPoint",
           "UNROLL_STEPS", "TRANSFORM_THREADS", "NAME", "unpack_weight"]


def _inputs(args: list[Any], rng: np.random.Generator) -> list[np.ndarray]:
    """Random data and the transform of random OIHW weights (a random ``U`` is no 3x3 kernel's)."""
    data, kernel, *_, m = args
    x = rng.standard_normal(tuple(data)).astype(np.float32)
    w = rng.standard_normal(tuple(kernel)).astype(np.float32)
    return [x, winograd_weight_nchw(w, m)]


#: the OIHW weights a transformed kernel came from (float64)
unpack_weight = unpack_weight_nchw


def _reference(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    _, _, _, padding, _, m = args
    x, u = inputs
    pt, pl, pb, pr = padding
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    return [ref.conv2d_nchw(xp, unpack_weight(u, m), 1, 0).astype(np.float32)]


@template(NAME, reference=_reference, inputs=_inputs)
def conv2d_nchw_winograd(data: list[int], kernel: list[int], stride: list[int], padding: list[int],
                         dilation: list[int], m: int) -> tuple[Any, list[Any]]:
    if winograd_args([data, kernel, stride, padding, dilation], m) is None:
        raise ValueError(f"{NAME}: F(m x m, 3 x 3) with m in {WINOGRAD_TILES} takes a 3x3 kernel of stride 1 and "
                         f"dilation 1, got kernel {kernel}, stride {stride}, dilation {dilation}, m {m}")
    oc, c = kernel[:2]
    x = te.placeholder(tuple(data), name="data")
    u = te.placeholder(((m + 2) ** 2, c, oc), name="kernel_pack")
    y = conv2d_winograd_nchw(x, u, tuple(padding), m)
    e2, _, tiles = const_shape(find_tagged([y], "winograd_gemm").output(0))
    cfg = get_config()
    define_winograd_space(cfg, e2, oc, tiles, c)
    cfg.workload = [NAME, [list(data), list(kernel), list(stride), list(padding), list(dilation), m]]
    # TVM counts a Winograd convolution's flops as the direct convolution's (so GFLOP/s compare)
    cfg.add_flop(2.0 * float(np.prod(const_shape(y))) * c * 9)
    if cfg.is_fallback:
        for name, val in _hand(e2, oc, tiles, c).items():
            cfg.set(name, val)
    if isinstance(cfg, ConfigSpace):  # the space being built: any valid tiles declare it
        return schedule_winograd_cuda(y, WinogradPoint(1, 1, 1, 1, 1, 1, 1, 0, False)), [x, u, y]
    return schedule_winograd_cuda(y, WinogradPoint.from_config(cfg)), [x, u, y]
