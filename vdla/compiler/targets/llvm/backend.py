"""The CPU back end as the driver sees it (:class:`vdla.compiler.targets.Backend`).

Lowering adds nothing of its own; :func:`build_function` resolves the target's triple, CPU and
features (:func:`.target.llvm_options`) and JIT-compiles for the host or cross-compiles
(:func:`.module.build_function`).
"""

from __future__ import annotations

from typing import Any

from ...tir.nodes import PrimFunc
from .. import no_attrs, no_config, no_passes
from ..target import Target
from .module import BuiltFunction
from .module import build_function as _build
from .target import CrossModule, llvm_options

__all__ = ["resolve_config", "phase1_passes", "lower_attrs", "build_function"]

resolve_config = no_config
phase1_passes = no_passes
lower_attrs = no_attrs


def build_function(func: PrimFunc, target: Target, opt_level: int, config: Any = None,
                   lower_s: float = 0.0) -> BuiltFunction | CrossModule:  # fmt: skip
    """A :class:`BuiltFunction` (the host, JIT) or a :class:`CrossModule` (another CPU)."""
    return _build(func, llvm_options(target), opt_level)
