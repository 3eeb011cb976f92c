"""The VDLA target: ``vdla.build(s, args, target="vdla", config=...)``.

Pipeline (after the core's schedule_ops / storage_flatten / simplify)::

    phase 1  inject_alu   pragma alu     -> ALU micro-op kernels (in place on the accumulator)
             inject_dma   pragma dma_copy-> 2D LOAD/STORE with padding
             inject_gemm  tensorized GEMM and accumulator init -> GEMM kernels (<= 2 folded loops)
    core     vectorize, inject_virtual_thread (cthread: buffers per thread, tasks interleaved), unroll
    codegen  host code -> tasks -> dependency tokens (sync) -> CommandStream -> Program

Modules: env (scopes, GEMM intrinsic from a Config), passes (the phase-1 pass list),
one module per lowering pass (dma, alu, gemm; kernel holds the micro-op kernel spec,
util the loop helpers they share), sync (dependency tokens), codegen (tasks ->
CommandStream -> Program), module (the built function and its file format), packing
(host packing of every layout), top/ (one module per operator template, their numpy
references, and the strategy that turns a fused graph node into a kernel) and
resnet (the ResNet-18 convolution layer table). The driver (:mod:`vdla.compiler.driver`) runs them; ``lower``/``build``
here are VTA's ``vta.lower``/``vta.build``: the driver's with ``target="vdla"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....config import Config
from ...tir.nodes import PrimFunc
from .env import ACC_SCOPE, ALU, DMA_COPY, INP_SCOPE, WGT_SCOPE, Env, VDLAError, get_env, shift_left, shift_right
from .module import ArgLayout, VDLAFunction
from .sync import check_tokens

__all__ = [
    "lower", "build", "get_env", "Env", "VDLAError", "VDLAFunction", "ArgLayout", "check_tokens", "shift_right",
    "shift_left", "INP_SCOPE", "WGT_SCOPE", "ACC_SCOPE", "DMA_COPY", "ALU",
]


def lower(sch: Any, args: Sequence[Any], name: str = "main", config: Config | str | None = None,
          print_passes: bool = False) -> PrimFunc:
    """``vdla.lower(sch, args, target="vdla", config=config)``: the IR shows the VDLA intrinsics and micro-op kernels."""
    from ...driver import lower as driver_lower  # the driver imports this package's modules: import it when called

    return driver_lower(sch, args, name=name, print_passes=print_passes, target="vdla", config=config)


def build(sch: Any, args: Sequence[Any] | None = None, name: str = "main",
          config: Config | str | None = None) -> VDLAFunction:
    """``vdla.build(sch, args, target="vdla", config=config)``: a :class:`VDLAFunction` (call it as ``f(dev, *arrays)``)."""
    from ...driver import build as driver_build

    return driver_build(sch, args, target="vdla", name=name, config=config)
