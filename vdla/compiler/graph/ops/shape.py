"""Shape operators: flatten, reshape, concat and the shape arithmetic they share.

Each op registers itself (:func:`.registry.register`) when this module is imported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir import TensorType
from .registry import _REQUIRED, _axis, _err, register


def _flatten_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    s = ts[0].shape
    a = _axis(at["axis"], len(s), "flatten", extra=1)
    return TensorType((math.prod(s[:a]), math.prod(s[a:])), ts[0].dtype)


register("flatten", "injective", (1, 1), {"axis": 1})(
    (_flatten_infer, lambda at, xs: xs[0].reshape(_flatten_infer(at, [TensorType.of(xs[0])]).shape))
)


def reshape_target(src: Sequence[int], shape: Sequence[int], allowzero: bool = False) -> tuple[int, ...]:
    """Resolve ONNX-style 0 (copy) and -1 (infer) entries of a target shape."""
    out = []
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            if i >= len(src):
                raise _err(f"reshape: 0 at position {i} but the input has rank {len(src)}")
            out.append(src[i])
        else:
            out.append(d)
    total = math.prod(src)
    if out.count(-1) > 1:
        raise _err(f"reshape: more than one -1 in {tuple(shape)}")
    if -1 in out:
        rest = math.prod(d for d in out if d != -1)
        if rest == 0 or total % rest:
            raise _err(f"reshape: cannot reshape {tuple(src)} to {tuple(shape)}")
        out[out.index(-1)] = total // rest
    if math.prod(out) != total or any(d < 0 for d in out):
        raise _err(f"reshape: cannot reshape {tuple(src)} ({total} elements) to {tuple(shape)}")
    return tuple(out)


def _reshape_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    return TensorType(reshape_target(ts[0].shape, at["shape"]), ts[0].dtype)


register("reshape", "injective", (1, 1), {"shape": _REQUIRED})(
    (_reshape_infer, lambda at, xs: xs[0].reshape(reshape_target(xs[0].shape, at["shape"])))
)


def _concat_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    r = len(ts[0].shape)
    a = _axis(at["axis"], r, "concat")
    for t in ts[1:]:
        if (
            t.dtype != ts[0].dtype
            or len(t.shape) != r
            or any(d != e for i, (d, e) in enumerate(zip(t.shape, ts[0].shape)) if i != a)
        ):
            raise _err(f"concat along axis {a}: {ts[0]} and {t} do not match")
    shape = list(ts[0].shape)
    shape[a] = sum(t.shape[a] for t in ts)
    return TensorType(tuple(shape), ts[0].dtype)


register("concat", "injective", (1, 1 << 16), {"axis": 1})(
    (_concat_infer, lambda at, xs: np.concatenate(xs, axis=at["axis"]))
)
