"""Recurrences: ``lstm_scan`` and ``gru_scan``, an LSTM's / GRU's recurrence over a whole
sequence as one operator (the input projection is a separate ``dense``; the recurrent
product, gates and state update run step by step). The llvm strategy builds it with the TE ``scan``
(:mod:`vdla.compiler.graph.strategy.scan`), as TVM's LSTM recipe does; the numpy
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


def _gru_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    gx, r, rbh, h0 = ts
    if any(t.dtype != "float32" for t in ts) or len(gx.shape) != 3:
        raise _err(f"gru_scan needs float32 gates_x[T,B,3H], r[3H,H], rbh[H], h0[B,H], got {', '.join(map(str, ts))}")
    steps, batch, g3 = gx.shape
    hs = g3 // 3
    if g3 != 3 * hs or r.shape != (g3, hs) or rbh.shape != (hs,) or h0.shape != (batch, hs):
        raise _err(f"gru_scan: shapes {', '.join(map(str, ts))} do not fit T={steps}, B={batch}, H={hs}")
    return TensorType((steps, batch, hs), "float32")


def _gru(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    gx, r, rbh, h = (x.astype(np.float32) for x in xs)
    steps, batch, g3 = gx.shape
    hs = g3 // 3
    out = np.empty((steps, batch, hs), np.float32)
    for t in range(steps):
        zr = h @ r[: 2 * hs].T
        z = _sigmoid(gx[t, :, :hs] + zr[:, :hs])
        rg = _sigmoid(gx[t, :, hs : 2 * hs] + zr[:, hs:])
        if at["linear_before_reset"]:
            cand = np.tanh(gx[t, :, 2 * hs :] + rg * (h @ r[2 * hs :].T + rbh))
        else:
            cand = np.tanh(gx[t, :, 2 * hs :] + (rg * h) @ r[2 * hs :].T + rbh)
        h = (cand + z * (h - cand)).astype(np.float32)
        out[t] = h
    return out


#: a GRU layer's recurrence: gates_x (T, B, 3H) in ONNX's order z, r, h (input projection
#: plus Wb, and Rb for z and r), r (3H, H), rbh (H,) (the candidate's recurrence bias: inside
#: the reset with ``linear_before_reset``, added after it otherwise), h0 (B, H) -> (T, B, H)
register("gru_scan", "opaque", (4, 4), {"linear_before_reset": 0})((_gru_infer, _gru))
