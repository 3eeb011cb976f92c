"""The GPU's other convolution implementations as graph ops: what the cuda strategy rewrites a
``conv2d`` into when a tuning log says another implementation of it is faster
(:mod:`vdla.compiler.graph.strategy.cuda`, TVM's op strategy with its tuned-cost selection):

* ``conv2d_winograd`` ``padding``, ``m``: a 3x3, stride-1, dilation-1 convolution by Winograd's
  F(m x m, 3 x 3) (the ``conv2d_nchw_winograd.cuda`` template): data NCHW ``(N, C, H, W)``, the
  weight transformed once at compile time, ``U (alpha^2, C, OC)`` (``alpha = m + 2``,
  :func:`~vdla.compiler.topi.winograd.winograd_weight_nchw`), optional bias ``(OC,)`` ->
  ``(N, OC, OH, OW)``;
* ``conv2d_1x1`` ``size``: a 1x1, stride-1 convolution of batch 1 as a GEMM (the ``conv2d_1x1.cuda``
  template): data ``(C, H*W)`` and weight ``(OC, C)`` (the memory of NCHW data and OIHW weights,
  reshaped as views), optional bias ``(OC,)`` -> ``(OC, H*W)``; ``size`` is ``(H, W)``.

Their numpy semantics are the direct convolution's (a Winograd weight is transformed back), so
the reference executor checks the GPU kernels against a different method. Each op registers
itself (:func:`.registry.register`) when this module is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...topi.util import conv_out
from ...topi.winograd import WINOGRAD_TILES, unpack_weight_nchw
from ..ir import TensorType
from .nn import conv2d_nchw
from .registry import _err, register

__all__: list[str] = []


def _float(t: TensorType, rank: int, op: str, what: str) -> None:
    if len(t.shape) != rank or t.dtype != "float32":
        raise _err(f"{op}: {what} must be rank-{rank} float32, got {t}")


def _bias(ts: list[TensorType], oc: int, op: str) -> None:
    if len(ts) == 3 and (ts[2].shape != (oc,) or ts[2].dtype != "float32"):
        raise _err(f"{op}: bias must be float32[{oc}], got {ts[2]}")


def _winograd_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, u = ts[0], ts[1]
    _float(x, 4, "conv2d_winograd", "data")
    _float(u, 3, "conv2d_winograd", "the transformed weight")
    m = int(at["m"])
    if m not in WINOGRAD_TILES:
        raise _err(f"conv2d_winograd: output tile m={m} has no transform (m in {WINOGRAD_TILES})")
    n, c, h, w = x.shape
    if u.shape[0] != (m + 2) ** 2 or u.shape[1] != c:
        raise _err(f"conv2d_winograd: weight must be ({(m + 2) ** 2}, {c}, OC) for m={m}, got {u}")
    oc = u.shape[2]
    _bias(ts, oc, "conv2d_winograd")
    pt, pl, pb, pr = at["padding"]
    oh, ow = conv_out(h, 3, 1, pt, pb), conv_out(w, 3, 1, pl, pr)
    if oh <= 0 or ow <= 0:
        raise _err(f"conv2d_winograd: input {h}x{w} is smaller than the 3x3 kernel")
    return TensorType((n, oc, oh, ow), "float32")


def _winograd(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    w = unpack_weight_nchw(xs[1], int(at["m"])).astype(np.float32)
    y = conv2d_nchw(xs[0], w, (1, 1), at["padding"])
    return (y + xs[2].reshape(1, -1, 1, 1) if len(xs) == 3 else y).astype(np.float32)


register("conv2d_winograd", "complex", (2, 3), {"padding": (1, 1, 1, 1), "m": 2})((_winograd_infer, _winograd))


def _gemm_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts[0], ts[1]
    _float(x, 2, "conv2d_1x1", "data")
    _float(w, 2, "conv2d_1x1", "weight")
    h, wd = (int(v) for v in at["size"])
    c, hw = x.shape
    if hw != h * wd or w.shape[1] != c:
        raise _err(f"conv2d_1x1: data ({c}, {hw}) of {h}x{wd} pixels and weight {w.shape} do not match")
    _bias(ts, w.shape[0], "conv2d_1x1")
    return TensorType((w.shape[0], hw), "float32")


def _gemm(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    y = np.matmul(xs[1], xs[0])
    return (y + xs[2].reshape(-1, 1) if len(xs) == 3 else y).astype(np.float32)


register("conv2d_1x1", "complex", (2, 3), {"size": (1, 1)})((_gemm_infer, _gemm))
