"""The VDLA target: ``vdla.build(s, args, target="vdla", config=...)``.

Pipeline (after the core's schedule_ops / storage_flatten / simplify)::

    phase 1  inject_alu   pragma alu     -> ALU micro-op kernels (in place on the accumulator)
             inject_dma   pragma dma_copy-> 2D LOAD/STORE with padding
             inject_gemm  tensorized GEMM and accumulator init -> GEMM kernels (<= 2 folded loops)
    core     vectorize, inject_virtual_thread (cthread: buffers per thread, tasks interleaved), unroll
    codegen  host code -> tasks -> requant tails into the GEMMs (fuse_tail: CFG epilogue, GEMM init)
             -> dependency tokens (sync) -> CommandStream -> Program

Modules: backend (what the driver calls), env (scopes, GEMM intrinsic from a Config), passes (the phase-1 pass list),
one module per lowering pass (dma, alu, gemm; kernel holds the micro-op kernel spec,
util the loop helpers they share), fuse_tail (ALU requantisation tails into the GEMMs), window
(a depthwise conv in CFG's window mode, lowered straight to tasks), sync
(dependency tokens), codegen (tasks ->
CommandStream -> Program), module (the built function and its file format), packing
(host packing of every layout), top/ (one module per operator template, their numpy
references, and the strategy that turns a fused graph node into a kernel) and
resnet (the ResNet-18 convolution layer table). The driver (:mod:`vdla.compiler.driver`) runs
them through :mod:`.backend`; VTA's ``vta.lower``/``vta.build`` with a Config are
:mod:`vdla.compiler.accelerator`'s.
"""

from __future__ import annotations

from ....compat.aliases import module_getattr
from .env import ACC_SCOPE, ALU, DMA_COPY, INP_SCOPE, WGT_SCOPE, Env, VDLAError, get_env, shift_left, shift_right
from .module import ArgLayout, VDLAFunction
from .sync import check_tokens

__all__ = [
    "get_env", "Env", "VDLAError", "VDLAFunction", "ArgLayout", "check_tokens", "shift_right",
    "shift_left", "INP_SCOPE", "WGT_SCOPE", "ACC_SCOPE", "DMA_COPY", "ALU",
]

__getattr__ = module_getattr(__name__)  # lower, build: now vdla.compiler.accelerator's, for one release
