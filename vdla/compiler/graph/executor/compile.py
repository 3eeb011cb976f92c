"""Compiling a graph into a plan: a step per node, for any target.

``compile_model(graph, config)`` (target ``vdla``) takes a prepared int8 graph (see
:func:`..passes.prepare`): every node the partition placed on ``vdla`` becomes a VDLA
kernel through the VDLA strategy (:mod:`..strategy.vdla`), shared between nodes of equal
shape and tail, or falls back to the CPU with the reason recorded; the CPU side is placed
on ``llvm`` (:func:`.place.place`: views, llvm kernels, else the host's numpy kernels).

``compile_model(graph, target="llvm" | "cuda -arch=sm_90")`` takes a float32 graph,
simplifies and fuses it (the passes every target shares; on llvm the convolutions move to the
packed NCHW[x]c layout in between, :func:`..cpu_layout.to_nchwc`; on cuda a convolution whose
tuned Winograd or 1x1-GEMM record beats its direct one's is rewritten onto that implementation,
:func:`..strategy.cuda.select_implementations`) and places every node on that target the same
way. A model may mix targets: the runner (:mod:`.run`) keeps each value on the device that made it.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from ....config import Config
from ...autotvm.dispatch import tuning_active, untuned
from ...targets.target import Target
from ...targets.vdla.packing import pack_bias, pack_window_weight
from ...targets.vdla.top.tuning import HAND_VTHREADS
from ..cpu_layout import to_nchwc
from ..fuse import fuse
from ..ir import Graph
from ..passes import simplify
from ..strategy import kind_of
from ..strategy.cuda import select_implementations
from ..strategy.kernel import kernel_name
from ..strategy.vdla import alu_chain, build_kernel
from .place import place
from .plan import Step, count_macs, plan_placement, require_device
from .run import CompiledModel

__all__ = ["compile_model"]


def compile_model(
    graph: Graph,
    config: Config | None = None,
    *,
    target: str | Target = "vdla",
    vthreads: int = HAND_VTHREADS,
    llvm: bool = True,
    progress: Callable[[str], None] | None = None,
    host_ops: bool = True,
) -> CompiledModel:
    """Compile ``graph`` for ``target`` (see the module doc).

    ``vdla``: every ``vdla`` node of a prepared graph (see :func:`..passes.prepare`) into a
    VDLA kernel (shared between nodes of equal shape and tail); other nodes run on the CPU:
    built for ``llvm`` where they map onto topi (``llvm=False`` keeps them on numpy), else
    numpy. ``llvm`` / ``cuda``: every node of a float32 graph on that target where the
    strategy maps it. ``host_ops=False``: a node left on the host's numpy kernels is an error
    (:class:`.plan.HostStepError` naming each such node, its op and why), not a host step."""
    kind = kind_of(target)
    if kind != "vdla":
        if config is not None:
            raise ValueError(f"compile_model: config= applies to target 'vdla', not {str(target)!r}")
        m = _compile_float(graph, target, progress)
    else:
        m = _compile_vdla(graph, config, vthreads, llvm, progress)
    if not host_ops:
        require_device(m.summary(), m.target)
    return m


def _compile_float(graph: Graph, target: str | Target, progress: Callable[[str], None] | None) -> CompiledModel:
    t0 = time.perf_counter()
    g = simplify(graph)
    if kind_of(target) == "llvm":  # the CPU's packed layout: NCHW[x]c convolutions, blocks per layer
        g = to_nchwc(g)
    elif kind_of(target) == "cuda":  # each conv on its fastest tuned implementation (direct without a log)
        g = select_implementations(g)
    g = fuse(g)
    kernels = {n.name: Step(n.name, "host", _implementation(n), macs=count_macs(n, g)) for n in g.topo_order()}
    if progress:
        progress(f"compiling {len(kernels)} nodes for {target}")
    place(g, kernels, target)
    info = {"compile_s": time.perf_counter() - t0, "kernels": 0}
    return CompiledModel(g, None, kernels, [], info, target=str(target))


def _implementation(n: Any) -> str:
    """Why a float node runs another implementation than its op's default (the cuda strategy's
    choice by tuned cost, on its anchor), else ""."""
    body = n.attrs.get("body") if n.op == "fused" else None
    anchor = body.topo_order()[0] if body is not None else n
    return str(anchor.notes.get("reason", "")) if "implementation" in anchor.notes else ""


def _compile_vdla(graph: Graph, config: Config | None, vthreads: int, llvm: bool,
                  progress: Callable[[str], None] | None) -> CompiledModel:
    from ...targets.vdla.env import VDLAError

    cfg = config or Config()
    g = graph.copy().infer_types()
    kernels: dict[str, Step] = {}
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
            kernels[n.name] = Step(n.name, "host", n.notes.get("reason", ""), macs=macs)
            continue
        ch = alu_chain(n, g)
        if isinstance(ch, str):
            kernels[n.name] = Step(n.name, "host", f"fallback: {ch}", macs=macs)
            continue
        if ch.bias is not None:
            blk = g.type_of(n.name).shape[-1]
            if ch.bias.size % blk:
                kernels[n.name] = Step(n.name, "host", "fallback: bias does not fill the blocks", macs=macs)
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
                            func = build_kernel(ch, g, cfg, vt, kernel_name(n.name))
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
            kernels[n.name] = Step(n.name, "host", f"fallback: {failed[key]}", macs=macs)
            continue
        bias = None if ch.bias is None else pack_bias(ch.bias, cfg.batch, g.type_of(n.name).shape[-1])
        kernels[n.name] = Step(n.name, "vdla", "", cache[key], ch, bias, macs)
        if ch.shifts is not None:
            kernels[n.name].shifts_packed = pack_bias(ch.shifts, cfg.batch, g.type_of(n.name).shape[-1])
        info = functions[cache[key]].info
        if info.get("weight_layout") == "window":
            kernels[n.name].weight_packed = pack_window_weight(g.consts[ch.weight], cfg.block_in,
                                                               int(info.get("window_rows", 0)))
    kernels = {n.name: kernels[n.name] for n in order}  # topological order, as the table lists them
    info = {"compile_s": time.perf_counter() - t0, "kernels": len(functions)}
    info["llvm_compile_s"] = place(g, kernels, "llvm", build=llvm)
    plan_placement(g, kernels)  # concats of packed blocks: stored in place by their producers
    info["compile_s"] = time.perf_counter() - t0
    return CompiledModel(g, cfg, kernels, functions, info)
