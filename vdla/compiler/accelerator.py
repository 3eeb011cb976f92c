"""``lower``/``build`` for the VDLA accelerator with a Config: the driver's with ``target="vdla"``.

    from vdla.compiler.accelerator import build
    f = build(s, [A, B, C], config=cfg)      # = vdla.build(s, [A, B, C], target="vdla", config=cfg)

(Once ``vdla.compiler.targets.vdla.lower``/``build``; the target folders sit below the driver.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config import Config
from .driver import build as _build
from .driver import lower as _lower
from .targets.vdla.module import VDLAFunction
from .tir.nodes import PrimFunc

__all__ = ["lower", "build"]


def lower(sch: Any, args: Sequence[Any], name: str = "main", config: Config | str | None = None,
          print_passes: bool = False) -> PrimFunc:
    """``vdla.lower(sch, args, target="vdla", config=config)``: the IR shows the VDLA intrinsics and micro-op kernels."""
    return _lower(sch, args, name=name, print_passes=print_passes, target="vdla", config=config)


def build(sch: Any, args: Sequence[Any] | None = None, name: str = "main",
          config: Config | str | None = None) -> VDLAFunction:
    """``vdla.build(sch, args, target="vdla", config=config)``: a :class:`VDLAFunction` (call it as ``f(dev, *arrays)``)."""
    result: VDLAFunction = _build(sch, args, target="vdla", name=name, config=config)
    return result
