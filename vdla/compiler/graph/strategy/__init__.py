"""Strategies: which operator each graph node becomes on each target, decided here once.

:data:`STRATEGIES` is the one table, keyed by target kind:

=======  ==========================================================================
kind     a node becomes
=======  ==========================================================================
llvm     topi operators (:mod:`.topi_ops`) with the CPU schedules; ``lstm_scan`` /
         ``gru_scan`` a TE scan (:mod:`.scan`)
cuda     the same topi operators with the GPU schedules
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

from ...driver import build
from ...targets.target import Target, TargetError
from ..ir import Graph, Node
from . import scan
from .kernel import BuiltKernel, KernelCache
from .topi_ops import arg_order, declare, schedule, signature

__all__ = ["STRATEGIES", "BuiltKernel", "KernelCache", "lower", "kernel_cache", "kind_of", "VIEW_OPS"]

#: ops whose output is their input's memory with a new shape: a view on every target (no kernel, no copy)
VIEW_OPS = ("flatten", "reshape")


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
