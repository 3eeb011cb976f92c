"""Strategies: which operator each graph node becomes on each target, decided here once.

:data:`STRATEGIES` is the one table, keyed by target kind:

=======  ==========================================================================
kind     a node becomes
=======  ==========================================================================
llvm     topi operators (:mod:`.topi_ops`) with the CPU schedules; ``lstm_scan`` /
         ``gru_scan`` a TE scan (:mod:`.scan`)
cuda     the same topi operators with the GPU schedules; a convolution whose tuned Winograd or
         1x1-GEMM record beats its direct one's is first rewritten onto that implementation
         (:func:`.cuda.select_implementations`, called by the executor's compile step)
vdla     one accelerator kernel: a packed GEMM anchor and its ALU tail (:mod:`.vdla`)
=======  ==========================================================================

:func:`lower` builds a node for ``llvm`` or ``cuda`` (or returns why it cannot: the executor
then runs it as a view or on the host, with that reason recorded); :func:`kernel_cache`
shares one function between nodes of equal signature. The VDLA strategy has its own entry
points (:func:`.vdla.alu_chain`, :func:`.vdla.build_kernel`): the executor's compile step
shares its kernels by chain, and falls back to the CPU strategy. Adding a target kind is a
row here and a code generator under :mod:`vdla.compiler.targets`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...driver import build
from ...targets.target import Target, TargetError
from ...topi.util import slice_range
from ..ir import Graph, Node
from . import scan
from .kernel import BuiltKernel, KernelCache
from .topi_ops import arg_order, declare, schedule, signature

__all__ = ["STRATEGIES", "BuiltKernel", "KernelCache", "lower", "kernel_cache", "kind_of", "VIEW_OPS", "view_offset"]

#: ops whose output is their input's memory with a new shape: a view on every target (no kernel, no copy)
VIEW_OPS = ("flatten", "reshape")
#: a GPU view must start where a vector load may (the cuda code generator assumes buffers 16-byte aligned)
_GPU_VIEW_ALIGN = 16


def view_offset(node: Node, graph: Graph, kind: str = "llvm") -> int | None:
    """The element offset at which ``node``'s output lies, contiguous and in order, in its input's
    memory (0 for the :data:`VIEW_OPS`), or None when it is not such a view. A ``slice`` (Split's
    parts too) or a ``take`` of one constant index is one where every axis it keeps more than one
    element of has step 1 and is whole below (an offset and a shape in the flat memory: a block of
    rows, one channel of a batch of one, ...). On a GPU the offset must keep the buffer aligned."""
    if node.op in VIEW_OPS:
        return 0
    if node.op not in ("slice", "take") or node.type is None:
        return None
    src = graph.type_of(node.inputs[0])
    shape, at = src.shape, node.attrs
    if node.op == "slice":
        ranges = [slice_range(b, e, s, d) for b, e, s, d in zip(at["begin"], at["end"], at["step"], shape)]
    else:  # one index along the axis, every other axis whole
        if len(at["indices"]) != 1:
            return None
        a = int(at["axis"]) % len(shape)
        k = int(at["indices"][0]) % shape[a]
        ranges = [range(k, k + 1) if d == a else range(n) for d, n in enumerate(shape)]
    if any(len(r) == 0 for r in ranges):
        return None
    offset, inner_in, inner_out = 0, 1, 1
    for r, d in zip(reversed(ranges), reversed(shape)):
        if len(r) > 1 and (r.step != 1 or inner_in != inner_out):
            return None
        offset += r.start * inner_in
        inner_in, inner_out = inner_in * d, inner_out * len(r)
    if kind == "cuda" and (offset * np.dtype(src.dtype).itemsize) % _GPU_VIEW_ALIGN:
        return None
    return offset


def _topi(node: Node, graph: Graph, target: Any, name: str) -> BuiltKernel | str:
    """Declare ``node`` with topi, schedule it with the target's schedules and build it."""
    kind = kind_of(target)
    decl = declare(node, graph)
    if isinstance(decl, str):
        return decl
    placeholders, args, out = decl
    try:
        sched = schedule(node, graph, out, kind)
        func = build(sched, placeholders + [out], target=target, name=name)
    except TargetError:  # the target itself is wrong (an unknown GPU architecture ...): no node builds
        raise
    except Exception as e:  # a schedule or codegen limit: the host runs it, with the reason shown
        return f"{kind} build failed: {type(e).__name__}: {e}"
    t = node.type
    assert t is not None
    return BuiltKernel(kind, func, args, tuple(t.shape), t.dtype)


#: target kind -> {op: builder} for the ops a kind builds its own way, and "*" for every other op.
#: The vdla row builds packed GEMM kernels through :mod:`.vdla` (the executor's compile step).
STRATEGIES: dict[str, dict[str, Callable[[Node, Graph, Any, str], BuiltKernel | str]]] = {
    "llvm": {"lstm_scan": scan.lstm, "gru_scan": scan.gru, "*": _topi},
    "cuda": {"*": _topi},
}


def kind_of(target: Any) -> str:
    """The target kind (``llvm``, ``cuda``, ``vdla``) of a target or its string."""
    return Target(target).backend


def lower(node: Node, graph: Graph, target: Any, name: str = "kernel") -> BuiltKernel | str:
    """Build ``node`` for ``target`` (llvm or cuda), or return why it cannot be."""
    kind = kind_of(target)
    table = STRATEGIES.get(kind)
    if table is None:
        return f"no {kind} strategy for single nodes (the {kind} target builds fused kernels)"
    return table.get(node.op, table["*"])(node, graph, target, name)


def kernel_cache(target: Any) -> KernelCache:
    """A cache building nodes for ``target``: one function per :func:`.topi_ops.signature`."""
    kind = kind_of(target)
    return KernelCache(lambda n, g, name: lower(n, g, target, name), signature, arg_order,
                       cache_failures=kind != "llvm")
