"""Operator definitions: attributes, shape/dtype inference and numpy semantics.

Each operator is an :class:`OpDef` with

* ``kind`` — the TVM paper's fusion class: ``"elemwise"`` (a one-to-one injective op),
  ``"injective"``, ``"reduction"``, ``"complex"`` (complex-out-fusable: conv, dense) or
  ``"opaque"``;
* ``attrs`` — the attribute names with defaults (others are rejected);
* ``infer(attrs, input_types) -> TensorType`` — shape inference with clear errors;
* ``compute(attrs, arrays) -> ndarray`` — the reference semantics (see :mod:`.reference`).

Integer semantics follow the accelerator: int8 x int8 products accumulate exactly in
int32 (wrapping at 32 bits, as VTA's ACC does); ``shift`` by ``n > 0`` adds ``2**(n-1)``
and shifts right arithmetically (rounding as VTA's requantise realisation); ``requantize``
is ``shift``, then ``clip``, then ``cast`` (truncating, as the ACC->OUT narrowing). Exact
integer convolutions run through float64 BLAS when every partial sum is below 2**53 and
through int64 otherwise (numpy has no integer BLAS).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..types import GraphError, TensorType

__all__ = ["OpDef", "OPS", "get_op", "normalize_attrs", "register"]

Infer = Callable[[dict[str, Any], list[TensorType]], TensorType]
Compute = Callable[[dict[str, Any], list[np.ndarray]], np.ndarray]


@dataclass(frozen=True)
class OpDef:
    name: str
    kind: str
    nin: tuple[int, int]
    attrs: dict[str, Any]
    infer: Infer
    compute: Compute


OPS: dict[str, OpDef] = {}
_REQUIRED = object()


def register(name: str, kind: str, nin: tuple[int, int], attrs: dict[str, Any] | None = None):
    def deco(pair: tuple[Infer, Compute]) -> tuple[Infer, Compute]:
        infer, compute = pair
        a = dict(attrs or {})

        def checked_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
            lo, hi = nin
            if not lo <= len(ts) <= hi:
                want = str(lo) if lo == hi else f"{lo} to {hi}"
                raise GraphError(f"{name} takes {want} inputs, got {len(ts)}")
            return infer(at, ts)

        OPS[name] = OpDef(name, kind, nin, a, checked_infer, compute)
        return pair

    return deco


def get_op(op: str, node: str = "?") -> OpDef:
    if op not in OPS:
        raise GraphError(f"node {node!r}: unknown operator {op!r}")
    return OPS[op]


def _tuple(v: Any, n: int, what: str) -> tuple[int, ...]:
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    t = tuple(int(x) for x in v)
    if len(t) != n:
        raise GraphError(f"attribute {what} needs {n} values, got {t}")
    return t


def normalize_attrs(op: str, attrs: dict[str, Any], node: str = "?") -> dict[str, Any]:
    """Fill defaults, reject unknown attributes, canonicalise tuples (strides, padding)."""
    d = get_op(op, node)
    for k in attrs:
        if k not in d.attrs:
            raise GraphError(
                f"node {node!r}: operator {op} has no attribute {k!r} (it has {', '.join(d.attrs) or 'none'})"
            )
    out: dict[str, Any] = {}
    for k, default in d.attrs.items():
        if k in attrs:
            v = attrs[k]
        elif default is _REQUIRED:
            raise GraphError(f"node {node!r}: operator {op} needs attribute {k!r}")
        else:
            v = default
        if k in ("strides", "dilation", "kernel", "output_padding") and v is not None:
            v = _tuple(v, 2, k)
        elif k == "padding" and v is not None:
            t = _tuple(v, 2, k) if isinstance(v, int) or len(v) == 2 else _tuple(v, 4, k)
            v = t if len(t) == 4 else (t[0], t[1], t[0], t[1])
        elif k == "shape" and v is not None:
            v = tuple(int(x) for x in v)
        elif isinstance(v, list):
            v = tuple(v)
        elif isinstance(v, np.generic):
            v = v.item()
        out[k] = v
    return out


def _err(msg: str) -> GraphError:
    return GraphError(msg)


def _axis(axis: int, rank: int, op: str, extra: int = 0) -> int:
    if not -rank - extra <= axis < rank + extra:
        raise _err(f"{op}: axis {axis} out of range for rank {rank}")
    return axis % (rank + extra)


def _is_int(dtype: str) -> bool:
    return dtype in ("int8", "uint8", "int32")


def _wrap32(a: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of an int64 array to int32 (what 32-bit hardware adders do)."""
    return a.astype(np.int64).astype(np.int32)


def op_kind(node_op: str, attrs: dict[str, Any] | None = None) -> str:
    """The fusion class of an op (a fused node has its anchor's class)."""
    if node_op == "fused" and attrs:
        return attrs.get("kind", "opaque")
    return OPS[node_op].kind
