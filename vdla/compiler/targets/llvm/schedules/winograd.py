"""CPU schedule of the Winograd convolution on NCHW[x]c data (:mod:`vdla.compiler.topi.winograd`).

Four loop nests, each a parallel loop of its own:

* the padded input, once (as the direct convolution's);
* the input transform: per input tile, its first pass (``B^T d``, ``alpha x alpha`` vectors in
  a local buffer) then the ``alpha^2`` transformed vectors (unrolled, so each coefficient is a
  constant and each select over positions folds away);
* the batched GEMM: per tile position and output block, the packed 1x1 convolution's register
  tile (:func:`.conv2d.register_tile`: tiles x one output block of accumulators over the input
  channels);
* the output transform with the fused tail (bias, ReLU, residual add): per output tile, its
  first pass (``M A``, ``alpha x m`` vectors in a local buffer) then the ``m x m`` pixels,
  unrolled, the block vectorised.
"""

from __future__ import annotations

from collections.abc import Sequence

from .... import te
from ....schedule.primitives import Schedule
from ....topi.util import as_list, const_shape, find_tagged
from .conv2d import _blocked_pad_at_root, _tail, register_tile

__all__ = ["schedule_conv2d_winograd_NCHWc", "winograd_tile"]


def winograd_tile(channels: int, out_channels: int, oh: int, ow: int) -> int | None:
    """The output tile ``m`` of F(m x m, 3 x 3) for a 3x3, stride-1 convolution by the cost rule,
    or None to keep the direct convolution.

    The transforms are passes over memory per input and per output channel, so a layer with few
    channels on either side (under 16) stays direct, and so does an output under 7x7 (a handful of
    tiles: the GEMM reuses each transformed weight, 16/9 of the direct kernel's, too few times). F(4x4) does a quarter of the direct
    multiplications, F(2x2) 4/9, but F(4x4)'s tiles cover the output in steps of 4: where that
    wastes more than 15 % of the GEMM on padding (ResNet's 14- and 7-pixel layers, SqueezeNet's
    13) F(2x2) is used. Measured on this project's Zen 3 machine (AVX2, 2 threads, one process,
    interleaved, per layer with its ReLU and bias): F(4x4) took 0.37-0.55x the direct
    convolution's time at 27-56 pixels, F(2x2) 0.5-0.7x at 7-14 pixels (F(4x4) 0.6-0.75x)."""
    if min(channels, out_channels) < 16 or min(oh, ow) < 7:
        return None
    covered = (-(-oh // 4) * 4) * (-(-ow // 4) * 4)
    return 4 if min(oh, ow) >= 16 and covered <= 1.15 * oh * ow else 2


def schedule_conv2d_winograd_NCHWc(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:  # noqa: N802
    """The four nests of the module doc, from the output (possibly a fused injective tail)."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    conv = find_tagged(outs, "conv2d_winograd_NCHWc")
    out, tail = _tail(s, outs, conv)
    m = int(conv.attrs["winograd_m"])
    if tail is not None:  # the output transform is additions: inlined into the tail, one nest
        s[conv].compute_inline()
    cols, gemm, trans, rows = (find_tagged(outs, t) for t in ("winograd_output_cols", "winograd_gemm",
                                                              "winograd_input", "winograd_input_rows"))

    # the output transform (and tail): (n, k.outer, tile rows) in parallel, a tile per iteration
    n, k, y, x, kb = out.op.axis
    yo, yi = out.split(y, factor=m)
    xo, xi = out.split(x, factor=m)
    out.reorder(n, k, yo, xo, yi, xi, kb)
    out.parallel(out.fuse(n, k, yo))
    out.unroll(yi)
    out.unroll(xi)
    out.vectorize(kb)
    # the tile's first pass (M A: alpha x m vectors) just before its pixels
    cs = s[cols]
    cs.compute_at(out, xo)
    _, _, _, cxi, cxj, cb_ = cs.op.axis
    cs.unroll(cxj)  # the select's index; cxi only indexes
    cs.vectorize(cb_)

    # the GEMM: the packed 1x1 convolution's register tile, tiles x one output block
    _, _, _, tiles, ob = const_shape(gemm.output(0))
    _, reg_n = register_tile(1, tiles, ob)
    acc = s[s.cache_write(gemm.output(0), "local")]
    gs = s[gemm]
    gn, ge, gk, gp, gb = gs.op.axis
    po, pi = gs.split(gp, factor=reg_n)
    gs.reorder(gn, ge, gk, po, pi, gb)
    gs.parallel(gs.fuse(gn, ge, gk))
    gs.unroll(pi)
    gs.vectorize(gb)
    acc.compute_at(gs, po)
    _, _, _, pa, ba = acc.op.axis
    rco, rci = acc.op.reduce_axis
    acc.reorder(rco, rci, pa, ba)
    acc.unroll(rci)
    acc.unroll(pa)
    acc.vectorize(ba)

    # the input transform: a tile's positions unrolled over one vector of channels
    ts = s[trans]
    tn, txi, tnu, tc, tp, tb = ts.op.axis
    ts.reorder(tn, tc, tp, txi, tnu, tb)
    ts.parallel(ts.fuse(tn, tc))
    ts.unroll(tnu)  # the select's index; txi only indexes
    ts.vectorize(tb)
    # the tile's first pass (B^T d: alpha x alpha vectors) just before its positions
    rs = s[rows]
    rs.compute_at(ts, tp)
    _, _, _, rxi, rj, rb = rs.op.axis
    rs.unroll(rxi)  # the select's index; rj only indexes
    rs.vectorize(rb)
    _blocked_pad_at_root(s, rows)  # the padded input once, as the direct convolution's
    return s
