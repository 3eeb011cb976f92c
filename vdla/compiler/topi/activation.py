"""Float activations as element-wise computes (ONNX's definitions, as :mod:`vdla.compiler.graph.ops.math`
computes them with numpy): the soft and hard sigmoid/swish family, ELU/SELU/CELU, GELU in its
tanh form, mish, softplus, softsign, shrink, sign and reciprocal.

Each is tagged ``injective``, so an anchor's schedule (a conv, a dense) inlines it as its
tail and ``schedule_injective`` runs it alone, on every target. :data:`ACTIVATIONS` is the
table: name -> the function of (value, attributes); GELU's erf form is not here (the loop
IR has no erf intrinsic), so :func:`supports` says why.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .. import te
from ..tir.nodes import Expr
from .util import INJECTIVE

__all__ = ["ACTIVATIONS", "activation", "supports"]


def _c(v: float) -> Expr:
    return te.const(float(v), "float32")


def _hard_sigmoid(v: Expr, alpha: float, beta: float) -> Expr:
    return te.min(te.max(v * _c(alpha) + _c(beta), _c(0.0)), _c(1.0))


def _softplus(v: Expr) -> Expr:
    # log(1 + e^v); past 20 that is v to float32's precision (and e^v would overflow later)
    return te.select(v > _c(20.0), v, te.log(_c(1.0) + te.exp(v)))


def _expm1(v: Expr) -> Expr:
    return te.exp(v) - _c(1.0)


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
    "gelu": lambda v, at: _gelu_tanh(v),
    "thresholded_relu": lambda v, at: te.select(v > _c(at["alpha"]), v, _c(0.0)),
    "mish": lambda v, at: v * te.tanh(_softplus(v)),
    "shrink": lambda v, at: te.select(v < _c(-at["lambd"]), v + _c(at["bias"]),
                                      te.select(v > _c(at["lambd"]), v - _c(at["bias"]), _c(0.0))),
}


def supports(op: str, attrs: dict[str, Any]) -> str | None:
    """None when :func:`activation` builds ``op`` with ``attrs``, else why not."""
    if op not in ACTIVATIONS:
        return f"{op} has no topi operator"
    if op == "gelu" and attrs.get("approximate", "none") != "tanh":
        return "gelu (erf form) has no topi operator: the loop IR has no erf intrinsic (the tanh form has)"
    return None


def activation(x: te.Tensor, op: str, attrs: dict[str, Any] | None = None) -> te.Tensor:
    """``op`` applied to every element of the float32 tensor ``x``."""
    at = dict(attrs or {})
    why = supports(op, at)
    if why is not None:
        raise ValueError(why)
    fn = ACTIVATIONS[op]
    return te.compute(x.shape, lambda *i: fn(x[i], at), name=op, tag=INJECTIVE)
