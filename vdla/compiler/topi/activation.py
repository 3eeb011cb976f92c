"""Float activations as element-wise computes (ONNX's definitions, as :mod:`vdla.compiler.graph.ops.math`
computes them with numpy): the soft and hard sigmoid/swish family, ELU/SELU/CELU, erf, GELU
(erf and tanh forms), mish, softplus, softsign, shrink, sign and reciprocal.

Each is tagged ``injective``, so an anchor's schedule (a conv, a dense) inlines it as its
tail and ``schedule_injective`` runs it alone, on every target. :data:`ACTIVATIONS` is the
table: name -> the function of (value, attributes). The loop IR has no erf intrinsic (nor
LLVM, nor a portable libm call on both targets), so :func:`erf` is a float32 rational
approximation built from multiplies and one division, the same expression on every target.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .. import te
from ..tir.nodes import Expr
from .util import INJECTIVE

__all__ = ["ACTIVATIONS", "activation", "erf", "supports"]


def _c(v: float) -> Expr:
    return te.const(float(v), "float32")


def _hard_sigmoid(v: Expr, alpha: float, beta: float) -> Expr:
    return te.min(te.max(v * _c(alpha) + _c(beta), _c(0.0)), _c(1.0))


def _softplus(v: Expr) -> Expr:
    # log(1 + e^v); past 20 that is v to float32's precision (and e^v would overflow later)
    return te.select(v > _c(20.0), v, te.log(_c(1.0) + te.exp(v)))


def _expm1(v: Expr) -> Expr:
    return te.exp(v) - _c(1.0)


#: erf(x) ~ x P(x^2) / Q(x^2) on [-4, 4] (Eigen's and XLA's float erf; past 4 erf is +-1 in
#: float32): the coefficients of P (x^12 .. x^0) and Q (x^8 .. x^0); max abs error ~5e-7 in float32
_ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
          -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
          -1.42647390514189e-02)


def erf(v: Expr) -> Expr:
    """The error function of a float32 value: a rational approximation, clamped to [-4, 4]."""
    x = te.min(te.max(v, _c(-4.0)), _c(4.0))
    x2 = x * x
    p = _c(_ERF_P[0])
    for a in _ERF_P[1:]:
        p = p * x2 + _c(a)
    q = _c(_ERF_Q[0])
    for b in _ERF_Q[1:]:
        q = q * x2 + _c(b)
    return x * p / q


def _gelu(v: Expr, at: dict[str, Any]) -> Expr:
    if at.get("approximate", "none") == "tanh":
        return _gelu_tanh(v)
    return _c(0.5) * v * (_c(1.0) + erf(v * _c(1.0 / math.sqrt(2.0))))


def _gelu_tanh(v: Expr) -> Expr:
    k = math.sqrt(2.0 / math.pi)
    return _c(0.5) * v * (_c(1.0) + te.tanh(_c(k) * (v + _c(0.044715) * v * v * v)))


#: name -> f(value, attributes) (the attributes with the graph op's defaults filled in)
ACTIVATIONS: dict[str, Callable[[Expr, dict[str, Any]], Expr]] = {
    "reciprocal": lambda v, at: _c(1.0) / v,
    "sign": lambda v, at: te.select(v > _c(0.0), _c(1.0), te.select(v < _c(0.0), _c(-1.0), _c(0.0))),
    "softplus": lambda v, at: _softplus(v),
    "softsign": lambda v, at: v / (_c(1.0) + te.abs(v)),
    "elu": lambda v, at: te.select(v < _c(0.0), _c(at["alpha"]) * _expm1(v), v),
    "selu": lambda v, at: _c(at["gamma"]) * te.select(v <= _c(0.0), _c(at["alpha"]) * _expm1(v), v),
    "celu": lambda v, at: te.max(v, _c(0.0)) + te.min(_c(0.0), _c(at["alpha"]) * _expm1(v / _c(at["alpha"]))),
    "hard_sigmoid": lambda v, at: _hard_sigmoid(v, at["alpha"], at["beta"]),
    "hard_swish": lambda v, at: v * _hard_sigmoid(v, 1.0 / 6.0, 0.5),
    "erf": lambda v, at: erf(v),
    "gelu": _gelu,
    "thresholded_relu": lambda v, at: te.select(v > _c(at["alpha"]), v, _c(0.0)),
    "mish": lambda v, at: v * te.tanh(_softplus(v)),
    "shrink": lambda v, at: te.select(v < _c(-at["lambd"]), v + _c(at["bias"]),
                                      te.select(v > _c(at["lambd"]), v - _c(at["bias"]), _c(0.0))),
}


def supports(op: str, attrs: dict[str, Any]) -> str | None:
    """None when :func:`activation` builds ``op`` with ``attrs``, else why not."""
    if op not in ACTIVATIONS:
        return f"{op} has no topi operator"
    if op == "gelu" and attrs.get("approximate", "none") not in ("none", "tanh"):
        return f"gelu approximate={attrs['approximate']!r} (ONNX has 'none' and 'tanh')"
    return None


def activation(x: te.Tensor, op: str, attrs: dict[str, Any] | None = None) -> te.Tensor:
    """``op`` applied to every element of the float32 tensor ``x``."""
    at = dict(attrs or {})
    why = supports(op, at)
    if why is not None:
        raise ValueError(why)
    fn = ACTIVATIONS[op]
    return te.compute(x.shape, lambda *i: fn(x[i], at), name=op, tag=INJECTIVE)
