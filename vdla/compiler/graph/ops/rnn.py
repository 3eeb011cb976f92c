"""Recurrences: ``lstm_scan``, an LSTM layer's recurrence over a whole sequence as one
operator (the input projection is a separate ``dense``; the recurrent product, gates and
state update run step by step). The llvm strategy builds it with the TE ``scan``
(:mod:`vdla.compiler.targets.llvm.strategy`), as TVM's LSTM recipe does; the numpy
semantics here are the reference.

Inputs: ``gates_x`` (T, B, 4H), the input projection plus both biases, gates in ONNX's
order i, o, f, c; ``r`` (4H, H), the recurrence weights; ``h0`` and ``c0`` (B, H). Output
(T, 2, B, H): ``[:, 0]`` the hidden state and ``[:, 1]`` the cell state after each step.
Each op registers itself (:func:`.registry.register`) when this module is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import TensorType
from .registry import _err, register


def _lstm_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    gx, r, h0, c0 = ts
    if any(t.dtype != "float32" for t in ts) or len(gx.shape) != 3:
        raise _err(f"lstm_scan needs float32 gates_x[T,B,4H], r[4H,H], h0/c0[B,H], got {', '.join(map(str, ts))}")
    steps, batch, g4 = gx.shape
    hs = g4 // 4
    if g4 != 4 * hs or r.shape != (g4, hs) or h0.shape != (batch, hs) or c0.shape != (batch, hs):
        raise _err(f"lstm_scan: shapes {', '.join(map(str, ts))} do not fit T={steps}, B={batch}, H={hs}")
    return TensorType((steps, 2, batch, hs), "float32")


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-v))


def _lstm(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    gx, r, h, c = (x.astype(np.float32) for x in xs)
    steps, batch, g4 = gx.shape
    hs = g4 // 4
    out = np.empty((steps, 2, batch, hs), np.float32)
    for t in range(steps):
        g = gx[t] + h @ r.T
        i, o, f, cc = (g[:, k * hs : (k + 1) * hs] for k in range(4))
        c = (_sigmoid(f) * c + _sigmoid(i) * np.tanh(cc)).astype(np.float32)
        h = (_sigmoid(o) * np.tanh(c)).astype(np.float32)
        out[t, 0], out[t, 1] = h, c
    return out


register("lstm_scan", "opaque", (4, 4))((_lstm_infer, _lstm))
