"""Float math and activations beyond the VDLA ALU's set: unary functions (exp, log, sqrt,
elu, selu, hard-swish, ...), the broadcasting binaries div/pow/maximum/minimum/prelu and
``expand`` (broadcast to a shape), with their numpy semantics (ONNX's definitions).

These run on the CPU; the ONNX importer (:mod:`..onnx_import`) maps ONNX's operators onto
them. Each op registers itself (:func:`.registry.register`) when this module is imported.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir import TensorType
from .elemwise import _binary_compute, _binary_infer, _float_only
from .registry import _REQUIRED, _err, register

__all__ = ["UNARY"]

_F = np.float32


def _hard_sigmoid(x: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    return np.clip(_F(at["alpha"]) * x + _F(at["beta"]), _F(0), _F(1))


def _softplus(x: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    # log(1 + e^x) without overflow for large x
    return np.logaddexp(_F(0), x)


def _elu(x: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    return np.where(x < 0, _F(at["alpha"]) * np.expm1(np.minimum(x, 0)), x)


def _selu(x: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    g, a = _F(at["gamma"]), _F(at["alpha"])
    return g * np.where(x <= 0, a * np.expm1(np.minimum(x, 0)), x)


_erf = np.vectorize(math.erf, otypes=[np.float64])  # exact (numpy has no erf)


def _gelu(x: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    x64 = x.astype(np.float64)
    if at["approximate"] == "tanh":
        return 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)))
    return 0.5 * x64 * (1 + _erf(x64 / math.sqrt(2)))


#: name -> (attributes with defaults, numpy function of (x, attrs)); all float32 in, float32 out.
UNARY: dict[str, tuple[dict[str, Any], Callable[[np.ndarray, dict[str, Any]], np.ndarray]]] = {
    "neg": ({}, lambda x, at: -x),
    "abs": ({}, lambda x, at: np.abs(x)),
    "exp": ({}, lambda x, at: np.exp(x)),
    "log": ({}, lambda x, at: np.log(x)),
    "sqrt": ({}, lambda x, at: np.sqrt(x)),
    "reciprocal": ({}, lambda x, at: _F(1) / x),
    "sign": ({}, lambda x, at: np.sign(x)),
    "floor": ({}, lambda x, at: np.floor(x)),
    "ceil": ({}, lambda x, at: np.ceil(x)),
    "softplus": ({}, _softplus),
    "softsign": ({}, lambda x, at: x / (_F(1) + np.abs(x))),
    "leaky_relu": ({"alpha": 0.01}, lambda x, at: np.where(x < 0, _F(at["alpha"]) * x, x)),
    "elu": ({"alpha": 1.0}, _elu),
    "selu": ({"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875}, _selu),
    "hard_sigmoid": ({"alpha": 0.2, "beta": 0.5}, _hard_sigmoid),
    "hard_swish": ({}, lambda x, at: x * _hard_sigmoid(x, {"alpha": 1 / 6, "beta": 0.5})),
    "erf": ({}, lambda x, at: _erf(x.astype(np.float64))),
    "gelu": ({"approximate": "none"}, _gelu),
    "celu": ({"alpha": 1.0}, lambda x, at: np.maximum(x, 0) + np.minimum(0, _F(at["alpha"]) * np.expm1(
        np.minimum(x, 0) / _F(at["alpha"])))),
    "thresholded_relu": ({"alpha": 1.0}, lambda x, at: np.where(x > _F(at["alpha"]), x, _F(0))),
    "mish": ({}, lambda x, at: x * np.tanh(np.logaddexp(_F(0), x))),
    "shrink": ({"lambd": 0.5, "bias": 0.0}, lambda x, at: np.where(
        x < -_F(at["lambd"]), x + _F(at["bias"]), np.where(x > _F(at["lambd"]), x - _F(at["bias"]), _F(0)))),
}


def _unary_compute(fn: Callable[[np.ndarray, dict[str, Any]], np.ndarray]):
    def compute(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
        with np.errstate(all="ignore"):  # log(-1), 1/0: NaN / inf as ONNX gives
            return np.asarray(fn(xs[0], at)).astype(np.float32, copy=False)

    return compute


for _name, (_attrs, _fn) in UNARY.items():
    register(_name, "elemwise", (1, 1), _attrs)((_float_only(_name), _unary_compute(_fn)))


def _float_binary_infer(op: str):
    base = _binary_infer(op)

    def infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
        t = base(at, ts)
        if t.dtype != "float32":
            raise _err(f"{op} needs float32 inputs, got {ts[0]} and {ts[1]}")
        return t

    return infer


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.power(a, b)


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.divide(a, b)


register("div", "elemwise", (2, 2))((_float_binary_infer("div"), _binary_compute(_div)))
register("pow", "elemwise", (2, 2))((_float_binary_infer("pow"), _binary_compute(_pow)))
register("maximum", "elemwise", (2, 2))((_binary_infer("maximum"), _binary_compute(np.maximum)))
register("minimum", "elemwise", (2, 2))((_binary_infer("minimum"), _binary_compute(np.minimum)))
register("prelu", "elemwise", (2, 2))(
    (_float_binary_infer("prelu"), _binary_compute(lambda x, s: np.where(x < 0, x * s, x)))
)


def _expand_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    try:
        shape = np.broadcast_shapes(ts[0].shape, tuple(at["shape"]))
    except ValueError:
        raise _err(f"expand: {ts[0]} does not broadcast to {tuple(at['shape'])}") from None
    return TensorType(shape, ts[0].dtype)


register("expand", "injective", (1, 1), {"shape": _REQUIRED})(
    (_expand_infer, lambda at, xs: np.ascontiguousarray(np.broadcast_to(xs[0], _expand_infer(at, [TensorType.of(xs[0])]).shape)))
)
