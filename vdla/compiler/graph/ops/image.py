"""``resize``: nearest and (multi-)linear resampling of any axes to a static output shape, with
ONNX Resize's coordinate transformations and nearest rounding modes (and Upsample's), as
onnxruntime computes them: the source coordinate in float32, clamped to the input (linear),
or rounded and clamped (nearest).

Attributes: ``sizes`` the output shape; ``scales`` the per-axis scale the coordinate formulas
divide by (None: output / input extent, in float32, as ONNX does when sizes are given);
``mode`` ``nearest`` or ``linear``; ``coord_mode`` one of :data:`COORD_MODES` (an axis of
scale 1 is read as it is, whatever the mode, as onnxruntime does);
``nearest_mode`` one of :data:`NEAREST_MODES` (``simple``: Upsample's and Resize-10's rule,
truncation when enlarging and ceil when shrinking). Registers itself when imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...topi.image import source_coords
from ..ir import TensorType
from .registry import _REQUIRED, _err, register

__all__ = ["COORD_MODES", "NEAREST_MODES", "RESIZE_MODES", "resize_scales", "source_coords"]

COORD_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
               "half_pixel_symmetric")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
RESIZE_MODES = ("nearest", "linear")

_F = np.float32


def resize_scales(at: dict[str, Any], shape: tuple[int, ...]) -> tuple[float, ...]:
    """The per-axis scales the coordinate formulas use (float32 values)."""
    if at["scales"] is not None:
        return tuple(float(_F(s)) for s in at["scales"])
    return tuple(float(_F(o) / _F(i)) for o, i in zip(at["sizes"], shape))


def nearest_index(c: np.ndarray, mode: str, scale: float, inp: int) -> np.ndarray:
    """Nearest source index of float32 coordinates ``c``, clamped to ``[0, inp)``."""
    if mode == "round_prefer_floor":  # ties to the lower index: ceil(c - 0.5)
        i = np.where(c == np.trunc(c) + _F(0.5), np.floor(c), np.sign(c) * np.floor(np.abs(c) + _F(0.5)))
    elif mode == "round_prefer_ceil":  # std::round: ties away from zero
        i = np.sign(c) * np.floor(np.abs(c) + _F(0.5))
    elif mode == "floor":
        i = np.floor(c)
    elif mode == "ceil":
        i = np.ceil(c)
    elif mode == "simple":
        i = np.ceil(c) if scale < 1 else np.trunc(c)
    else:
        raise _err(f"resize: nearest_mode {mode!r} ({', '.join(NEAREST_MODES)})")
    return np.clip(i, 0, inp - 1).astype(np.int64)


def _check(at: dict[str, Any], ts: list[TensorType]) -> None:
    x = ts[0]
    if x.dtype != "float32":
        raise _err(f"resize needs a float32 input, got {x}")
    if at["mode"] not in RESIZE_MODES:
        raise _err(f"resize: mode {at['mode']!r} ({', '.join(RESIZE_MODES)})")
    if at["coord_mode"] not in COORD_MODES:
        raise _err(f"resize: coord_mode {at['coord_mode']!r} ({', '.join(COORD_MODES)})")
    if at["nearest_mode"] not in NEAREST_MODES:
        raise _err(f"resize: nearest_mode {at['nearest_mode']!r} ({', '.join(NEAREST_MODES)})")
    r = len(x.shape)
    if len(at["sizes"]) != r or min(at["sizes"], default=1) < 1:
        raise _err(f"resize: sizes {tuple(at['sizes'])} needs {r} positive extents for {x}")
    if at["scales"] is not None and (len(at["scales"]) != r or min(at["scales"]) <= 0):
        raise _err(f"resize: scales {tuple(at['scales'])} needs {r} positive values for {x}")


def _resize_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    _check(at, ts)
    return TensorType(tuple(int(s) for s in at["sizes"]), "float32")


def _resize(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0]
    scales = resize_scales(at, x.shape)
    y = x.astype(np.float64)
    for a, (o, i, s) in enumerate(zip(at["sizes"], x.shape, scales)):
        if s == 1.0 and o == i:  # onnxruntime maps an axis of scale 1 to itself, whatever the coordinates
            continue
        c = source_coords(at["coord_mode"], o, i, s)
        if at["mode"] == "nearest":
            y = np.take(y, nearest_index(c, at["nearest_mode"], s, i), axis=a)
            continue
        c = np.clip(c, _F(0), _F(i - 1))
        i0 = np.minimum(np.floor(c).astype(np.int64), i - 1)
        i1 = np.minimum(i0 + 1, i - 1)
        w1 = (c - i0).astype(np.float64)
        shape = [1] * y.ndim
        shape[a] = o
        w1 = w1.reshape(shape)
        y = np.take(y, i0, axis=a) * (1 - w1) + np.take(y, i1, axis=a) * w1
    return y.astype(np.float32)


register("resize", "injective", (1, 1), {"sizes": _REQUIRED, "scales": None, "mode": "nearest",
                                         "coord_mode": "half_pixel", "nearest_mode": "round_prefer_floor"})(
    (_resize_infer, _resize)
)
