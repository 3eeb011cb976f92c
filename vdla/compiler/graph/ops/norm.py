"""Normalisations: local response normalisation (AlexNet, GoogLeNet), instance, group and layer
normalisation, and log-softmax, with ONNX's numpy semantics (float32 throughout).

Each op registers itself (:func:`.registry.register`) when this module is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import TensorType
from .registry import _REQUIRED, _axis, _err, register


def _float(op: str, t: TensorType, min_rank: int = 1) -> None:
    if t.dtype != "float32" or len(t.shape) < min_rank:
        raise _err(f"{op} needs a float32 input of rank >= {min_rank}, got {t}")


def _lrn_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    _float("lrn", ts[0], 3)
    if at["size"] < 1:
        raise _err(f"lrn: size must be >= 1, got {at['size']}")
    return ts[0]


def _lrn(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0]
    size = int(at["size"])
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2  # channels before / after (ONNX: floor, ceil)
    sq = np.square(x.astype(np.float64))
    c = x.shape[1]
    pad = np.pad(sq, [(0, 0), (lo, hi)] + [(0, 0)] * (x.ndim - 2))
    csum = np.cumsum(np.concatenate([np.zeros_like(pad[:, :1]), pad], axis=1), axis=1)
    window = csum[:, size : size + c] - csum[:, :c]
    denom = (at["bias"] + at["alpha"] / size * window) ** at["beta"]
    return (x / denom).astype(np.float32)


register("lrn", "opaque", (1, 1), {"size": _REQUIRED, "alpha": 1e-4, "beta": 0.75, "bias": 1.0})((_lrn_infer, _lrn))


def _instance_norm_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x = ts[0]
    _float("instance_norm", x, 3)
    for nm, t in zip(("scale", "bias"), ts[1:]):
        if t.shape != (x.shape[1],) or t.dtype != "float32":
            raise _err(f"instance_norm {nm} must be float32[{x.shape[1]}], got {t}")
    return x


def _instance_norm(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x, s, b = xs
    axes = tuple(range(2, x.ndim))
    mean = x.mean(axis=axes, keepdims=True, dtype=np.float64)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - mean) / np.sqrt(var + at["epsilon"]) * s.reshape(shape) + b.reshape(shape)
    return y.astype(np.float32)


register("instance_norm", "opaque", (3, 3), {"epsilon": 1e-5})((_instance_norm_infer, _instance_norm))


def _group_norm_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x = ts[0]
    _float("group_norm", x, 2)
    g, c = at["num_groups"], x.shape[1]
    if not isinstance(g, int | np.integer) or g < 1 or c % g:
        raise _err(f"group_norm: num_groups {g!r} does not divide the {c} channels of {x}")
    for nm, t in zip(("scale", "bias"), ts[1:]):
        if t.shape != (c,) or t.dtype != "float32":
            raise _err(f"group_norm {nm} must be float32[{c}] (one per channel), got {t}")
    return x


def _group_norm(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    """ONNX GroupNormalization-21: statistics per (sample, group of C/G channels), then scale
    and bias per channel (opset 18's per-group ones are repeated per channel by the importer)."""
    x, s, b = xs
    n, c = x.shape[:2]
    xg = x.reshape(n, at["num_groups"], -1)
    mean = xg.mean(axis=-1, keepdims=True, dtype=np.float64)
    var = ((xg - mean) ** 2).mean(axis=-1, keepdims=True)
    z = ((xg - mean) / np.sqrt(var + at["epsilon"])).reshape(x.shape)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return (z * s.reshape(shape) + b.reshape(shape)).astype(np.float32)


register("group_norm", "opaque", (3, 3), {"num_groups": _REQUIRED, "epsilon": 1e-5})((_group_norm_infer, _group_norm))


def _layer_norm_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x = ts[0]
    _float("layer_norm", x)
    a = _axis(at["axis"], len(x.shape), "layer_norm")
    tail = x.shape[a:]
    for nm, t in zip(("scale", "bias"), ts[1:]):
        try:
            ok = np.broadcast_shapes(t.shape, tail) == tail and t.dtype == "float32"
        except ValueError:
            ok = False
        if not ok:
            raise _err(f"layer_norm {nm} {t} does not broadcast to the normalised shape {tail}")
    return x


def _layer_norm(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0]
    a = at["axis"] % x.ndim
    axes = tuple(range(a, x.ndim))
    mean = x.mean(axis=axes, keepdims=True, dtype=np.float64)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + at["epsilon"]) * xs[1]
    if len(xs) > 2:
        y = y + xs[2]
    return y.astype(np.float32)


register("layer_norm", "opaque", (2, 3), {"axis": -1, "epsilon": 1e-5})((_layer_norm_infer, _layer_norm))


def _log_softmax_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    _float("log_softmax", ts[0])
    _axis(at["axis"], len(ts[0].shape), "log_softmax")
    return ts[0]


def _log_softmax(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0].astype(np.float64)
    z = x - x.max(axis=at["axis"], keepdims=True)
    return (z - np.log(np.exp(z).sum(axis=at["axis"], keepdims=True))).astype(np.float32)


register("log_softmax", "opaque", (1, 1), {"axis": -1})((_log_softmax_infer, _log_softmax))
