"""conv2d_transpose on VDLA (DCGAN), as in VTA a convolution over the input dilated by the
stride and padded by ``k - 1 - p`` -- with the zero taps skipped statically by grouping the
output pixels by *phase* ``(y mod s, x mod s)``: within one phase the taps that meet real
data are a fixed ``J x J`` sub-kernel (``J = ceil(k / s)``) and the input they read is the
undilated input shifted by a per-phase offset, so each phase is a plain stride-1
convolution. The zeros are never loaded or multiplied and every GEMM kernel stays affine::

    out[n, o, s*q + ry, s*p + rx] = sum_{i, j, jx} x[n, i, q + j + dy(ry), p + jx + dx(rx)]
                                              * w[i, o, by(ry) + s*(J-1-j), bx(rx) + s*(J-1-jx)]

with ``b(r) = (r + pad) mod s`` and ``d(r) = floor((r + pad) / s) - (J - 1)``. The output is
the 8-D tensor ``(N/b, O/c, H'/s, s, W'/s, s, b, c)``, byte-for-byte the packed
``(N/b, O/c, H', W', b, c)``. The weights are packed per phase on the host
(:func:`vdla.compiler.targets.vdla.packing.pack_transpose_weight`). Requires
``H' = (H-1)s - 2p + k`` divisible by ``s`` (output_padding 0), as in DCGAN.
"""

from __future__ import annotations

from typing import Any

from .... import te
from ....schedule.primitives import Schedule
from ....topi.util import const_shape, pad
from ..env import VDLAError, get_env
from .common import Knobs, Tail, _blocks_match, _check_tail_inputs, _conv_reduce_axes, _epilogue
from .conv2d import _schedule_outer

__all__ = ["transpose_geometry", "conv2d_transpose_packed", "schedule_conv2d_transpose_packed"]


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
                     attrs={"vdla_geometry": ("transpose", s, geo),
                            "workload": ["conv2d_transpose_packed.vdla", [list(const_shape(data)), list(ks), s, p, k,
                                                                          bias is not None, residual is not None,
                                                                          env.config.name]]})
    return _epilogue(env, acc, tail, bias, residual, name)


def schedule_conv2d_transpose_packed(out: te.Tensor, knobs: Knobs | None = None, config: Any = None) -> Schedule:
    """Output phases outermost (each a stride-1 conv of the undilated input), then conv2d's
    tiling: output tiles (store point), loads at the input-channel chunk, GEMM at the batch lane."""
    return _schedule_outer(out, knobs, get_env(config), "transpose")
