"""A node's built function on a code-generating target (llvm, cuda): what the executor calls.

A :class:`BuiltKernel` is one function and the outer values it takes, in order, followed by
the output it writes. Nodes of equal structure share the function (:class:`KernelCache`,
keyed by :func:`.topi_ops.signature`), each with its own argument names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...driver import symbol_name
from ..ir import Graph, Node

__all__ = ["BuiltKernel", "KernelCache", "kernel_name"]


def kernel_name(node: str) -> str:
    """The symbol a node's kernel is built under (:func:`vdla.compiler.driver.symbol_name` of the
    node's name: graph values are named as the model file names them, ``/layer1/conv/Conv_output_0``,
    ``onnx::Conv_5``); ``block1.conv`` keeps the spelling kernels always had, ``block1_conv``."""
    return symbol_name(node)


@dataclass
class BuiltKernel:
    """A node's function for target ``kind``: ``args`` are the outer values passed in order, then the output."""

    kind: str
    func: Any
    args: list[str]
    out_shape: tuple[int, ...]
    out_dtype: str

    def with_args(self, args: list[str]) -> BuiltKernel:
        """The same function for another node of equal signature (its own value names)."""
        return replace(self, args=list(args))

    def __call__(self, env: Any, out: np.ndarray | None = None) -> np.ndarray:
        """Run a host (llvm) function on numpy values, into ``out`` (a new array by default)."""
        if out is None:
            out = np.empty(self.out_shape, self.out_dtype)
        arrs: list[np.ndarray] = []
        for a in self.args:  # the module refuses aliased arguments (equal constants may share one array)
            v = np.ascontiguousarray(env[a])
            arrs.append(v.copy() if any(np.may_share_memory(v, u) for u in arrs) else v)
        self.func(*arrs, out)
        return out


class KernelCache:
    """Built functions by ``key(node)`` for one target: ``lower`` builds, equal keys share."""

    def __init__(self, lower: Callable[[Node, Graph, str], BuiltKernel | str],
                 key: Callable[[Node, Graph], str], args: Callable[[Node, Graph], list[str]], *,
                 cache_failures: bool = True) -> None:
        self._lower, self._key, self._args = lower, key, args
        # the CPU strategy tries a failed signature again per node (it always has; a retry
        # builds nothing new when the failure is deterministic), the GPU's remembers it
        self._cache_failures = cache_failures
        self.funcs: dict[str, BuiltKernel | str] = {}

    def __len__(self) -> int:
        return sum(isinstance(k, BuiltKernel) for k in self.funcs.values())

    def get(self, node: Node, graph: Graph) -> BuiltKernel | str:
        key = self._key(node, graph)
        k = self.funcs.get(key)
        if k is None:
            k = self._lower(node, graph, kernel_name(node.name))
            if isinstance(k, BuiltKernel) or self._cache_failures:
                self.funcs[key] = k
            return k
        return k if isinstance(k, str) else k.with_args(self._args(node, graph))
