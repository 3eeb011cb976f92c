"""Packed int8 conv2d on VDLA: ``conv2d_packed`` (data ``(N/b, C/c, H, W, b, c)``, weights
``(O/c, I/c, KH, KW, c_o, c_i)``, bias ``(O/c, b, c_o)`` int32, the residual in the output's
layout) with its fused ALU tail, and its schedule. The schedule skeleton
(:func:`_schedule_conv`, with outer dimensions for the grouped and transposed templates)
lives here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .... import te
from ....schedule.primitives import Schedule
from ....topi.util import const_shape, conv_out, pad, padding4, pair
from ..env import Env, VDLAError, get_env
from .common import (
    Knobs,
    Tail,
    _blocks_match,
    _buffer_stages,
    _check_tail_inputs,
    _conv_reduce_axes,
    _conv_stride,
    _epilogue,
    _place_loads_and_gemm,
    _place_tail,
    _stages,
    _tail_inputs,
)
from .tiling import _choose_threads, _pick_conv_tiles, _pick_outer_tiles, conv_cost, fused_tail
from .tuning import define_conv_space, record_fallback, resolve

__all__ = ["conv2d_packed", "schedule_conv2d_packed"]


def conv2d_packed(
    data: te.Tensor,
    kernel: te.Tensor,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    tail: Tail | None = None,
    bias: te.Tensor | None = None,
    residual: te.Tensor | None = None,
    config: Any = None,
    name: str = "conv2d",
) -> te.Tensor:
    """Packed int8 conv2d with its ALU tail; returns the int8 output tensor."""
    env = get_env(config)
    tail = tail or Tail()
    nb, cb, h, w, b, ci = const_shape(data)
    ob, kcb, kh, kw, co, kci = const_shape(kernel)
    c = env.config
    if not _blocks_match(env, b, ci, co, kci) or kcb != cb:
        raise VDLAError(
            f"conv2d_packed: data {tuple(data.shape)} / kernel {tuple(kernel.shape)} do not match the config's "
            f"blocks (batch {c.batch}, block_in {c.block_in}, block_out {c.block_out})"
        )
    _check_tail_inputs("conv2d_packed", tail, bias, residual)
    sh, sw = pair(stride, "stride")
    pt, pl, pb, pr = padding4(padding)
    oh, ow = conv_out(h, kh, sh, pt, pb), conv_out(w, kw, sw, pl, pr)
    dp = pad(data, [0, 0, pt, pl, 0, 0], [0, 0, pb, pr, 0, 0], name=f"{name}_pad")
    ric, rky, rkx, rci = _conv_reduce_axes(cb, kh, kw, ci)
    adt = env.acc_dtype
    acc = te.compute(
        (nb, ob, oh, ow, b, co),
        lambda n, o, y, x, bi, oi: te.sum(
            dp[n, ric, y * sh + rky, x * sw + rkx, bi, rci].astype(adt)
            * kernel[o, ric, rky, rkx, oi, rci].astype(adt),
            axis=[ric, rky, rkx, rci],
        ),
        name=name,
        tag="vdla_conv2d",
        attrs={"workload": ["conv2d_packed.vdla", [list(const_shape(data)), list(const_shape(kernel)), [sh, sw],
                                                   [pt, pl, pb, pr], bias is not None, residual is not None, c.name]]},
    )
    return _epilogue(env, acc, tail, bias, residual, name)


def schedule_conv2d_packed(out: te.Tensor, knobs: Knobs | None = None, config: Any = None) -> Schedule:
    """VTA's conv2d schedule: output tiles (store point), loads at the input-channel chunk,
    GEMM tensorized at the batch lane, the ALU tail on the tile, optional virtual threads."""
    env = get_env(config)
    acc_op, _, extra = _stages(out)
    shape = const_shape(out)
    kshape = const_shape(acc_op.input_tensors()[1])
    stride = _conv_stride(acc_op)
    has_bias, has_res = _tail_inputs(extra, out)
    ob, oh, ow, cb = shape[1], shape[2], shape[3], kshape[1]
    cfg, tuned = resolve(acc_op, knobs, lambda cfg: define_conv_space(cfg, ob, oh, ow, cb))
    fused = fused_tail(out, env.config)
    k = _choose_threads(
        tuned or knobs or Knobs(),
        lambda kk: _pick_conv_tiles(env, shape, kshape, stride, kk, has_bias, has_res, fused),
        lambda kk: conv_cost(env, shape, kshape, stride, kk, fused),
        f"conv2d {shape}",
    )
    record_fallback(cfg, k, {"tile_co": ob, "tile_h": oh, "tile_w": ow, "tile_ci": cb})
    return _schedule_conv(out, env, k)


def _schedule_conv(out: te.Tensor, env: Env, k: Knobs, outer_dims: tuple[int, ...] = (),
                   threads_over_outer: bool = False) -> Schedule:
    """The conv2d schedule with tiles ``k``, for conv2d and the conv-like templates of
    :mod:`.group_conv2d`, :mod:`.conv2d_transpose`: ``outer_dims`` are output dimensions besides the conv's
    ``(n, o, y, x, b, c)`` (the transpose's phases, the groups), kept as whole loops outside the
    tiles and the input-channel chunks; ``threads_over_outer`` puts ``k.oc_nthread`` virtual
    threads on the first of them rather than on the output-channel tiles."""
    acc_op, alu_op, extra = _stages(out)
    s = te.create_schedule(out.op)
    data, kernel = acc_op.input_tensors()
    cdata, ckern, cextra = _buffer_stages(s, env, acc_op, alu_op, data, kernel, extra)

    def split_outer(axes: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        return ([a for d, a in enumerate(axes) if d in outer_dims],
                [a for d, a in enumerate(axes) if d not in outer_dims])

    # output tiles
    so = s[out]
    outer, (n, o, y, x, bi, oi) = split_outer(so.op.axis)
    n0, n1 = so.split(n, factor=k.tile_b)
    o0, o1 = so.split(o, factor=k.tile_co)
    y0, y1 = so.split(y, factor=k.tile_h)
    x0, x1 = so.split(x, factor=k.tile_w)
    inner: list[Any] = []
    if k.tile_g and k.tile_g > 1:  # several groups per tile: the first outer axis split, its inner part in the tile
        g0, g1 = so.split(outer[0], factor=k.tile_g)
        outer, inner = [g0, *outer[1:]], [g1]
    so.reorder(n0, *outer, y0, o0, x0, n1, *inner, o1, y1, x1, bi, oi)
    lead = [n0, *outer]
    if k.oc_nthread > 1:
        if threads_over_outer:
            g0, vt = so.split(outer[0], factor=k.oc_nthread)
            so.reorder(vt, n0, g0, y0, o0, x0)
            lead = [vt, n0, g0]
        else:
            o0, vt = so.split(o0, factor=k.oc_nthread)
            so.reorder(vt, *lead, y0, o0, x0)
            lead = [vt, *lead]
        so.bind(vt, te.thread_axis("cthread"))
    if k.h_nthread > 1:
        y0, vt2 = so.split(y0, factor=k.h_nthread)
        so.reorder(vt2, *lead, y0, o0, x0)
        so.bind(vt2, te.thread_axis("cthread"))
    _place_tail(s, env, so, x0, n1, acc_op, alu_op, cextra)
    # accumulation
    sc = s[acc_op]
    couter, (cn, co_, cy, cx, cbi, coi) = split_outer(sc.op.axis)
    ric, rky, rkx, rci = sc.op.reduce_axis
    ric0, ric1 = sc.split(ric, factor=k.tile_ci)
    if k.tile_g and k.tile_g > 1:  # the tile's groups inside the input-channel chunk: one load covers them all
        sc.reorder(cn, *couter[1:], ric0, couter[0], ric1, rky, rkx, co_, cy, cx, cbi, coi, rci)
    else:
        sc.reorder(cn, *couter, ric0, ric1, rky, rkx, co_, cy, cx, cbi, coi, rci)
    _place_loads_and_gemm(s, env, sc, ric0, (cdata, ckern), cbi)
    s.vdla_knobs = k  # type: ignore[attr-defined]
    return s


def _schedule_outer(out: te.Tensor, k: Knobs | None, env: Env, kind: str) -> Schedule:
    """conv2d's schedule (:func:`.topi._schedule_conv`) with the phases or the groups as outer
    loops; the tiles are picked for the stride-1 conv of one phase, or the conv of one group."""
    acc_op, _, extra = _stages(out)
    geo = acc_op.attrs["vdla_geometry"]
    shape = const_shape(out)
    ks = const_shape(acc_op.input_tensors()[1])
    b, co = shape[-2], shape[-1]
    nb = shape[0]
    if kind == "transpose":
        _, s, _ = geo
        ob, oh, ow = shape[1], shape[2], shape[4]
        cb, kh, kw = ks[3], ks[4], ks[5]
        stride = (1, 1)
        n_outer = s * s
        outer_dims: tuple[int, ...] = (3, 5)  # (n, o, q, ry, p, rx, b, c): the phase (ry, rx)
    else:
        _, stride, groups = geo
        ob, oh, ow = shape[2], shape[3], shape[4]
        cb, kh, kw = ks[1], ks[2], ks[3]
        n_outer = groups
        outer_dims = (1,)  # (n, g, o, y, x, b, c): the group
    shape6 = (nb, ob, oh, ow, b, co)
    kshape6 = (ob, cb, kh, kw, co, ks[-1])
    has_bias, has_res = _tail_inputs(extra, out)

    def pick(kk: Knobs) -> tuple[Knobs, bool]:
        """(tiles, threads over the outer axis?)"""
        over_outer = kind == "group" and kk.oc_nthread > 1 and ob % (kk.oc_nthread) != 0
        if over_outer:
            if n_outer % kk.oc_nthread:
                raise VDLAError(f"{acc_op.name}: {kk.oc_nthread} threads divide neither the output-channel "
                                f"blocks of a group ({ob}) nor the groups ({n_outer})")
            return _pick_outer_tiles(env, shape6, kshape6, stride, kk.replace(oc_nthread=1), has_bias, has_res,
                         kk.oc_nthread).replace(oc_nthread=kk.oc_nthread), True
        return _pick_conv_tiles(env, shape6, kshape6, stride, kk, has_bias, has_res), False

    def cost(picked: tuple[Knobs, bool]) -> float:
        kk, over_outer = picked
        # the cost of the tiles within one group; the model does not cover threads over groups
        return conv_cost(env, shape6, kshape6, stride, kk.replace(oc_nthread=1) if over_outer else kk)

    cfg, tuned = resolve(acc_op, k, lambda cfg: define_conv_space(cfg, ob, oh, ow, cb))
    k, over_outer = _choose_threads(tuned or k or Knobs(), pick, cost, f"{acc_op.name} {shape}")
    record_fallback(cfg, k, {"tile_co": ob, "tile_h": oh, "tile_w": ow, "tile_ci": cb})
    if kind == "group" and k.tile_g is None and ob == 1 and cb == 1:
        k = k.replace(tile_g=_groups_per_tile(env, k, n_outer // (k.oc_nthread if over_outer else 1), stride,
                                              (kh, kw), has_bias, has_res))
    return _schedule_conv(out, env, k, outer_dims, over_outer)


#: the fewest tiles per virtual thread a depthwise conv's groups are packed into: fewer, larger
#: tiles pay the per-instruction overheads less often, but the first load and the last store of
#: a thread are not overlapped with anything
MIN_GROUP_TILES = 8


def _groups_per_tile(env: Env, k: Knobs, groups: int, stride: tuple[int, int], ksize: tuple[int, int],
                     has_bias: int, has_res: bool) -> int:
    """How many groups of a depthwise conv (one channel block in and out per group) one tile
    computes: one GEMM, one ALU instruction per tail op and one store for all of them instead
    of one per group (a 7x7 group is 49 accumulator rows, about the per-instruction overheads
    of its dozen instructions). The largest divisor of ``groups`` whose tiles fit the buffers
    (a copy per virtual thread) and leave at least :data:`MIN_GROUP_TILES` tiles per thread."""
    c = env.config
    nt = k.oc_nthread * k.h_nthread
    rows = k.tile_b * k.tile_co * k.tile_h * k.tile_w
    acc = rows * (1 + int(has_res)) + k.tile_co * k.tile_b * int(has_bias)
    ih, iw = (k.tile_h - 1) * stride[0] + ksize[0], (k.tile_w - 1) * stride[1] + ksize[1]
    inp = k.tile_b * k.tile_ci * ih * iw
    wgt = k.tile_co * k.tile_ci * ksize[0] * ksize[1]
    for tg in range(groups, 1, -1):
        if groups % tg or groups // tg < MIN_GROUP_TILES:
            continue
        if tg * acc * nt <= c.acc_depth and tg * inp * nt <= c.inp_depth and tg * wgt * nt <= c.wgt_depth:
            return tg
    return 1
