"""numpy references of the operator library (TVM's ``topi.testing``): what every topi
declaration computes, written with plain numpy (float64 sums), for tests and benchmarks to
compare built functions against. The accelerator templates' int8 references (with the ALU
tail) are :mod:`vdla.compiler.targets.vdla.top.reference`; the graph level's exact integer
operator semantics are :mod:`vdla.compiler.graph.ops`.
"""

from __future__ import annotations

import numpy as np


def pad_np(x: np.ndarray, pt: int, pl: int, pb: int, pr: int, value: float = 0.0) -> np.ndarray:
    return np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=value)


def conv2d_nchw(x: np.ndarray, w: np.ndarray, stride: int = 1, pad: int = 0, dilation: int = 1) -> np.ndarray:
    xp = pad_np(x.astype(np.float64), pad, pad, pad, pad)
    n, c, h, wd = xp.shape
    oc, _, kh, kw = w.shape
    oh = (h - (kh - 1) * dilation - 1) // stride + 1
    ow = (wd - (kw - 1) * dilation - 1) // stride + 1
    out = np.zeros((n, oc, oh, ow))
    for ry in range(kh):
        for rx in range(kw):
            y0, x0 = ry * dilation, rx * dilation
            win = xp[:, :, y0 : y0 + stride * (oh - 1) + 1 : stride, x0 : x0 + stride * (ow - 1) + 1 : stride]
            out += np.einsum("nchw,fc->nfhw", win, w[:, :, ry, rx].astype(np.float64))
    return out


def depthwise_conv2d_nchw(x: np.ndarray, w: np.ndarray, stride: int = 1, pad: int = 0) -> np.ndarray:
    xp = pad_np(x.astype(np.float64), pad, pad, pad, pad)
    n, c, h, wd = xp.shape
    _, m, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, c * m, oh, ow))
    for f in range(c * m):
        for ry in range(kh):
            for rx in range(kw):
                win = xp[:, f // m, ry : ry + stride * (oh - 1) + 1 : stride, rx : rx + stride * (ow - 1) + 1 : stride]
                out[:, f] += win * w[f // m, f % m, ry, rx]
    return out


def conv2d_transpose_nchw(x: np.ndarray, w: np.ndarray, stride: int, pad: int, out_pad: int = 0) -> np.ndarray:
    n, c, h, wd = x.shape
    _, oc, kh, kw = w.shape
    fh, fw = (h - 1) * stride + kh + out_pad, (wd - 1) * stride + kw + out_pad
    full = np.zeros((n, oc, fh + kh, fw + kw))
    for i in range(h):
        for j in range(wd):
            full[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw] += np.einsum(
                "nc,cfyx->nfyx", x[:, :, i, j].astype(np.float64), w
            )
    oh, ow = (h - 1) * stride - 2 * pad + kh + out_pad, (wd - 1) * stride - 2 * pad + kw + out_pad
    return full[:, :, pad : pad + oh, pad : pad + ow]


def pool2d(x: np.ndarray, k: int, s: int, p: int, kind: str, count_include_pad: bool = True) -> np.ndarray:
    n, c, h, w = x.shape
    fill = -np.inf if kind == "max" else 0.0
    xp = pad_np(x.astype(np.float64), p, p, p, p, fill)
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    out = np.zeros((n, c, oh, ow))
    for y in range(oh):
        for xx in range(ow):
            win = xp[:, :, y * s : y * s + k, xx * s : xx * s + k]
            if kind == "max":
                out[:, :, y, xx] = win.max(axis=(2, 3))
            elif count_include_pad:
                out[:, :, y, xx] = win.sum(axis=(2, 3)) / (k * k)
            else:
                cy = min(y * s - p + k, h) - max(y * s - p, 0)
                cx = min(xx * s - p + k, w) - max(xx * s - p, 0)
                out[:, :, y, xx] = win.sum(axis=(2, 3)) / (cy * cx)
    return out


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def conv2d_nchw_python(a_np: np.ndarray, w_np: np.ndarray, stride: int | tuple[int, int],
                       padding: int | tuple[int, int], groups: int = 1) -> np.ndarray:
    """TVM's ``topi.testing.conv2d_nchw_python`` (same stride and padding in both dimensions)."""
    s = stride if isinstance(stride, int) else tuple(stride)
    p = padding if isinstance(padding, int) else tuple(padding)
    if not isinstance(s, int):
        if len(set(s)) != 1:
            raise ValueError(f"conv2d_nchw_python: different strides per dimension {s} are not supported")
        s = s[0]
    if not isinstance(p, int):
        if len(set(p)) != 1:
            raise ValueError(f"conv2d_nchw_python: different paddings per dimension {p} are not supported")
        p = p[0]
    if groups != 1:
        raise ValueError("conv2d_nchw_python: groups != 1 is not supported")
    return conv2d_nchw(a_np, w_np, s, p)
