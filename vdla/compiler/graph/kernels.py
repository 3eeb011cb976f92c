"""The kernel table: how each node of a compiled model runs.

A :class:`Kernel` says whether a node runs on ``vdla`` (an index into the model's VDLA
functions, with its ALU chain and packed bias), on ``llvm`` (a JIT-built host function,
:mod:`vdla.compiler.targets.llvm.strategy`) or on ``cpu`` (the numpy kernels of
:mod:`.ops`), and why. :func:`compile_llvm` moves every CPU node that maps onto topi to
``llvm``; the compiler calls it, and so does loading a model file (JIT functions are not
serialised).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..targets.vdla.top.strategy import AluChain
from .ir import Graph, Node

__all__ = ["Kernel", "compile_llvm", "count_macs"]


@dataclass
class Kernel:
    """How one node runs: ``target`` "vdla" (``func`` indexes the model's functions), "llvm"
    (``llvm`` is the JIT-built host function; rebuilt on load) or "cpu" (numpy;
    ``cpu_reason`` says why it is not on llvm)."""

    node: str
    target: str
    reason: str = ""
    func: int | None = None
    chain: AluChain | None = None
    bias_packed: np.ndarray | None = None
    macs: int = 0
    cpu_reason: str = ""
    llvm: Any = field(default=None, repr=False, compare=False)
    #: per-channel SHR amounts, packed as the bias (kernels with a ``shrv`` in their chain)
    shifts_packed: np.ndarray | None = None

    @property
    def record_reason(self) -> str:
        """The reason shown per layer: the partition's or VDLA fallback's, then numpy's."""
        extra = f"numpy: {self.cpu_reason}" if self.target == "cpu" and self.cpu_reason else ""
        return "; ".join(r for r in (self.reason, extra) if r)


def count_macs(node: Node, graph: Graph) -> int:
    body = node.attrs.get("body") if node.op == "fused" else None
    g = body if isinstance(body, Graph) else graph
    n = body.topo_order()[0] if isinstance(body, Graph) else node
    if n.op not in ("conv2d", "conv2d_packed", "dense", "dense_packed", "conv2d_transpose", "conv2d_transpose_packed",
                    "matmul"):
        return 0
    w = g.type_of(n.inputs[1]).shape
    o = n.type.shape if n.type else ()
    if n.op == "conv2d_packed":  # grouped convs merged into whole blocks, spread (dilated) kernels: the real MACs
        real, spread = n.notes.get("taps", (1, 1))
        return int(np.prod(o)) * w[1] * w[2] * w[3] * w[5] * real // spread // int(n.notes.get("group_merge", 1))
    if n.op == "dense_packed":
        return int(np.prod(o)) * w[1] * w[3]
    if n.op == "conv2d_transpose_packed":  # the phase sub-kernels' taps
        return int(np.prod(o)) * w[3] * w[4] * w[5] * w[7]
    if n.op == "conv2d":
        return int(np.prod(o)) * w[1] * w[2] * w[3]
    if n.op == "conv2d_transpose":
        return int(np.prod(g.type_of(n.inputs[0]).shape)) * w[1] * w[2] * w[3]
    if n.op == "matmul":  # [..., K, M]: K products per output
        return int(np.prod(o)) * w[-2]
    return int(np.prod(o)) * w[1]


def compile_llvm(graph: Graph, kernels: Mapping[str, Kernel], *, llvm: bool = True) -> float:
    """Put every ``cpu`` node that maps onto topi on the ``llvm`` target (one build per
    signature); the rest keep numpy with ``cpu_reason`` set. Returns the seconds spent."""
    from ..targets.llvm.strategy import LlvmCache

    t0 = time.perf_counter()
    cache = LlvmCache()
    for n in graph.topo_order():
        k = kernels[n.name]
        if k.target != "cpu":
            continue
        if not llvm:
            k.cpu_reason = "llvm disabled"
            continue
        built = cache.get(n, graph)
        if isinstance(built, str):
            k.cpu_reason = built
        else:
            k.target, k.llvm, k.cpu_reason = "llvm", built, ""
    return time.perf_counter() - t0
