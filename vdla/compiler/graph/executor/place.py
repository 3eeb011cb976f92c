"""Placing the host side of a plan: each ``host`` step becomes a view, a kernel of a
code-generating target, or stays on the host's numpy kernels with the reason recorded.

:func:`place` is the one rule, for every target: a ``flatten`` / ``reshape`` is a view of its
input's memory (:data:`~..strategy.VIEW_OPS`), and so is a ``slice`` or one-index ``take``
that is a contiguous block of it (:func:`~..strategy.view_offset`: the same memory from an
offset); a node the strategy maps is built for the
target (:func:`~..strategy.kernel_cache`: one function per signature); anything else runs
on the host. The VDLA compile step calls it with ``llvm`` for the nodes left on the CPU; the
float compile step with the model's own target; loading a model file with ``llvm`` again
(JIT functions are not serialised).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ..ir import Graph
from ..strategy import kernel_cache, kind_of, view_offset
from .plan import Step

__all__ = ["place"]


def place(graph: Graph, kernels: Mapping[str, Step], target: Any, *, build: bool = True) -> float:
    """Move every ``host`` step of ``kernels`` to a view or onto ``target`` where the strategy
    maps it (``build=False``: views only, the rest stays on the host). Returns the seconds spent."""
    t0 = time.perf_counter()
    cache = kernel_cache(target)
    for n in graph.topo_order():
        k = kernels[n.name]
        if k.target != "host":
            continue
        offset = view_offset(n, graph, kind_of(target))
        if offset is not None:
            k.target, k.host_reason, k.offset = "view", "", offset
            continue
        if not build:
            k.host_reason = f"{kind_of(target)} disabled"
            continue
        built = cache.get(n, graph)
        if isinstance(built, str):
            k.host_reason = built
        else:
            k.target, k.kernel, k.host_reason = built.kind, built, ""
    return time.perf_counter() - t0
