"""Targets: one folder each, holding its code generator, its runtime glue and its schedules.

``llvm/`` compiles the loop IR for CPUs through llvmlite (the host by JIT, others ahead
of time); ``cuda/`` emits PTX for NVIDIA GPUs; ``vdla/`` lowers it onto the accelerator's
instructions and micro-ops. :mod:`.target` parses every target (:class:`~.target.Target`).

:data:`BACKENDS` maps a back end (``Target.backend``) to the module the driver
(:mod:`vdla.compiler.driver`) compiles through, imported on first use. Each such module
(``<folder>/backend.py``) has the :class:`Backend` functions; adding a target is adding a
folder, its kinds in :data:`.target.KINDS` and :data:`.target.OPTIONS`, and one line here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from .target import Target

if TYPE_CHECKING:
    from ..tir.nodes import PrimFunc, Stmt

__all__ = ["BACKENDS", "Backend", "Pass", "backend", "no_config", "no_passes", "no_attrs"]

Pass = Callable[["Stmt"], "Stmt"]

#: back end -> the module that lowers and builds for it
BACKENDS: dict[str, str] = {
    "llvm": "vdla.compiler.targets.llvm.backend",
    "cuda": "vdla.compiler.targets.cuda.backend",
    "vdla": "vdla.compiler.targets.vdla.backend",
}


class Backend(Protocol):
    """What the driver asks a target's back end (the functions of its ``backend`` module)."""

    def resolve_config(self, target: Target, config: Any) -> Any:
        """The configuration ``config=`` names for this target (the accelerator's Config);
        ValueError where the target takes none."""

    def phase1_passes(self, target: Target, config: Any) -> list[Pass]:
        """The passes lowering runs after storage flattening, before vectorisation (``config``:
        what ``resolve_config`` returned, as for the functions below)."""

    def lower_attrs(self, target: Target, config: Any) -> dict[str, Any]:
        """Attributes the lowered function carries for the build."""

    def build_function(self, func: PrimFunc, target: Target, opt_level: int, config: Any = None,
                       lower_s: float = 0.0) -> Any:  # fmt: skip
        """The built function of a function lowered for ``target``."""


def backend(target: Target) -> Backend:
    """The back end that compiles for ``target`` (its module, imported on first use)."""
    return cast(Backend, importlib.import_module(BACKENDS[target.backend]))


def no_config(target: Target, config: Any) -> None:
    """``resolve_config`` of a target that takes no ``config=``."""
    if config is not None:
        raise ValueError(f"build: config= applies to target 'vdla', not {str(target)!r}")


def no_passes(target: Target, config: Any) -> list[Pass]:
    """``phase1_passes`` of a target whose lowering adds no passes of its own."""
    return []


def no_attrs(target: Target, config: Any) -> dict[str, Any]:
    """``lower_attrs`` of a target whose lowered functions carry nothing for the build."""
    return {}
