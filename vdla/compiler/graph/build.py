"""Compiling a model of the zoo onto VDLA: quantise, partition, pack, fuse, compile.

:func:`build_model` runs :func:`.passes.prepare` on a :class:`~.zoo.ModelSpec` (calibrating
on synthetic inputs, or the spec's own) and :func:`.executor.compile_model`, and records
where the model came from in the compiled model's ``info`` (kept in its file, so a loaded
model can be checked against its float source).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ...config import Config
from . import models, passes
from .executor import CompiledModel, compile_model
from .zoo import ModelSpec

__all__ = ["build_model"]

Progress = Callable[[str], None]


def build_model(spec: ModelSpec, config: Config, *, calib: int = 1, seed: int = 100,
                progress: Progress | None = None, host_ops: bool = True) -> CompiledModel:
    """Quantise (calibrating on ``calib`` synthetic inputs), partition, pack, fuse, compile
    (``host_ops=False``: a node left on the host's numpy kernels is an error)."""
    t0 = time.perf_counter()
    if progress:
        progress(f"preparing {spec.description}: fold, quantise, partition, pack, fuse")
    if spec.qdq:
        from .quantize import qdq_to_int

        g = passes.prepare(qdq_to_int(passes.simplify(spec.graph)), None, config, policy=spec.policy)
    else:
        cal = spec.calibration or models.sample_input(spec.graph, seed, count=calib)
        g = passes.prepare(spec.graph, cal, config, spec.qconfig, spec.policy)
    t1 = time.perf_counter()
    m = compile_model(g, config, progress=progress, host_ops=host_ops)
    m.info.update({k: v for k, v in spec.source.items()})
    m.info.update({"prepare_s": t1 - t0, "description": spec.description, "name": spec.name})
    return m
