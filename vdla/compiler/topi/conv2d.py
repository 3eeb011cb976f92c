"""2-D convolutions: NCHW, packed NCHW[x]c, depthwise and transposed, with CPU schedules.

* :func:`conv2d_nchw` — ``out[n, f, y, x] = sum(in[n, c, y*s+ry*d, x*s+rx*d] * w[f, c, ry, rx])``
* :func:`conv2d_NCHWc` — channels split into blocks (``data[n, C/cb, H, W, cb]``,
  ``kernel[OC/ob, C/cb, KH, KW, cb, ob]``), the layout of TVM's x86 schedules: the
  innermost ``ob`` output channels are one vector.  :func:`pack_nchwc` /
  :func:`pack_kernel` / :func:`unpack_nchwc` convert numpy arrays.
* :func:`depthwise_conv2d_nchw` — one filter set per input channel (channel multiplier)
* :func:`depthwise_conv2d_NCHWc` — depthwise on NCHW[x]c data (``kernel[C/cb, KH, KW, cb]``): a
  block of ``cb`` channels is one vector through the whole window
* :func:`group_conv2d_nchw` — ``groups`` independent convolutions over channel slices
  (ResNeXt, RegNet): ``kernel[OC, C/groups, KH, KW]``
* :func:`conv2d_transpose_nchw` — the gradient of conv2d w.r.t. its input: dilate by the
  stride, pad by ``k - 1 - p``, convolve with the flipped, transposed kernel.

Every ``schedule_*`` takes the output tensor(s) (possibly a fused injective tail such as
bias + ReLU) and returns a :class:`~vdla.compiler.schedule.Schedule`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import te
from ..tir.nodes import Expr
from .util import const_shape, conv_out, pad, padding4, pair

__all__ = [
    "conv2d_nchw",
    "conv2d_NCHWc",
    "pack_nchwc",
    "pack_kernel",
    "unpack_nchwc",
    "depthwise_conv2d_nchw",
    "depthwise_conv2d_NCHWc",
    "group_conv2d_nchw",
    "conv2d_transpose_nchw",
    "conv_out_size",
]


def conv_out_size(size: int, k: int, stride: int, pad_lo: int, pad_hi: int, dilation: int = 1) -> int:
    out = conv_out(size, k, stride, pad_lo, pad_hi, dilation)
    if out <= 0:
        raise ValueError(f"conv2d: input size {size} is too small for kernel {k} (dilation {dilation}, pad {pad_lo})")
    return out


def _acc(x: Expr, out_dtype: str) -> Expr:
    return x.astype(out_dtype)


# ---------------------------------------------------------------------------- NCHW


def _window(data: te.Tensor, kh: int, kw: int, stride: int | Sequence[int], padding: int | Sequence[int],
            dilation: int | Sequence[int]) -> tuple[Any, ...]:
    """What a direct convolution with a ``kh x kw`` window derives from its arguments, on NCHW or
    NCHW[x]c data (``H, W`` are axes 2 and 3): strides, dilations, pads, the output size and the
    zero-padded data."""
    shape = const_shape(data)
    h, w = shape[2], shape[3]
    sh, sw = pair(stride, "stride")
    dh, dw = pair(dilation, "dilation")
    pt, pl, pb, pr = padding4(padding)
    oh = conv_out_size(h, kh, sh, pt, pb, dh)
    ow = conv_out_size(w, kw, sw, pl, pr, dw)
    rest = [0] * (len(shape) - 4)  # the channel block of NCHW[x]c is not padded
    dp = pad(data, [0, 0, pt, pl, *rest], [0, 0, pb, pr, *rest], name="data_pad")
    return (sh, sw), (dh, dw), (pt, pl, pb, pr), (oh, ow), dp


def _direct_conv(data: te.Tensor, kernel: te.Tensor, stride: int | Sequence[int], padding: int | Sequence[int],
                 dilation: int | Sequence[int]) -> tuple[Any, ...]:
    """:func:`_window` of a direct NCHW convolution (plain or grouped), and the reduce axes over the
    kernel's channels and taps (``kernel[OC, C or C/groups, KH, KW]``)."""
    _, kc, kh, kw = const_shape(kernel)
    geometry = _window(data, kh, kw, stride, padding, dilation)
    axes = (te.reduce_axis((0, kc), name="rc"), te.reduce_axis((0, kh), name="ry"), te.reduce_axis((0, kw), name="rx"))
    return (*geometry, axes)


def conv2d_nchw(
    data: te.Tensor,
    kernel: te.Tensor,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    out_dtype: str | None = None,
) -> te.Tensor:
    """``data[N, C, H, W]`` convolved with ``kernel[OC, C, KH, KW]`` → ``[N, OC, OH, OW]``."""
    n, c, h, w = const_shape(data)
    oc, ic, kh, kw = const_shape(kernel)
    if ic != c:
        raise ValueError(f"conv2d_nchw: data has {c} channels but the kernel expects {ic}")
    (sh, sw), (dh, dw), (pt, pl, pb, pr), (oh, ow), dp, (rc, ry, rx) = _direct_conv(data, kernel, stride, padding,
                                                                                    dilation)
    out_dtype = out_dtype or data.dtype
    return te.compute(
        (n, oc, oh, ow),
        lambda b, f, y, x: te.sum(
            _acc(dp[b, rc, y * sh + ry * dh, x * sw + rx * dw], out_dtype) * _acc(kernel[f, rc, ry, rx], out_dtype),
            axis=[rc, ry, rx],
        ),
        name="conv2d_nchw",
        tag="conv2d_nchw",
        # the key a tuned schedule of this workload is found by (autotvm's conv2d_nchw.x86 args)
        attrs={"workload": ["conv2d_nchw.x86", [[n, c, h, w], [oc, ic, kh, kw], [sh, sw], [pt, pl, pb, pr],
                                                [dh, dw]]]},
    )


# ---------------------------------------------------------------------------- NCHWc


def conv2d_NCHWc(  # noqa: N802 - TVM's name
    data: te.Tensor,
    kernel: te.Tensor,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    out_dtype: str | None = None,
) -> te.Tensor:
    """``data[N, C/cb, H, W, cb]`` with ``kernel[OC/ob, C/cb, KH, KW, cb, ob]`` → ``[N, OC/ob, OH, OW, ob]``."""
    n, cc, h, w, cb = const_shape(data)
    occ, icc, kh, kw, kcb, ob = const_shape(kernel)
    if (icc, kcb) != (cc, cb):
        raise ValueError(f"conv2d_NCHWc: data channel blocks ({cc} x {cb}) do not match the kernel's ({icc} x {kcb})")
    (sh, sw), (dh, dw), (pt, pl, pb, pr), (oh, ow), dp = _window(data, kh, kw, stride, padding, dilation)
    out_dtype = out_dtype or data.dtype
    # the key a tuned schedule of this workload is found by: autotvm's conv2d_NCHWc.x86 args
    # ([N, IC, H, W, OC, K, stride, pad]), which name square kernels, one stride and one padding
    workload = None
    if kh == kw and sh == sw and len({pt, pl, pb, pr}) == 1 and (dh, dw) == (1, 1) and h == w:
        workload = ["conv2d_NCHWc.x86", [n, cc * cb, h, w, occ * ob, kh, sh, pt]]
    rco = te.reduce_axis((0, cc), name="rco")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    rci = te.reduce_axis((0, cb), name="rci")
    return te.compute(
        (n, occ, oh, ow, ob),
        lambda b, f, y, x, fb: te.sum(
            _acc(dp[b, rco, y * sh + ry * dh, x * sw + rx * dw, rci], out_dtype)
            * _acc(kernel[f, rco, ry, rx, rci, fb], out_dtype),
            axis=[rco, ry, rx, rci],
        ),
        name="conv2d_NCHWc",
        tag="conv2d_NCHWc",
        attrs={"workload": workload} if workload else {},
    )


def pack_nchwc(x: np.ndarray, cb: int) -> np.ndarray:
    """numpy NCHW → NCHW[cb]c."""
    n, c, h, w = x.shape
    if c % cb:
        raise ValueError(f"pack_nchwc: {c} channels are not a multiple of the block {cb}")
    return np.ascontiguousarray(x.reshape(n, c // cb, cb, h, w).transpose(0, 1, 3, 4, 2))


def unpack_nchwc(x: np.ndarray) -> np.ndarray:
    """numpy NCHW[cb]c → NCHW."""
    n, cc, h, w, cb = x.shape
    return np.ascontiguousarray(x.transpose(0, 1, 4, 2, 3).reshape(n, cc * cb, h, w))


def pack_kernel(k: np.ndarray, cb: int, ob: int) -> np.ndarray:
    """numpy OIHW → OIHW[cb]i[ob]o."""
    oc, ic, kh, kw = k.shape
    if oc % ob or ic % cb:
        raise ValueError(f"pack_kernel: {oc}x{ic} channels are not multiples of the blocks {ob}x{cb}")
    return np.ascontiguousarray(k.reshape(oc // ob, ob, ic // cb, cb, kh, kw).transpose(0, 2, 4, 5, 3, 1))


# ---------------------------------------------------------------------------- depthwise


def depthwise_conv2d_nchw(
    data: te.Tensor,
    kernel: te.Tensor,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    out_dtype: str | None = None,
) -> te.Tensor:
    """``data[N, C, H, W]`` with ``kernel[C, M, KH, KW]`` (channel multiplier M) → ``[N, C*M, OH, OW]``."""
    n, c, h, w = const_shape(data)
    kc, m, kh, kw = const_shape(kernel)
    if kc != c:
        raise ValueError(f"depthwise_conv2d_nchw: data has {c} channels but the kernel has {kc}")
    (sh, sw), (dh, dw), (pt, pl, pb, pr), (oh, ow), dp = _window(data, kh, kw, stride, padding, dilation)
    out_dtype = out_dtype or data.dtype
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (n, c * m, oh, ow),
        lambda b, f, y, x: te.sum(
            _acc(dp[b, f // m, y * sh + ry * dh, x * sw + rx * dw], out_dtype)
            * _acc(kernel[f // m, f % m, ry, rx], out_dtype),
            axis=[ry, rx],
        ),
        name="depthwise_conv2d_nchw",
        tag="depthwise_conv2d_nchw",
        # the key a tuned schedule of this workload is found by (autotvm's depthwise_conv2d_nchw.x86 args)
        attrs={"workload": ["depthwise_conv2d_nchw.x86", [[n, c, h, w], [kc, m, kh, kw], [sh, sw],
                                                          [pt, pl, pb, pr], [dh, dw]]]},
    )


def depthwise_conv2d_NCHWc(  # noqa: N802 - TVM's name
    data: te.Tensor,
    kernel: te.Tensor,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    out_dtype: str | None = None,
) -> te.Tensor:
    """``data[N, C/cb, H, W, cb]`` with ``kernel[C/cb, KH, KW, cb]`` → ``[N, C/cb, OH, OW, cb]`` (one
    filter per channel, channel multiplier 1)."""
    n, cc, h, w, cb = const_shape(data)
    kc, kh, kw, kcb = const_shape(kernel)
    if (kc, kcb) != (cc, cb):
        raise ValueError(f"depthwise_conv2d_NCHWc: data channel blocks ({cc} x {cb}) do not match the kernel's "
                         f"({kc} x {kcb})")
    (sh, sw), (dh, dw), (pt, pl, pb, pr), (oh, ow), dp = _window(data, kh, kw, stride, padding, dilation)
    out_dtype = out_dtype or data.dtype
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (n, cc, oh, ow, cb),
        lambda b, f, y, x, c: te.sum(
            _acc(dp[b, f, y * sh + ry * dh, x * sw + rx * dw, c], out_dtype) * _acc(kernel[f, ry, rx, c], out_dtype),
            axis=[ry, rx],
        ),
        name="depthwise_conv2d_NCHWc",
        tag="depthwise_conv2d_NCHWc",
        # the key a tuned schedule of this workload is found by (autotvm's depthwise_conv2d_NCHWc.x86 args)
        attrs={"workload": ["depthwise_conv2d_NCHWc.x86", [[n, cc, h, w, cb], [kh, kw], [sh, sw], [pt, pl, pb, pr],
                                                           [dh, dw]]]},
    )


# ---------------------------------------------------------------------------- grouped


def group_conv2d_nchw(
    data: te.Tensor,
    kernel: te.Tensor,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    out_dtype: str | None = None,
) -> te.Tensor:
    """``data[N, C, H, W]`` with ``kernel[OC, C/groups, KH, KW]`` → ``[N, OC, OH, OW]``: output
    channel ``f`` of group ``g = f // (OC/groups)`` sums over input channels ``g*C/groups + rc``
    (TVM's ``topi.nn.group_conv2d_nchw``)."""
    n, c, h, w = const_shape(data)
    oc, cg, kh, kw = const_shape(kernel)
    if groups < 1 or c % groups or oc % groups or cg * groups != c:
        raise ValueError(f"group_conv2d_nchw: {c} input channels, kernel {(oc, cg, kh, kw)} and groups={groups} "
                         "do not match")
    og = oc // groups
    (sh, sw), (dh, dw), (pt, pl, pb, pr), (oh, ow), dp, (rc, ry, rx) = _direct_conv(data, kernel, stride, padding,
                                                                                    dilation)
    out_dtype = out_dtype or data.dtype
    return te.compute(
        (n, oc, oh, ow),
        lambda b, f, y, x: te.sum(
            _acc(dp[b, f // og * cg + rc, y * sh + ry * dh, x * sw + rx * dw], out_dtype)
            * _acc(kernel[f, rc, ry, rx], out_dtype),
            axis=[rc, ry, rx],
        ),
        name="group_conv2d_nchw",
        tag="group_conv2d_nchw",
        attrs={"groups": groups,
               "workload": ["group_conv2d_nchw.x86", [[n, c, h, w], [oc, cg, kh, kw], [sh, sw], [pt, pl, pb, pr],
                                                      [dh, dw], groups]]},
    )


# ---------------------------------------------------------------------------- transposed


def conv2d_transpose_nchw(
    data: te.Tensor,
    kernel: te.Tensor,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    output_padding: int | Sequence[int] = 0,
    out_dtype: str | None = None,
) -> te.Tensor:
    """``data[N, C, H, W]`` with ``kernel[C, OC, KH, KW]`` → ``[N, OC, (H-1)*s - 2p + KH + op, ...]``."""
    n, c, h, w = const_shape(data)
    kc, oc, kh, kw = const_shape(kernel)
    if kc != c:
        raise ValueError(f"conv2d_transpose_nchw: data has {c} channels but the kernel has {kc}")
    sh, sw = pair(stride, "stride")
    pt, pl, pb, pr = padding4(padding)
    oph, opw = pair(output_padding, "output_padding")
    if oph >= sh or opw >= sw:
        raise ValueError("conv2d_transpose_nchw: output_padding must be smaller than the stride")
    out_dtype = out_dtype or data.dtype
    # dilate by the stride and pad by k - 1 - p (plus output_padding at the bottom/right)
    bt, bl = kh - 1 - pt, kw - 1 - pl
    dh_ = (h - 1) * sh + 1 + bt + (kh - 1 - pb) + oph
    dw_ = (w - 1) * sw + 1 + bl + (kw - 1 - pr) + opw
    # padding of the kernel size or more: a negative pad, which crops the dilated input
    if dh_ < kh or dw_ < kw:
        raise ValueError("conv2d_transpose_nchw: the padding leaves an empty output")
    zero = te.const(0, data.dtype)

    def dilated(b: Expr, ci: Expr, y: Expr, x: Expr) -> Expr:
        yy, xx = y - bt, x - bl
        ok = te.all(yy >= 0, xx >= 0, yy < (h - 1) * sh + 1, xx < (w - 1) * sw + 1, yy % sh == 0, xx % sw == 0)
        return te.if_then_else(ok, data[b, ci, yy // sh, xx // sw], zero)

    dp = te.compute((n, c, dh_, dw_), dilated, name="data_dilate_pad", tag="injective,pad")
    ohh, oww = dh_ - kh + 1, dw_ - kw + 1
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (n, oc, ohh, oww),
        lambda b, f, y, x: te.sum(
            _acc(dp[b, rc, y + ry, x + rx], out_dtype) * _acc(kernel[rc, f, kh - 1 - ry, kw - 1 - rx], out_dtype),
            axis=[rc, ry, rx],
        ),
        name="conv2d_transpose_nchw",
        tag="conv2d_transpose_nchw",
    )


