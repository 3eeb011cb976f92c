"""Float models on a target, and ``vdla run MODEL --compare``: one model on the CPU (llvm),
the GPU (cuda) and VDLA, measured in one run.

:func:`run_float` (``vdla run MODEL --target llvm|cuda``) compiles a float model for one
target through the graph executor, runs it on a synthetic input and checks the outputs
against the numpy fp32 reference.

:func:`compare` loads the model once (a built-in name or an .onnx file) and runs the same
synthetic input three ways, each through the one graph executor
(:func:`~.executor.compile_model`):

* **llvm** -- the float32 graph, simplified and fused, every node built for this CPU where
  the strategy maps it (views for flatten/reshape; else numpy on the host), timed on the
  host clock (the median of a few runs after a warm-up);
* **cuda** -- the same float32 graph compiled for the GPU, timed with CUDA events; with no
  GPU the row says "skipped: no CUDA device";
* **vdla** -- the int8 model through :func:`.job.run_job` on the golden simulator: the VDLA
  layers' cycles at the configuration's clock (``Config.clock_mhz``) plus the host time of
  the nodes left on the CPU, with every node checked against the int8 numpy reference.

The float rows are checked against the numpy fp32 reference; each row's latency is also
given relative to the llvm row. :meth:`Comparison.table` prints it, :meth:`Comparison.to_dict`
is the ``--json`` form.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...config import Config
from ..targets.cuda.target import for_device, for_present_device
from ..targets.target import Target, TargetError
from . import models
from .executor import CompiledModel, compile_model, is_model_file, require_device
from .ir import Graph, GraphError
from .job import run_job
from .reference import run as reference_run
from .zoo import load_model

__all__ = ["Row", "Comparison", "compare", "FloatJobResult", "run_float"]

#: float rows agree with the numpy fp32 reference to this relative error (of the output's largest magnitude)
FLOAT_TOLERANCE = 1e-3


@dataclass
class Row:
    """One target's result: ``seconds`` per inference (None when skipped), and how it was measured."""

    target: str
    precision: str
    where: str
    seconds: float | None
    timing: str
    ok: bool | None  # None: skipped
    detail: str
    nodes: str = ""
    #: the vdla row: the golden simulator's cycles of the VDLA layers, and the clock they are counted at
    cycles: int | None = None
    clock_mhz: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {"target": self.target, "precision": self.precision, "device": self.where, "latency_s": self.seconds,
             "timing": self.timing, "ok": self.ok, "detail": self.detail, "nodes": self.nodes}  # fmt: skip
        if self.cycles is not None:
            d.update(cycles=self.cycles, clock_mhz=self.clock_mhz)
        return d


@dataclass
class Comparison:
    model: str
    description: str
    rows: list[Row] = field(default_factory=list)

    def row(self, target: str) -> Row:
        return next(r for r in self.rows if r.target == target)

    @property
    def ok(self) -> bool:
        return all(r.ok is not False for r in self.rows)

    def relative(self, r: Row) -> float | None:
        """How many times faster than the llvm row (None when either was not measured)."""
        base = self.row("llvm").seconds
        return base / r.seconds if base and r.seconds else None

    def to_dict(self) -> dict[str, Any]:
        rows = [dict(r.to_dict(), speedup_vs_llvm=self.relative(r)) for r in self.rows]
        return {"model": self.model, "description": self.description, "rows": rows, "ok": self.ok}

    def table(self) -> str:
        lines = [f"vdla run {self.model} --compare: {self.description}", "",
                 f"{'target':<6} {'precision':<9} {'device':<34} {'latency':>11} {'speedup':>8}  {'check':<5} detail"]  # fmt: skip
        for r in self.rows:
            lat = _fmt(r.seconds) if r.seconds is not None else "-"
            rel = self.relative(r)
            check = "PASS" if r.ok else ("-" if r.ok is None else "FAIL")
            lines.append(f"{r.target:<6} {r.precision:<9} {r.where[:34]:<34} {lat:>11} "
                         f"{f'{rel:.2f}x' if rel else '-':>8}  {check:<5} {r.detail}")  # fmt: skip
        lines.append("")
        lines.append("speedup: the llvm row's latency / the row's (same model, same input)")
        for r in self.rows:
            if r.seconds is not None:
                lines.append(f"{r.target}: {r.timing}" + (f"; {r.nodes}" if r.nodes else ""))
        lines.append(f"result: {'PASS' if self.ok else 'FAIL'}")
        return "\n".join(lines)


def _fmt(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} us"


def _rel_err(outs: list[np.ndarray], ref: list[np.ndarray]) -> float:
    return max(float(np.abs(np.asarray(a, np.float64) - b).max() / max(float(np.abs(b).max()), 1e-6))
               for a, b in zip(outs, ref, strict=True))  # fmt: skip


def _median_time(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm-up: first-call costs (page faults, lazy loads) are not the model's
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def llvm_row(graph: Graph, x: dict[str, np.ndarray], ref: list[np.ndarray], repeat: int = 5) -> Row:
    """The float32 graph on this CPU: every node built for llvm where the strategy maps it."""
    import platform

    m = compile_model(graph, target="llvm")

    def run() -> list[np.ndarray]:
        return m.run(x).outputs

    err = _rel_err(run(), ref)
    on = sum(k.target == "llvm" for k in m.kernels.values())
    cpu = platform.processor() or platform.machine()
    return Row("llvm", "float32", f"this CPU ({cpu})", _median_time(run, repeat),
               f"host clock, median of {repeat} runs after a warm-up", err <= FLOAT_TOLERANCE,
               f"vs numpy fp32: max rel err {err:.1e}", f"{on} of {len(m.kernels)} nodes built for llvm")  # fmt: skip


def _gpu_target(target: str | Target) -> tuple[Any, str]:
    """GPU 0 and ``target`` with its architecture (``-arch`` of the GPU present unless given)."""
    from ...runtime.cuda_driver import get_device

    dev = get_device(0)
    return dev, str(for_device(target, dev.arch))


def cuda_row(graph: Graph, x: dict[str, np.ndarray], ref: list[np.ndarray], target: str = "cuda",
             repeat: int = 5) -> Row:  # fmt: skip
    """The float32 graph on GPU 0 (a skipped row without one), timed with CUDA events."""
    from ...runtime.cuda_driver import device_count, to_device

    if device_count() == 0:
        return Row("cuda", "float32", "-", None, "", None, "skipped: no CUDA device")
    dev, tgt = _gpu_target(target)
    m = compile_model(graph, target=tgt)
    xd = {k: to_device(np.ascontiguousarray(v)) for k, v in x.items()}  # the input is on the GPU already
    err = _rel_err(m.run(xd).outputs, ref)
    seconds = dev.time(lambda: m.run(xd, sync=False), repeat)
    on = sum(k.target == "cuda" for k in m.kernels.values())
    return Row("cuda", "float32", f"{dev.name} ({dev.arch})", seconds,
               f"CUDA events, mean of {repeat} runs after a warm-up (outputs copied back)", err <= FLOAT_TOLERANCE,
               f"vs numpy fp32: max rel err {err:.1e}", f"{on} of {len(m.kernels)} nodes on the GPU")  # fmt: skip


@dataclass
class FloatJobResult:
    """A float model run once on a target and checked against the numpy fp32 reference."""

    name: str
    model: CompiledModel
    max_err: float
    run_s: float
    layers: list[Any] = field(default_factory=list)
    #: values copied between the host and the GPU in the run (the input, outputs, host steps' operands)
    copies: int = 0

    @property
    def ok(self) -> bool:
        return self.max_err <= FLOAT_TOLERANCE

    def table(self) -> str:
        verdict = "ok" if self.ok else "MISMATCH"
        return (f"{self.name} on {self.model.target}\n{self.model.table(self.layers)}\n"
                f"outputs vs numpy fp32 reference: max |err| {self.max_err:.1e} ({verdict}); run {self.run_s:.3f} s"
                + (f", {self.copies} host<->GPU copies" if self.copies else ""))


def run_float(model: str, target: str | Target = "cuda", *, reduced: bool = False, size: int | None = None,
              seed: int = 0, progress: Callable[[str], None] | None = None, host_ops: bool = True) -> FloatJobResult:
    """Compile ``model`` (built-in name or .onnx) for ``target`` (llvm or cuda), run it on a
    synthetic input and check it. A cuda model compiles anywhere (PTX); running it needs a GPU
    (:class:`~vdla.runtime.cuda_driver.NoCudaDevice` without one, after compiling). A cuda target
    without ``-arch`` is built for the GPU present (:func:`~vdla.compiler.targets.cuda.target.for_present_device`;
    sm_80 without one). ``host_ops=False``: a node left on the host is an error
    (:class:`.executor.HostStepError`), raised before running."""
    kind = Target(target).backend
    if kind not in ("llvm", "cuda"):
        raise TargetError(f"float models run on 'llvm' or 'cuda' (-arch=sm_80|sm_90), not {kind!r}; without a "
                          "target they run on the VDLA device")
    if is_model_file(model):  # `vdla build MODEL --target ... -o FILE`: its plan, the functions built again
        m = CompiledModel.load(model)
        if Target(m.target).backend != kind:
            raise TargetError(f"{model} was compiled for {m.target!r}, not {str(target)!r}")
        graph, name = m.graph, Path(model).stem
        if not host_ops:
            require_device(m.summary(), m.target)
    else:
        spec = load_model(model, reduced=reduced, size=size)
        if spec.qdq:
            raise GraphError(f"{model}: a quantised (QDQ) model; the {kind} target runs float32 models")
        m = compile_model(spec.graph, target=for_present_device(target), host_ops=host_ops)
        graph, name = spec.graph, spec.name
    if progress:
        built = sum(k.target == kind for k in m.kernels.values())
        where = "the GPU" if kind == "cuda" else "llvm"
        progress(f"compiled {name} for {m.target}: {built} of {len(m.kernels)} nodes on {where}, "
                 f"{m.distinct_functions} functions, {m.info['compile_s']:.1f} s")
    x = models.sample_input(graph, seed)
    t0 = time.perf_counter()
    res = m.run(x, time_layers=True)  # the per-layer table: each step timed (cuda: CUDA events)
    run_s = time.perf_counter() - t0
    ref = reference_run(graph, x, check=False)
    err = _rel_err(res.outputs, ref)
    return FloatJobResult(name, m, err, run_s, res.layers, res.copies)


def vdla_row(model: str, config: Config, *, reduced: bool = False, size: int | None = None, device: str = "fsim",
             seed: int = 0, calib: int = 1, progress: Callable[[str], None] | None = None) -> Row:  # fmt: skip
    """The int8 model on VDLA: cycles at the configuration's clock plus the CPU nodes' host time
    (the same input as the float rows: :func:`.job.run_job` takes the model's evaluation batch or
    the synthetic input of ``seed``)."""
    res = run_job(model, device, config, reduced=reduced, size=size, seed=seed, calib=calib, check_fp32=False,
                  progress=progress)  # fmt: skip
    c = res.config
    check = res.checks[0]  # every node against the int8 numpy reference; then accuracy, for a labelled model
    more = "".join(f"; {ck.detail}" for ck in res.checks[1:])
    return Row("vdla", "int8", f"VDLA {c.name} {c.batch}x{c.block_in}x{c.block_out} @ {c.clock_mhz:g} MHz",
               res.vdla_seconds + res.cpu_seconds,
               f"{res.total_cycles} cycles ({res.device} cycle model) at {c.clock_mhz:g} MHz = "
               f"{res.vdla_seconds * 1e3:.3f} ms + CPU nodes {res.cpu_seconds * 1e3:.3f} ms on this host",
               res.ok, f"vs numpy int8: {check.detail}{more}",
               f"{len(res.vdla_layers)} of {len(res.layers)} nodes on VDLA", res.total_cycles, c.clock_mhz)  # fmt: skip


def compare(model: str, config: Config | None = None, *, reduced: bool = False, size: int | None = None,
            seed: int = 0, calib: int = 1, cuda_target: str = "cuda", device: str = "fsim", repeat: int = 5,
            progress: Callable[[str], None] | None = None) -> Comparison:  # fmt: skip
    """Run ``model`` on llvm, cuda and VDLA in one go; see the module doc."""
    if is_model_file(model):
        raise GraphError(f"--compare: {model} is a compiled VDLA model (int8 only); give the float model it was "
                         "built from (a built-in name or an .onnx file)")  # fmt: skip
    spec = load_model(model, reduced=reduced, size=size)
    out = Comparison(spec.name, spec.description)
    if spec.qdq:
        why = "skipped: a quantised (QDQ) model has no float32 graph"
        out.rows += [Row("llvm", "float32", "-", None, "", None, why), Row("cuda", "float32", "-", None, "", None, why)]
    else:
        x = spec.evaluation[0] if spec.evaluation else models.sample_input(spec.graph, seed)
        ref = reference_run(spec.graph, x, check=False)
        if progress:
            progress(f"{spec.name}: float32 on llvm")
        out.rows.append(llvm_row(spec.graph, x, ref, repeat))
        if progress:
            progress(f"{spec.name}: float32 on cuda")
        out.rows.append(cuda_row(spec.graph, x, ref, cuda_target, repeat))
    if progress:
        progress(f"{spec.name}: int8 on VDLA ({device})")
    out.rows.append(vdla_row(model, config or Config(), reduced=reduced, size=size, device=device, seed=seed,
                             calib=calib, progress=progress))  # fmt: skip
    return out
