"""The GPU back end as the driver sees it (:class:`vdla.compiler.targets.Backend`).

Lowering adds nothing of its own (the host/device split happens in the build);
:func:`build_function` reads the target's architecture and limits (:func:`.target.cuda_limits`)
and emits PTX (:func:`.module.build_function`).
"""

from __future__ import annotations

from typing import Any

from ...tir.nodes import PrimFunc
from .. import no_attrs, no_config, no_passes
from ..target import Target
from .module import CUDAModule
from .module import build_function as _build
from .target import cuda_limits

__all__ = ["resolve_config", "phase1_passes", "lower_attrs", "build_function"]

resolve_config = no_config
phase1_passes = no_passes
lower_attrs = no_attrs


def build_function(func: PrimFunc, target: Target, opt_level: int, config: Any = None,
                   lower_s: float = 0.0) -> CUDAModule:  # fmt: skip
    """The kernels of ``func`` as PTX for the target's architecture, in a :class:`CUDAModule`."""
    kinds = tuple(dict.fromkeys((target.kind.name, "cuda")))  # "nvptx" rules first for an nvptx target
    return _build(func, cuda_limits(target), opt_level, kinds)
