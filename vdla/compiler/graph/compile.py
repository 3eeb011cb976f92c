"""Compiling a prepared graph (see :func:`.passes.prepare`): a kernel per node.

Every ``vdla`` node becomes a VDLA kernel through the target's strategy
(:mod:`vdla.compiler.targets.vdla.top.strategy`), shared between nodes of equal shape and
tail, or falls back to the CPU with the reason recorded; CPU nodes go on ``llvm`` where
they map onto topi (:func:`.kernels.compile_llvm`), else numpy.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from ...config import Config
from ..autotvm.dispatch import tuning_active, untuned
from ..targets.vdla.packing import pack_bias
from ..targets.vdla.top.strategy import alu_chain, build_kernel
from ..targets.vdla.top.tuning import HAND_VTHREADS
from .ir import Graph
from .kernels import Kernel, compile_llvm, count_macs
from .model import CompiledModel

__all__ = ["compile_model"]


def compile_model(
    graph: Graph,
    config: Config | None = None,
    *,
    vthreads: int = HAND_VTHREADS,
    llvm: bool = True,
    progress: Callable[[str], None] | None = None,
) -> CompiledModel:
    """Compile every ``vdla`` node of a prepared graph (see :func:`.passes.prepare`) into a
    VDLA kernel (shared between nodes of equal shape and tail); other nodes run on the CPU:
    built for ``llvm`` where they map onto topi (see :func:`compile_llvm`; ``llvm=False``
    keeps them all on numpy), else numpy."""
    from ..targets.vdla.env import VDLAError

    cfg = config or Config()
    g = graph.copy().infer_types()
    kernels: dict[str, Kernel] = {}
    functions: list[Any] = []
    cache: dict[tuple, int] = {}
    t0 = time.perf_counter()
    order = g.topo_order()
    # First the chains (cheap), so that the counter runs over the distinct kernels actually
    # compiled: nodes of equal shape and tail share one, and fallbacks compile nothing.
    chains: dict[str, Any] = {}
    for n in order:
        macs = count_macs(n, g)
        if n.target != "vdla":
            kernels[n.name] = Kernel(n.name, "cpu", n.notes.get("reason", ""), macs=macs)
            continue
        ch = alu_chain(n, g)
        if isinstance(ch, str):
            kernels[n.name] = Kernel(n.name, "cpu", f"fallback: {ch}", macs=macs)
            continue
        if ch.bias is not None:
            blk = g.type_of(n.name).shape[-1]
            if ch.bias.size % blk:
                kernels[n.name] = Kernel(n.name, "cpu", "fallback: bias does not fill the blocks", macs=macs)
                continue
        chains[n.name] = (ch, ch.key(g), macs)
    distinct = len({key for _, key, _ in chains.values()})
    failed: dict[tuple, str] = {}
    for n in order:
        if n.name not in chains:
            continue
        ch, key, macs = chains[n.name]
        if key not in cache and key not in failed:
            if progress:
                progress(f"compiling kernel {len(cache) + len(failed) + 1}/{distinct}: {n.name} "
                         f"({n.attrs.get('pattern', n.op)})")
            func = None
            err = ""
            # a tuned point (apply_history_best) first; when it does not build here, the hand picks
            for hand in (False, True) if tuning_active() else (True,):
                with untuned() if hand else nullcontext():
                    for vt in dict.fromkeys((vthreads, 1)):
                        try:
                            func = build_kernel(ch, g, cfg, vt, n.name.replace(".", "_"))
                            break
                        except VDLAError as e:
                            err = str(e)
                if func is not None:
                    if hand and tuning_active():
                        warnings.warn(f"{n.name}: the tuned schedule does not build ({err}); built the hand-picked "
                                      "one", stacklevel=2)
                    break
            if func is None:
                failed[key] = err
            else:
                cache[key] = len(functions)
                functions.append(func)
        if key in failed:
            kernels[n.name] = Kernel(n.name, "cpu", f"fallback: {failed[key]}", macs=macs)
            continue
        bias = None if ch.bias is None else pack_bias(ch.bias, cfg.batch, g.type_of(n.name).shape[-1])
        kernels[n.name] = Kernel(n.name, "vdla", "", cache[key], ch, bias, macs)
        if ch.shifts is not None:
            kernels[n.name].shifts_packed = pack_bias(ch.shifts, cfg.batch, g.type_of(n.name).shape[-1])
    kernels = {n.name: kernels[n.name] for n in order}  # topological order, as the table lists them
    info = {"compile_s": time.perf_counter() - t0, "kernels": len(functions)}
    info["llvm_compile_s"] = compile_llvm(g, kernels, llvm=llvm)
    info["compile_s"] = time.perf_counter() - t0
    return CompiledModel(g, cfg, kernels, functions, info)
