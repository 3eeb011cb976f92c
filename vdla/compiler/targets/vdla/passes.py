"""The accelerator's lowering passes, in the order the driver runs them.

They run at phase 1 of :func:`vdla.compiler.driver.lower` (after storage flattening,
before vectorisation and virtual threads, as in VTA): ALU pragmas become micro-op
kernels, DMA pragmas 2D loads/stores, tensorized GEMMs GEMM kernels. Each pass is
bound to the Config it lowers for.
"""

from __future__ import annotations

from collections.abc import Callable

from ....config import Config, preset
from ...tir.nodes import Stmt
from .alu import inject_alu
from .dma import inject_dma
from .gemm import inject_gemm


def resolve_config(config: Config | str | None) -> Config:
    """The Config a vdla build targets: the default one, a preset by name, or as given."""
    if config is None:
        return Config()
    return preset(config) if isinstance(config, str) else config


def phase1_passes(cfg: Config) -> list[Callable[[Stmt], Stmt]]:
    """ALU, DMA and GEMM lowering for ``cfg`` (the names show in ``print_passes``)."""

    def vdla_alu(s: Stmt) -> Stmt:
        return inject_alu(s, cfg)

    def vdla_dma(s: Stmt) -> Stmt:
        return inject_dma(s, cfg)

    def vdla_gemm(s: Stmt) -> Stmt:
        return inject_gemm(s, cfg)

    return [vdla_alu, vdla_dma, vdla_gemm]
