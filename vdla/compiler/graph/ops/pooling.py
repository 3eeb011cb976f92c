"""Pooling and reductions: max/avg pooling, global pooling, softmax and friends.

The pools take NCHW data or the CPU's NCHW[x]c (rank 5, the channel block last: see
:mod:`.nchwc`), pooling the same ``H, W`` axes either way.

Each op registers itself (:func:`.registry.register`) when this module is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import TensorType
from .nchwc import to_blocks
from .nn import conv_out, windows
from .registry import _REQUIRED, Infer, _axis, _err, register


def _pool_infer(op: str) -> Infer:
    def infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
        x = ts[0]
        if len(x.shape) not in (4, 5):
            raise _err(f"{op} needs 4-D NCHW (or rank-5 NCHW[x]c) data, got {x}")
        if op == "avg_pool2d" and x.dtype != "float32":
            raise _err(f"avg_pool2d needs a float32 input, got {x}; dequantize first")
        kh, kw = at["kernel"]
        sh, sw = at["strides"]
        pt, pl, pb, pr = at["padding"]
        if max(pt, pb) >= kh or max(pl, pr) >= kw:
            raise _err(f"{op}: padding {at['padding']} must be smaller than the kernel {at['kernel']}")
        oh, ow = conv_out(x.shape[2], kh, sh, pt, pb), conv_out(x.shape[3], kw, sw, pl, pr)
        if oh <= 0 or ow <= 0:
            raise _err(f"{op}: input {x.shape[2]}x{x.shape[3]} is smaller than the kernel {kh}x{kw}")
        return TensorType((x.shape[0], x.shape[1], oh, ow, *x.shape[4:]), x.dtype)

    return infer


def _blocked(fn: Any) -> Any:
    """``fn`` over NCHW, applied to NCHW[x]c data through its NCHW form (the block back after)."""
    def compute(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
        x = xs[0]
        if x.ndim == 4:
            return fn(at, xs)
        return to_blocks(fn(at, [to_blocks(x, x.shape[4], 0)]), 0, x.shape[4])
    return compute


def _maxpool(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0]
    low = -np.inf if x.dtype == np.float32 else np.iinfo(x.dtype).min
    win = windows(x, *at["kernel"], at["strides"], at["padding"], pad_value=low)
    return win.max(axis=(4, 5))


def _avgpool(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0]
    kh, kw = at["kernel"]
    s = windows(x, kh, kw, at["strides"], at["padding"]).sum(axis=(4, 5), dtype=np.float32)
    if at["count_include_pad"] or not any(at["padding"]):
        return (s / np.float32(kh * kw)).astype(np.float32)
    ones = np.ones((1, 1) + x.shape[2:], np.float32)
    cnt = windows(ones, kh, kw, at["strides"], at["padding"]).sum(axis=(4, 5))
    return (s / cnt).astype(np.float32)


_POOL = {"kernel": _REQUIRED, "strides": (1, 1), "padding": (0, 0, 0, 0)}
register("max_pool2d", "reduction", (1, 1), _POOL)((_pool_infer("max_pool2d"), _blocked(_maxpool)))
register("avg_pool2d", "reduction", (1, 1), {**_POOL, "count_include_pad": False})(
    (_pool_infer("avg_pool2d"), _blocked(_avgpool))
)


def _gap_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x = ts[0]
    if len(x.shape) not in (4, 5) or x.dtype != "float32":
        raise _err(f"global_avg_pool2d needs float32 NCHW (or NCHW[x]c) data, got {x}")
    return TensorType(x.shape[:2] + (1, 1) + x.shape[4:], "float32")


register("global_avg_pool2d", "reduction", (1, 1))(
    (_gap_infer, lambda at, xs: xs[0].mean(axis=(2, 3), keepdims=True, dtype=np.float32))
)


def _softmax_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    if ts[0].dtype != "float32":
        raise _err(f"softmax needs a float32 input, got {ts[0]}")
    _axis(at["axis"], len(ts[0].shape), "softmax")
    return ts[0]


def _softmax(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0]
    e = np.exp(x - x.max(axis=at["axis"], keepdims=True))
    return (e / e.sum(axis=at["axis"], keepdims=True)).astype(np.float32)


register("softmax", "opaque", (1, 1), {"axis": -1})((_softmax_infer, _softmax))
