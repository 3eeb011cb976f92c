"""Value types of the graph level: :class:`TensorType` (static shape and dtype), the dtypes
it knows, and :class:`GraphError`. The bottom of the graph package: the IR and the operator
registry both build on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DTYPES", "GraphError", "TensorType"]

#: Tensor element types the graph level knows.
DTYPES = ("float32", "int8", "uint8", "int32")


class GraphError(ValueError):
    """A malformed graph, attribute or input; the message names the node or input."""


@dataclass(frozen=True)
class TensorType:
    """Static shape and element type of a value."""

    shape: tuple[int, ...]
    dtype: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        if self.dtype not in DTYPES:
            raise GraphError(f"unsupported dtype {self.dtype!r}; the graph level knows {', '.join(DTYPES)}")
        if any(s < 0 for s in self.shape):
            raise GraphError(f"negative dimension in shape {self.shape}")

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
