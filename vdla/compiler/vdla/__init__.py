"""The VDLA back end: ``vdla.build(s, args, target="vdla", config=...)``.

Pipeline (after the core's schedule_ops / storage_flatten / simplify)::

    phase 1  inject_alu   pragma alu     -> ALU micro-op kernels (in place on the accumulator)
             inject_dma   pragma dma_copy-> 2D LOAD/STORE with padding
             inject_gemm  tensorized GEMM and accumulator init -> GEMM kernels (<= 2 folded loops)
    core     vectorize, inject_virtual_thread (cthread: buffers per thread, tasks interleaved), unroll
    codegen  host code -> tasks -> dependency tokens (sync) -> CommandStream -> Program

Modules: env (scopes, GEMM intrinsic from a Config), dma, alu, gemm, kernel, sync,
codegen, module (the built function), topi (packed dense/conv2d templates),
topi_ext (conv2d_transpose and grouped conv2d templates).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ...config import Config, preset
from .. import fingerprint
from ..ir import Buffer, PrimFunc
from ..visitor import walk
from .alu import inject_alu
from .codegen import generate
from .dma import inject_dma
from .env import ACC_SCOPE, ALU, DMA_COPY, INP_SCOPE, WGT_SCOPE, Env, VDLAError, get_env, shift_left, shift_right
from .gemm import inject_gemm
from .module import ArgLayout, VDLAFunction
from .sync import check_tokens

__all__ = [
    "lower", "build", "get_env", "Env", "VDLAError", "VDLAFunction", "check_tokens", "shift_right", "shift_left",
    "INP_SCOPE", "WGT_SCOPE", "ACC_SCOPE", "DMA_COPY", "ALU",
]


def _config(config: Config | str | None) -> Config:
    if config is None:
        return Config()
    return preset(config) if isinstance(config, str) else config


def lower(sch: Any, args: Sequence[Any], name: str = "main", config: Config | str | None = None,
          print_passes: bool = False) -> PrimFunc:
    """Lower a schedule for VDLA: the IR shows the VDLA intrinsics and micro-op kernels."""
    from ..lower import lower as core_lower

    cfg = _config(config)

    def vdla_alu(s: Any) -> Any:
        return inject_alu(s, cfg)

    def vdla_dma(s: Any) -> Any:
        return inject_dma(s, cfg)

    def vdla_gemm(s: Any) -> Any:
        return inject_gemm(s, cfg)

    func = core_lower(sch, args, name=name, print_passes=print_passes, phase1_passes=[vdla_alu, vdla_dma, vdla_gemm])
    func.attrs["target"] = "vdla"
    func.attrs["config"] = cfg
    return func


def build(sch: Any, args: Sequence[Any] | None = None, name: str = "main", config: Config | str | None = None) -> VDLAFunction:
    """Compile for VDLA; returns a :class:`VDLAFunction` (call it as ``f(dev, *arrays)``)."""
    cfg = _config(config)
    t0 = time.perf_counter()
    if isinstance(sch, PrimFunc):
        func = sch
    else:
        if args is None:
            raise ValueError("build(schedule, args): args (the tensors, in call order) are required")
        func = lower(sch, args, name=name, config=cfg)
    t1 = time.perf_counter()
    gen = generate(func, cfg)
    written = _stored(func)
    layouts = []
    for p in func.params:
        assert isinstance(p, Buffer)
        shape = tuple(int(getattr(s, "value", s)) for s in p.shape)
        layouts.append(ArgLayout(p.name, shape, p.dtype, p in written))
    t2 = time.perf_counter()
    info = {
        "lower_s": t1 - t0, "codegen_s": t2 - t1, "tasks": gen.tasks, "host_source": gen.host_source,
        **{f"tokens_{q}": n for q, n in gen.tokens.counts.items()},
    }
    f = VDLAFunction(func.name, gen.program, layouts, gen.relocs, func, info)
    fingerprint.record("vdla", func.name, gen.program.to_bytes() + repr((gen.relocs, layouts)).encode())
    rep = check_tokens(gen.program)
    if not rep.ok:  # pragma: no cover - plan_tokens is balanced by construction
        raise VDLAError(f"internal error: unbalanced dependency tokens\n{rep}")
    return f


def _stored(func: PrimFunc) -> set[Buffer]:
    from ..ir import CallExtern

    out: set[Buffer] = set()
    for n in walk(func.body):
        if isinstance(n, CallExtern) and n.name == "VDLAStoreBuffer2D":
            out.add(n.args[1].value.buffer)
    return out
