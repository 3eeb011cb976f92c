"""Data-movement and reduction operators: transpose, pad (constant/reflect/edge), strided
slice, take (gather with constant indices), gather (run-time indices: embeddings) and the
reductions sum/mean/max/min over axes and argmax/argmin (int32 indices), and scatter_nd
(ONNX ScatterND without reduction: updates written at int32 index tuples).

Shapes are static, so every attribute is a plain tuple fixed at import (the ONNX importer
resolves negative axes, clamps slice bounds and folds shape arithmetic before it emits
these). Each op registers itself (:func:`.registry.register`) when this module is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import TensorType
from .registry import _REQUIRED, _axis, _err, register


def _transpose_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    s = ts[0].shape
    perm = tuple(at["perm"]) if at["perm"] is not None else tuple(reversed(range(len(s))))
    if sorted(perm) != list(range(len(s))):
        raise _err(f"transpose: perm {perm} is not a permutation of the {len(s)} axes of {ts[0]}")
    return TensorType(tuple(s[p] for p in perm), ts[0].dtype)


register("transpose", "injective", (1, 1), {"perm": None})(
    (_transpose_infer, lambda at, xs: np.ascontiguousarray(np.transpose(xs[0], at["perm"])))
)

_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge"}


def _pad_widths(at: dict[str, Any], rank: int) -> list[tuple[int, int]]:
    p = tuple(at["pads"])
    if len(p) != 2 * rank:
        raise _err(f"pad: pads {p} needs {2 * rank} values (begins then ends) for rank {rank}")
    return [(p[i], p[i + rank]) for i in range(rank)]


def _pad_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x = ts[0]
    if at["mode"] not in _PAD_MODES:
        raise _err(f"pad: mode {at['mode']!r} (constant, reflect or edge)")
    out = []
    for d, (lo, hi) in zip(x.shape, _pad_widths(at, len(x.shape))):
        if at["mode"] == "reflect" and (lo >= d or hi >= d) and (lo > 0 or hi > 0):
            raise _err(f"pad: reflect padding ({lo}, {hi}) must be smaller than the axis extent {d}")
        if d + lo + hi < 0:
            raise _err(f"pad: negative pads ({lo}, {hi}) remove more than the axis extent {d}")
        out.append(d + lo + hi)
    return TensorType(tuple(out), x.dtype)


def _pad(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0]
    widths = _pad_widths(at, x.ndim)
    # negative pads crop (ONNX allows them): crop first, then pad the rest
    crop = tuple(slice(max(0, -lo), x.shape[i] - max(0, -hi)) for i, (lo, hi) in enumerate(widths))
    x = x[crop]
    widths = [(max(0, lo), max(0, hi)) for lo, hi in widths]
    if at["mode"] == "constant":
        return np.pad(x, widths, mode="constant", constant_values=np.array(at["value"]).astype(x.dtype))
    return np.pad(x, widths, mode=_PAD_MODES[at["mode"]])


register("pad", "injective", (1, 1), {"pads": _REQUIRED, "mode": "constant", "value": 0.0})((_pad_infer, _pad))


def _slices(at: dict[str, Any], rank: int) -> tuple[slice, ...]:
    b, e, s = at["begin"], at["end"], at["step"]
    if not len(b) == len(e) == len(s) == rank:
        raise _err(f"slice: begin {b}, end {e} and step {s} need one value per axis ({rank})")
    if 0 in s:
        raise _err("slice: a step of 0")
    # end -1 with a negative step means "through index 0" (normalised by the importer)
    return tuple(slice(bi, None if (st < 0 and ei < 0) else ei, st) for bi, ei, st in zip(b, e, s))


def _slice_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    sl = _slices(at, len(ts[0].shape))
    shape = tuple(len(range(*slc.indices(d))) for slc, d in zip(sl, ts[0].shape))
    return TensorType(shape, ts[0].dtype)


register("slice", "injective", (1, 1), {"begin": _REQUIRED, "end": _REQUIRED, "step": _REQUIRED})(
    (_slice_infer, lambda at, xs: np.ascontiguousarray(xs[0][_slices(at, xs[0].ndim)]))
)


def _take_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    s = ts[0].shape
    a = _axis(at["axis"], len(s), "take")
    idx = np.asarray(at["indices"]).reshape(at["ishape"])
    if idx.size and (idx.min() < -s[a] or idx.max() >= s[a]):
        raise _err(f"take: indices out of range for axis {a} of {ts[0]}")
    return TensorType(s[:a] + tuple(at["ishape"]) + s[a + 1 :], ts[0].dtype)


def _take(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    idx = np.asarray(at["indices"], np.int64).reshape(at["ishape"])
    return np.take(xs[0], idx, axis=at["axis"])


register("take", "injective", (1, 1), {"indices": _REQUIRED, "ishape": _REQUIRED, "axis": 0})((_take_infer, _take))


def _gather_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    data, idx = ts
    if idx.dtype != "int32":
        raise _err(f"gather: indices must be int32, got {idx}")
    a = _axis(at["axis"], len(data.shape), "gather")
    return TensorType(data.shape[:a] + idx.shape + data.shape[a + 1 :], data.dtype)


def _gather(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    data, idx = xs
    a = at["axis"] % data.ndim
    n = data.shape[a]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = idx[(idx < -n) | (idx >= n)].reshape(-1)[0]
        raise _err(f"gather: index {int(bad)} out of range for axis {a} of extent {n}")
    return np.take(data, np.where(idx < 0, idx + n, idx), axis=a)


#: gather with run-time indices (an embedding lookup); ``take`` is the constant-index form
register("gather", "injective", (2, 2), {"axis": 0})((_gather_infer, _gather))


def _reduce_axes(at: dict[str, Any], rank: int, op: str) -> tuple[int, ...]:
    if at["axes"] is None:
        return tuple(range(rank))
    axes = tuple(sorted({_axis(a, rank, op) for a in at["axes"]}))
    return axes


def _reduce(op: str, fn):
    def infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
        x = ts[0]
        if op in ("reduce_mean", "reduce_sum") and x.dtype != "float32":
            raise _err(f"{op} needs a float32 input, got {x}")
        axes = _reduce_axes(at, len(x.shape), op)
        if at["keepdims"]:
            shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        else:
            shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return TensorType(shape, x.dtype)

    def compute(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
        x = xs[0]
        axes = _reduce_axes(at, x.ndim, op)
        return np.asarray(fn(x, axis=axes, keepdims=bool(at["keepdims"]))).astype(x.dtype, copy=False)

    register(op, "reduction", (1, 1), {"axes": None, "keepdims": 1})((infer, compute))


_reduce("reduce_sum", lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims, dtype=np.float32))
_reduce("reduce_mean", lambda x, axis, keepdims: np.mean(x, axis=axis, keepdims=keepdims, dtype=np.float32))
_reduce("reduce_max", np.max)
_reduce("reduce_min", np.min)


def _arg(op: str):
    def infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
        s = ts[0].shape
        a = _axis(at["axis"], len(s), op)
        shape = tuple(1 if i == a else d for i, d in enumerate(s)) if at["keepdims"] else s[:a] + s[a + 1 :]
        return TensorType(shape, "int32")

    def compute(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
        x = xs[0]
        a = at["axis"] % x.ndim
        fn = np.argmax if op == "argmax" else np.argmin
        if at["select_last_index"]:  # the last of equal extremes: search the reversed axis
            idx = x.shape[a] - 1 - fn(np.flip(x, a), axis=a)
        else:
            idx = fn(x, axis=a)
        return (np.expand_dims(idx, a) if at["keepdims"] else idx).astype(np.int32)

    register(op, "reduction", (1, 1), {"axis": 0, "keepdims": 1, "select_last_index": 0})((infer, compute))


_arg("argmax")
_arg("argmin")


def _scatter_nd_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    data, idx, upd = ts
    if idx.dtype != "int32" or not idx.shape:
        raise _err(f"scatter_nd: indices must be int32 of rank >= 1, got {idx}")
    q = idx.shape[-1]
    if q > len(data.shape):
        raise _err(f"scatter_nd: index tuples of {q} values for {data} of rank {len(data.shape)}")
    want = idx.shape[:-1] + data.shape[q:]
    if upd.shape != want or upd.dtype != data.dtype:
        raise _err(f"scatter_nd: updates must be {data.dtype}{list(want)} for data {data} and indices {idx}, got {upd}")
    return data


def _scatter_nd(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    data, idx, upd = xs
    q = idx.shape[-1]
    out = np.array(data, copy=True)
    dims = np.array(data.shape[:q], np.int64)
    flat = idx.reshape(-1, q).astype(np.int64)
    flat = np.where(flat < 0, flat + dims, flat)
    if flat.size and ((flat < 0) | (flat >= dims)).any():
        raise _err(f"scatter_nd: an index is out of range for the first {q} axes of {data.shape}")
    rows = upd.reshape((flat.shape[0],) + data.shape[q:])
    for k in range(flat.shape[0]):  # in order: of duplicate indices the last update wins
        out[tuple(flat[k])] = rows[k]
    return out


#: ONNX ScatterND (reduction none): ``data`` with ``updates`` written at the int32 index tuples
register("scatter_nd", "opaque", (3, 3))((_scatter_nd_infer, _scatter_nd))
