"""Convolutions and dense layers: attributes, shape inference and exact integer / float numpy semantics (conv2d, grouped, transposed, dense).

Each op registers itself (:func:`.registry.register`) when this module is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...topi.util import conv_out
from ..ir import TensorType
from .registry import _err, _wrap32, register


def _mm_dtype(xd: str, wd: str, op: str) -> str:
    if xd == "float32" and wd == "float32":
        return "float32"
    if xd in ("int8", "uint8") and wd == "int8":
        return "int32"
    raise _err(f"{op}: unsupported operand dtypes {xd} x {wd} (float32 x float32 or int8/uint8 x int8)")


def _check_bias(ts: list[TensorType], channels: int, out: str, op: str) -> None:
    if len(ts) == 3:
        b = ts[2]
        if b.shape != (channels,) or b.dtype != out:
            raise _err(f"{op} bias must be {out}[{channels}], got {b}")


def _conv_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts[0], ts[1]
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise _err(f"conv2d needs 4-D NCHW data and OIHW weight, got {x} and {w}")
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    g = at["groups"]
    if g < 1 or c % g or o % g or cg * g != c:
        raise _err(f"conv2d: {c} input channels, weight {w.shape} and groups={g} do not match")
    sh, sw = at["strides"]
    dh, dw = at["dilation"]
    pt, pl, pb, pr = at["padding"]
    if min(sh, sw, dh, dw) < 1 or min(pt, pl, pb, pr) < 0:
        raise _err(f"conv2d: bad strides {at['strides']}, dilation {at['dilation']} or padding {at['padding']}")
    oh, ow = conv_out(h, kh, sh, pt, pb, dh), conv_out(wd, kw, sw, pl, pr, dw)
    if oh <= 0 or ow <= 0:
        raise _err(f"conv2d: input {h}x{wd} is smaller than the kernel {kh}x{kw}")
    out = _mm_dtype(x.dtype, w.dtype, "conv2d")
    _check_bias(ts, o, out, "conv2d")
    return TensorType((n, o, oh, ow), out)


def windows(x: np.ndarray, kh: int, kw: int, strides, padding, dilation=(1, 1), pad_value: Any = 0) -> np.ndarray:
    """(N, C, OH, OW, KH, KW) view of the padded input's sliding windows."""
    pt, pl, pb, pr = padding
    if any(padding):
        x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=pad_value)
    (sh, sw), (dh, dw) = strides, dilation
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    oh, ow = (x.shape[2] - eh) // sh + 1, (x.shape[3] - ew) // sw + 1
    v = sliding_window_view(x, (eh, ew), axis=(2, 3))
    return v[:, :, : (oh - 1) * sh + 1 : sh, : (ow - 1) * sw + 1 : sw, ::dh, ::dw]


def exact_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for float32 (float32 BLAS) or integers (exact; result int64)."""
    if a.dtype == np.float32:
        return np.matmul(a, b)
    k = a.shape[-1]
    amax = int(np.abs(a).max(initial=0))
    bmax = int(np.abs(b).max(initial=0))
    if amax * bmax * k < 2**53:
        return np.rint(np.matmul(a.astype(np.float64), b.astype(np.float64))).astype(np.int64)
    return np.matmul(a.astype(np.int64), b.astype(np.int64))


def _finish(acc: np.ndarray, out_dtype: str) -> np.ndarray:
    return _wrap32(acc) if out_dtype == "int32" else acc.astype(np.float32, copy=False)


def conv2d_nchw(x: np.ndarray, w: np.ndarray, strides, padding, dilation=(1, 1), groups: int = 1) -> np.ndarray:
    """Reference NCHW convolution (float32, or exact int64 for integer operands)."""
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    win = windows(x, kh, kw, strides, padding, dilation)  # n c oh ow kh kw
    oh, ow = win.shape[2:4]
    og = o // groups
    cols = win.reshape(n, groups, cg, oh, ow, kh, kw).transpose(1, 0, 3, 4, 2, 5, 6)
    cols = cols.reshape(groups, n * oh * ow, cg * kh * kw)
    wm = w.reshape(groups, og, cg * kh * kw).transpose(0, 2, 1)
    acc = exact_matmul(cols, wm)  # g, n*oh*ow, og
    return acc.reshape(groups, n, oh, ow, og).transpose(1, 0, 4, 2, 3).reshape(n, o, oh, ow)


def _add_bias(acc: np.ndarray, xs: list[np.ndarray], axis: int = 1) -> np.ndarray:
    if len(xs) == 3:
        shape = [1] * acc.ndim
        shape[axis] = -1
        acc = acc + xs[2].reshape(shape).astype(acc.dtype)
    return acc


def _conv(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x, w = xs[0], xs[1]
    acc = conv2d_nchw(x, w, at["strides"], at["padding"], at["dilation"], at["groups"])
    out = "int32" if x.dtype != np.float32 else "float32"
    return _finish(_add_bias(acc, xs), out)


_CONV_ATTRS = {"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1}

def _unfold_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x = ts[0]
    if len(x.shape) != 4:
        raise _err(f"unfold needs 4-D NCHW data, got {x}")
    n, c, h, wd = x.shape
    kh, kw = at["kernel"]
    sh, sw = at["strides"]
    pt, pl, pb, pr = at["padding"]
    if min(kh, kw, sh, sw) < 1 or min(pt, pl, pb, pr) < 0:
        raise _err(f"unfold: bad kernel {at['kernel']}, strides {at['strides']} or padding {at['padding']}")
    oh, ow = conv_out(h, kh, sh, pt, pb), conv_out(wd, kw, sw, pl, pr)
    if oh <= 0 or ow <= 0:
        raise _err(f"unfold: input {h}x{wd} is smaller than the kernel {kh}x{kw}")
    return TensorType((n, c * kh * kw, oh, ow), x.dtype)


def _unfold(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0]
    kh, kw = at["kernel"]
    win = windows(x, kh, kw, at["strides"], at["padding"])  # n c oh ow kh kw
    n, c, oh, ow = win.shape[:4]
    # channel index c*kh*kw + i*kw + j: the order of an OIHW weight reshaped to (O, C*KH*KW)
    return np.ascontiguousarray(win.transpose(0, 1, 4, 5, 2, 3)).reshape(n, c * kh * kw, oh, ow)


#: PyTorch's ``nn.Unfold`` (im2col) as NCHW: every (channel, tap) of a k x k window becomes a
#: channel, so a k x k conv of the input is a 1x1 conv of the result (:mod:`..unfold`).
register("unfold", "injective", (1, 1), {"kernel": (1, 1), "strides": (1, 1), "padding": (0, 0, 0, 0)})(
    (_unfold_infer, _unfold)
)

register("conv2d", "complex", (2, 3), _CONV_ATTRS)((_conv_infer, _conv))


def _convt_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts[0], ts[1]
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise _err(f"conv2d_transpose needs 4-D NCHW data and IOHW weight, got {x} and {w}")
    n, c, h, wd = x.shape
    ci, o, kh, kw = w.shape
    if ci != c:
        raise _err(f"conv2d_transpose: weight {w.shape} expects {ci} input channels, data has {c}")
    sh, sw = at["strides"]
    pt, pl, pb, pr = at["padding"]
    oph, opw = at["output_padding"]
    if oph >= sh or opw >= sw or oph < 0 or opw < 0:
        raise _err(f"conv2d_transpose: output_padding {at['output_padding']} must be smaller than strides")
    oh = (h - 1) * sh + kh + oph - pt - pb
    ow = (wd - 1) * sw + kw + opw - pl - pr
    if oh <= 0 or ow <= 0:
        raise _err("conv2d_transpose: padding leaves an empty output")
    out = _mm_dtype(x.dtype, w.dtype, "conv2d_transpose")
    _check_bias(ts, o, out, "conv2d_transpose")
    return TensorType((n, o, oh, ow), out)


def conv2d_transpose_nchw(x: np.ndarray, w: np.ndarray, strides, padding, output_padding=(0, 0)) -> np.ndarray:
    """Reference transposed convolution: each input pixel scatters ``x * w`` into the output."""
    n, c, h, wd = x.shape
    _, o, kh, kw = w.shape
    sh, sw = strides
    pt, pl, pb, pr = padding
    oph, opw = output_padding
    y = exact_matmul(x.transpose(0, 2, 3, 1).reshape(n * h * wd, c), w.reshape(c, o * kh * kw))
    y = y.reshape(n, h, wd, o, kh, kw).transpose(0, 3, 4, 5, 1, 2)  # n o kh kw h w
    fh, fw = (h - 1) * sh + kh + oph, (wd - 1) * sw + kw + opw
    full = np.zeros((n, o, fh, fw), dtype=y.dtype)
    for i in range(kh):
        for j in range(kw):
            full[:, :, i : i + (h - 1) * sh + 1 : sh, j : j + (wd - 1) * sw + 1 : sw] += y[:, :, i, j]
    return full[:, :, pt : fh - pb, pl : fw - pr]


def _convt(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x, w = xs[0], xs[1]
    acc = conv2d_transpose_nchw(x, w, at["strides"], at["padding"], at["output_padding"])
    return _finish(_add_bias(acc, xs), "int32" if x.dtype != np.float32 else "float32")


register("conv2d_transpose", "complex", (2, 3), {"strides": (1, 1), "padding": (0, 0, 0, 0), "output_padding": (0, 0)})(
    (_convt_infer, _convt)
)


def _dense_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts[0], ts[1]
    if len(x.shape) != 2 or len(w.shape) != 2 or x.shape[1] != w.shape[1]:
        raise _err(f"dense needs data[N,K] and weight[M,K], got {x} and {w}")
    out = _mm_dtype(x.dtype, w.dtype, "dense")
    _check_bias(ts, w.shape[0], out, "dense")
    return TensorType((x.shape[0], w.shape[0]), out)


def _dense(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    acc = exact_matmul(xs[0], xs[1].T)
    return _finish(_add_bias(acc, xs), "int32" if xs[0].dtype != np.float32 else "float32")


register("dense", "complex", (2, 3))((_dense_infer, _dense))


def _matmul_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    """``a @ b`` with numpy's (ONNX MatMul's) rules: 2-D, or batched with broadcast batch dimensions."""
    a, b = ts
    if len(a.shape) < 2 or len(b.shape) < 2 or a.shape[-1] != b.shape[-2]:
        raise _err(f"matmul needs [...,N,K] x [...,K,M], got {a} and {b}")
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise _err(f"matmul: batch dimensions of {a} and {b} do not broadcast") from None
    return TensorType(batch + (a.shape[-2], b.shape[-1]), _mm_dtype(a.dtype, b.dtype, "matmul"))


def _matmul(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    a, b = xs
    if a.ndim > 2 or b.ndim > 2:  # broadcast the batch dimensions first (exact_matmul's bound is per product)
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = np.broadcast_to(a, batch + a.shape[-2:])
        b = np.broadcast_to(b, batch + b.shape[-2:])
    return _finish(exact_matmul(a, b), "int32" if xs[0].dtype != np.float32 else "float32")


register("matmul", "complex", (2, 2))((_matmul_infer, _matmul))
