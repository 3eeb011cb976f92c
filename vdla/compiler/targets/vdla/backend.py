"""The accelerator's back end as the driver sees it (:class:`vdla.compiler.targets.Backend`).

``config=`` names the accelerator (a :class:`~vdla.config.Config`, a preset's name, or None
for the default); lowering runs the ALU, DMA and GEMM passes for it (:mod:`.passes`) and the
lowered function carries it; :func:`build_function` generates its program (:mod:`.module`).
"""

from __future__ import annotations

from typing import Any

from ....config import Config
from ...tir.nodes import PrimFunc
from .. import Pass
from ..target import Target
from . import passes
from .module import VDLAFunction
from .module import build_function as _build

__all__ = ["resolve_config", "phase1_passes", "lower_attrs", "build_function"]


def resolve_config(target: Target, config: Config | str | None) -> Config:
    """The Config a vdla build targets: the default one, a preset by name, or as given."""
    return passes.resolve_config(config)


def phase1_passes(target: Target, config: Config) -> list[Pass]:
    """ALU, DMA and GEMM lowering for the Config (:func:`resolve_config`'s)."""
    return passes.phase1_passes(config)


def lower_attrs(target: Target, config: Config) -> dict[str, Any]:
    return {"target": "vdla", "config": config}


def build_function(func: PrimFunc, target: Target, opt_level: int, config: Config | None = None,
                   lower_s: float = 0.0) -> VDLAFunction:  # fmt: skip
    """The accelerator's program for ``func`` (lowered for the same Config; the default one when None)."""
    return _build(func, passes.resolve_config(config), lower_s=lower_s)
