"""Value types of the graph level: :class:`TensorType` (static shape and dtype), the dtypes
it knows, and :class:`GraphError`. The bottom of the graph package: the IR and the operator
registry both build on it.

A graph input may be declared wider than the graph computes (an ONNX model's double or int64
input, :data:`BOUNDARY_DTYPES`): its type keeps the declared dtype as ``boundary``, and
:func:`narrow_input` is the one cast every runner applies to such an input (it refuses a value
the narrower dtype cannot hold).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["DTYPES", "BOUNDARY_DTYPES", "GraphError", "TensorType", "narrow_input"]

#: Tensor element types the graph level knows.
DTYPES = ("float32", "int8", "uint8", "int32")

#: Wider element types a graph input may be declared with -> the dtype the graph computes it in
#: (old PyTorch exports declare double and int64 inputs; the graph level has neither).
BOUNDARY_DTYPES = {"float64": "float32", "int64": "int32"}


class GraphError(ValueError):
    """A malformed graph, attribute or input; the message names the node or input."""


@dataclass(frozen=True)
class TensorType:
    """Static shape and element type of a value."""

    shape: tuple[int, ...]
    dtype: str
    #: A graph input's declared dtype when it is wider than ``dtype`` (a key of
    #: :data:`BOUNDARY_DTYPES`): runners accept arrays of either and narrow at the boundary.
    #: Not part of the type's identity (two types differing only here are equal).
    boundary: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        if self.dtype not in DTYPES:
            raise GraphError(f"unsupported dtype {self.dtype!r}; the graph level knows {', '.join(DTYPES)}")
        if any(s < 0 for s in self.shape):
            raise GraphError(f"negative dimension in shape {self.shape}")
        if self.boundary is not None and BOUNDARY_DTYPES.get(self.boundary) != self.dtype:
            wide = [f"{w} (as {n})" for w, n in BOUNDARY_DTYPES.items()]
            raise GraphError(f"a {self.dtype} value cannot be declared {self.boundary!r} at the boundary "
                             f"(declared dtypes: {', '.join(wide)})")

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"

    @classmethod
    def of(cls, a: np.ndarray) -> TensorType:
        return cls(a.shape, str(a.dtype))


def narrow_input(name: str, t: TensorType, a: np.ndarray, graph: str | None = None) -> np.ndarray:
    """Input ``name``'s array ``a`` of its declared ``t.boundary`` dtype as ``t.dtype`` (the cast
    every runner does at the boundary). A value ``t.dtype`` cannot hold (an int64 outside int32, a
    finite float64 beyond float32's largest) is a GraphError naming the input, the value and its
    index, not a wrapped or infinite number."""
    what = f"input {name!r}" + (f" of graph {graph!r}" if graph is not None else "")
    if t.boundary is None or str(a.dtype) != t.boundary:
        raise GraphError(f"{what} ({t}) is not declared {a.dtype}")
    with np.errstate(over="ignore"):  # an overflow is found below and named
        narrow = a.astype(t.dtype)
    if np.dtype(t.dtype).kind == "i":
        lo, hi = np.iinfo(t.dtype).min, np.iinfo(t.dtype).max
        out, rng = (a < lo) | (a > hi), f"[{lo}, {hi}]"
    else:  # a finite value that overflows to infinity (NaN and infinities stay what they are, as a cast makes them)
        big = float(np.finfo(t.dtype).max)
        out, rng = np.isinf(narrow) & np.isfinite(a), f"[{-big:.9g}, {big:.9g}]"
    if np.any(out):
        where = np.argwhere(out)
        first = tuple(int(i) for i in where[0])
        raise GraphError(f"{what} is declared {t.boundary} and computed in {t.dtype}: its value {a[first].item()!r} "
                         f"at index {list(first)} is outside {t.dtype}'s range {rng} ({len(where)} such value"
                         f"{'s' if len(where) > 1 else ''})")
    return narrow
