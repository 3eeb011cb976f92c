"""More operator templates for VDLA: conv2d_transpose (DCGAN) and grouped conv2d (MobileNet-G).

Both reuse the packed conv2d machinery of :mod:`.topi` (the same ALU tail, tile picker,
loads at the input-channel chunk, GEMM tensorized at the batch lane, optional virtual
threads); what differs is how the output is indexed.

**conv2d_transpose** is, as in VTA, a convolution over the input dilated by the stride
(``s - 1`` zero rows and columns between input pixels) and padded by ``k - 1 - p``.
Most of that conv's taps read inserted zeros: for stride ``s`` only one kernel row in
``s`` (and one column in ``s``) meets a real input row of a given output row. VTA skipped
the zero rows at micro-op level (``InjectConv2DTransposeSkip``: each GEMM uop pushed under
an ``if`` on the dilation condition, the loops unrolled). Here the skip is made static
by grouping the output pixels by *phase* ``(y mod s, x mod s)``: within one phase the
taps that meet real data are a fixed ``J x J`` sub-kernel (``J = ceil(k / s)``) and the
input they read is the undilated input shifted by a per-phase offset, so each phase is
a plain stride-1 convolution of the undilated input. The zeros are never loaded, never
multiplied, and every GEMM kernel stays affine (foldable into iter_out/iter_in)::

    out[n, o, s*q + ry, s*p + rx] = sum_{i, j, jx} x[n, i, q + j + dy(ry), p + jx + dx(rx)]
                                              * w[i, o, by(ry) + s*(J-1-j), bx(rx) + s*(J-1-jx)]

with ``b(r) = (r + pad) mod s`` and ``d(r) = floor((r + pad) / s) - (J - 1)``; taps with a
kernel index ``>= k`` are zero (only when ``s`` does not divide ``k``). The output is
computed as the 8-D tensor ``(N/b, O/c, H'/s, s, W'/s, s, b, c)``, byte-for-byte the
packed ``(N/b, O/c, H', W', b, c)`` (``.reshape`` it); its store is one 2D STORE per
output row of a phase (x stride ``s``). The weights come in PyTorch/ONNX's IOHW and
:func:`pack_conv2d_transpose_weight` gathers the per-phase sub-kernels on the host
(``(s, s, O/c, I/c, J, J, c_o, c_i)``), as VTA packed its IOHW16i16o kernels on the host.
Requires ``H' = (H-1)s - 2p + k`` divisible by ``s`` (output_padding 0), as in DCGAN.

**Grouped conv2d** with ``G`` groups of ``I/G`` input and ``O/G`` output channels, each a
whole number of blocks: data ``(N/b, I/c, H, W, b, c)``, weights
``(O/c, (I/G)/c, KH, KW, c_o, c_i)``; the output is computed as the 7-D tensor
``(N/b, G, (O/G)/c, H', W', b, c)``, byte-for-byte the packed 6-D output. The group is an
outer loop of the schedule; within a group it is conv2d_packed. Virtual threads over
output-channel tiles inside a group, over groups (``oc_nthread`` when a group has a single
tile) or over rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import te
from ...schedule.primitives import Schedule
from ...topi.util import const_shape, pad, pair
from .env import Env, VDLAError, get_env
from .packing import (
    pack_conv2d_transpose_weight,
)
from .topi import (
    Knobs,
    Tail,
    _apply_tail,
    _blocks_match,
    _check_tail_inputs,
    _choose_threads,
    _conv_reduce_axes,
    _conv_sums,
    _divisor_at_most,
    _epilogue,
    _pick_conv_tiles,
    _schedule_conv,
    _stages,
    _tail_inputs,
    conv_cost,
)

__all__ = [
    "conv2d_transpose_packed", "schedule_conv2d_transpose_packed", "pack_conv2d_transpose_weight",
    "conv2d_transpose_reference", "transpose_geometry",
    "group_conv2d_packed", "schedule_group_conv2d_packed", "group_conv2d_reference",
]


# ---------------------------------------------------------------------------- conv2d_transpose


def transpose_geometry(h: int, w: int, k: int, stride: int, padding: int) -> dict[str, int]:
    """Output size, taps per phase and the padding of the undilated input, for square kernels."""
    s, p = stride, padding
    if not 0 <= p <= k - 1:
        raise VDLAError(f"conv2d_transpose: padding {p} must be in [0, kernel - 1 = {k - 1}]")
    oh, ow = (h - 1) * s - 2 * p + k, (w - 1) * s - 2 * p + k
    if oh % s or ow % s:
        raise VDLAError(
            f"conv2d_transpose: output {oh}x{ow} is not a multiple of the stride {s}; the phase "
            "decomposition needs (H-1)s - 2p + k divisible by s (DCGAN's k=4, s=2, p=1 is)"
        )
    jt = -(-k // s)  # taps per phase and dimension
    d0 = p // s - (jt - 1)  # input offset of phase 0 (most negative)
    dmax = (s - 1 + p) // s - (jt - 1)
    q_h, q_w = oh // s, ow // s
    pad_top = max(0, -d0)
    pad_bot = max(0, q_h - 1 + jt - 1 + dmax - (h - 1))
    pad_right = max(0, q_w - 1 + jt - 1 + dmax - (w - 1))
    return {"oh": oh, "ow": ow, "q_h": q_h, "q_w": q_w, "taps": jt, "d0": d0, "pad_top": pad_top,
            "pad_bot": pad_bot, "pad_right": pad_right}


def conv2d_transpose_packed(
    data: te.Tensor,
    kernel: te.Tensor,
    stride: int = 2,
    padding: int = 1,
    kernel_size: int = 4,
    tail: Tail | None = None,
    bias: te.Tensor | None = None,
    residual: te.Tensor | None = None,
    config: Any = None,
    name: str = "conv2d_transpose",
) -> te.Tensor:
    """Packed int8 conv2d_transpose; ``kernel`` from :func:`pack_conv2d_transpose_weight`.
    Returns the int8 output as ``(N/b, O/c, H'/s, s, W'/s, s, b, c)`` (see the module doc)."""
    env = get_env(config)
    tail = tail or Tail()
    nb, cb, h, w, b, ci = const_shape(data)
    ks = const_shape(kernel)
    s, p, k = stride, padding, kernel_size
    geo = transpose_geometry(h, w, k, s, p)
    jt = geo["taps"]
    if len(ks) != 8 or ks[:2] != (s, s) or ks[3] != cb or ks[4:6] != (jt, jt):
        raise VDLAError(
            f"conv2d_transpose_packed: kernel {ks} is not the per-phase packing (s, s, O/c, I/c, J, J, c, c) = "
            f"({s}, {s}, O/c, {cb}, {jt}, {jt}, ...) of a {k}x{k} stride-{s} kernel"
        )
    ob, co, kci = ks[2], ks[6], ks[7]
    if not _blocks_match(env, b, ci, co, kci):
        raise VDLAError(f"conv2d_transpose_packed: data {tuple(data.shape)} / kernel {ks} do not match the config")
    _check_tail_inputs("conv2d_transpose_packed", tail, bias, residual)
    pt, pb, pr = geo["pad_top"], geo["pad_bot"], geo["pad_right"]
    dp = pad(data, [0, 0, pt, pt, 0, 0], [0, 0, pb, pr, 0, 0], name=f"{name}_pad")
    base = geo["d0"] + pt  # >= 0: padded row of phase 0's first tap
    pm = p % s
    ric, rky, rkx, rci = _conv_reduce_axes(cb, jt, jt, ci)
    adt = env.acc_dtype
    shape = (nb, ob, geo["q_h"], s, geo["q_w"], s, b, co)

    def body(n: Any, o: Any, q: Any, ry: Any, pp: Any, rx: Any, bi: Any, oi: Any) -> Any:
        # the phase offset floor((r + p) / s) - floor(p / s) is 0 or 1; a function of the
        # (outer) phase loop only, so every index stays affine in the tile's loops
        y = q + rky + base + (ry + pm) // s if s > 1 else q + rky + base
        x = pp + rkx + base + (rx + pm) // s if s > 1 else pp + rkx + base
        return te.sum(
            dp[n, ric, y, x, bi, rci].astype(adt) * kernel[ry, rx, o, ric, rky, rkx, oi, rci].astype(adt),
            axis=[ric, rky, rkx, rci],
        )

    acc = te.compute(shape, body, name=name, tag="vdla_conv2d_transpose",
                     attrs={"vdla_geometry": ("transpose", s, geo)})
    return _epilogue(env, acc, tail, bias, residual, name)


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


# ---------------------------------------------------------------------------- grouped conv2d


def group_conv2d_packed(
    data: te.Tensor,
    kernel: te.Tensor,
    groups: int,
    stride: int | Sequence[int] = 1,
    padding: int = 0,
    tail: Tail | None = None,
    bias: te.Tensor | None = None,
    residual: te.Tensor | None = None,
    config: Any = None,
    name: str = "group_conv2d",
) -> te.Tensor:
    """Packed int8 grouped conv2d; returns the int8 output as ``(N/b, G, (O/G)/c, H', W', b, c)``."""
    env = get_env(config)
    tail = tail or Tail()
    nb, cb, h, w, b, ci = const_shape(data)
    ob, gcb, kh, kw, co, kci = const_shape(kernel)
    c = env.config
    if not _blocks_match(env, b, ci, co, kci):
        raise VDLAError(f"group_conv2d_packed: data {tuple(data.shape)} / kernel {tuple(kernel.shape)} do not match "
                        f"the config's blocks (batch {c.batch}, block_in {c.block_in}, block_out {c.block_out})")
    if cb % groups or ob % groups or gcb * groups != cb:
        raise VDLAError(
            f"group_conv2d_packed: {groups} groups need whole channel blocks per group: input {cb} blocks, output "
            f"{ob} blocks, kernel {gcb} input blocks per group (input channels per group must be a multiple of "
            f"{c.block_in}, output channels per group of {c.block_out})"
        )
    _check_tail_inputs("group_conv2d_packed", tail, bias, residual)
    sh, sw = pair(stride, "stride")
    oh = (h + 2 * padding - kh) // sh + 1
    ow = (w + 2 * padding - kw) // sw + 1
    ogb = ob // groups
    dp = pad(data, [0, 0, padding, padding, 0, 0], name=f"{name}_pad")
    ric, rky, rkx, rci = _conv_reduce_axes(gcb, kh, kw, ci)
    adt = env.acc_dtype
    acc = te.compute(
        (nb, groups, ogb, oh, ow, b, co),
        lambda n, g, o, y, x, bi, oi: te.sum(
            dp[n, g * gcb + ric, y * sh + rky, x * sw + rkx, bi, rci].astype(adt)
            * kernel[g * ogb + o, ric, rky, rkx, oi, rci].astype(adt),
            axis=[ric, rky, rkx, rci],
        ),
        name=name,
        tag="vdla_group_conv2d",
        attrs={"vdla_geometry": ("group", (sh, sw), groups)},
    )

    def packed_index(i: tuple[Any, ...]) -> tuple[Any, ...]:
        # the bias and residual are laid out by the packed 6-D output: group g's channel block o is g * ogb + o
        n, g, o, y, x, bi, oi = i
        return (n, g * ogb + o, y, x, bi, oi)

    return _epilogue(env, acc, tail, bias, residual, name, packed_index)


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


# ---------------------------------------------------------------------------- shared schedule


def _pick(env: Env, shape6: tuple[int, ...], kshape6: tuple[int, ...], stride: tuple[int, int], k: Knobs,
          has_bias: bool, has_res: bool, outer_threads: int) -> Knobs:
    """Tiles for a conv-like stage; ``outer_threads`` virtual threads over an outer axis (groups)
    also replicate the buffers, so they are folded into ``h_nthread`` for the capacity check only."""
    if outer_threads == 1:
        return _pick_conv_tiles(env, shape6, kshape6, stride, k, has_bias, has_res)
    nb, ob, oh, ow, b, co = shape6
    # the capacity check counts oc_nthread * h_nthread copies: pose as that many row threads
    # over an output tall enough to split, then restore the real thread counts
    fake = k.replace(h_nthread=k.h_nthread * outer_threads, oc_nthread=1)
    tall = (nb, ob, oh * outer_threads, ow, b, co)
    got = _pick_conv_tiles(env, tall, kshape6, stride, fake.replace(tile_h=k.tile_h or None), has_bias, has_res)
    # the pick was for the taller output: the largest row tile no taller that divides the real one
    th = _divisor_at_most(oh, got.tile_h)
    return got.replace(tile_h=th, h_nthread=k.h_nthread, oc_nthread=k.oc_nthread)


def _schedule(out: te.Tensor, k: Knobs, env: Env, kind: str) -> Schedule:
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
    has_bias, has_res = _tail_inputs(extra)

    def pick(kk: Knobs) -> tuple[Knobs, bool]:
        """(tiles, threads over the outer axis?)"""
        over_outer = kind == "group" and kk.oc_nthread > 1 and ob % (kk.oc_nthread) != 0
        if over_outer:
            if n_outer % kk.oc_nthread:
                raise VDLAError(f"{acc_op.name}: {kk.oc_nthread} threads divide neither the output-channel "
                                f"blocks of a group ({ob}) nor the groups ({n_outer})")
            return _pick(env, shape6, kshape6, stride, kk.replace(oc_nthread=1), has_bias, has_res,
                         kk.oc_nthread).replace(oc_nthread=kk.oc_nthread), True
        return _pick_conv_tiles(env, shape6, kshape6, stride, kk, has_bias, has_res), False

    def cost(picked: tuple[Knobs, bool]) -> float:
        kk, over_outer = picked
        # the cost of the tiles within one group; the model does not cover threads over groups
        return conv_cost(env, shape6, kshape6, stride, kk.replace(oc_nthread=1) if over_outer else kk)

    k, over_outer = _choose_threads(k, pick, cost, f"{acc_op.name} {shape}")
    return _schedule_conv(out, env, k, outer_dims, over_outer)


def schedule_conv2d_transpose_packed(out: te.Tensor, knobs: Knobs | None = None, config: Any = None) -> Schedule:
    """Output phases outermost (each a stride-1 conv of the undilated input), then conv2d's
    tiling: output tiles (store point), loads at the input-channel chunk, GEMM at the batch lane."""
    return _schedule(out, knobs or Knobs(), get_env(config), "transpose")


def schedule_group_conv2d_packed(out: te.Tensor, knobs: Knobs | None = None, config: Any = None) -> Schedule:
    """Groups outermost, then conv2d's tiling within the group."""
    return _schedule(out, knobs or Knobs(), get_env(config), "group")
