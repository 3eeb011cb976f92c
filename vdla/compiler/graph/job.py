"""The main job: a model in, a per-layer report and checked outputs out.

    vdla run resnet18 --device fsim             # ResNet-18 224x224 on the golden simulator
    vdla run resnet18 --reduced --device pysim  # a reduced ResNet-18 on the RTL
    vdla build resnet18 -o resnet18.vdla        # compile once ...
    vdla run resnet18.vdla --device fsim        # ... run without recompiling
    vdla run model.onnx                         # an ONNX file (float, or QDQ-quantised)
    vdla run digits --device fsim               # the trained digits CNN: fp32 and int8 accuracy

:func:`run_job` loads the model (:mod:`.zoo`), compiles it (:mod:`.build`) or loads a
compiled model file, runs it on a Device through the graph executor, checks it node by node
against the int8 numpy reference (bit-exact) and the fp32 CPU path against onnxruntime
(within tolerance, when installed), and returns a :class:`~.report.JobResult` whose
:meth:`~.report.JobResult.table` is the report the CLI prints.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...compat.aliases import module_getattr
from ...config import Config
from . import models, passes
from .build import build_model
from .executor import CompiledModel, is_model_file, require_device
from .ir import Graph, GraphError
from .reference import run as reference_run
from .report import Check, JobResult
from .zoo import ModelSpec, load_model, quant_options, rebuild_evaluation, rebuild_fp32

__all__ = ["run_job", "ACCURACY_FLOOR"]

Progress = Callable[[str], None]

__getattr__ = module_getattr(__name__)  # names that moved to .zoo, .build and .report warn for one release


def run_job(
    model: str | CompiledModel,
    device: str = "fsim",
    config: Config | None = None,
    *,
    reduced: bool = False,
    size: int | None = None,
    seed: int = 0,
    calib: int = 1,
    check_fp32: bool = True,
    progress: Progress | None = None,
    per_channel: bool | None = None,
    calibration: str | None = None,
    offload: str | None = None,
    host_ops: bool = True,
    device_options: dict[str, Any] | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
) -> JobResult:
    """Compile (or load) ``model``, run it on ``device`` and check it; see the module doc.
    ``device_options`` go to the Device (e.g. ``waves="run.vcd"``); the Device is closed at the end."""
    from ...runtime import Device

    t0 = time.perf_counter()
    fp32: Graph | None = None
    onnx_file: str | None = None
    from_file = False
    spec: ModelSpec | None = None
    if isinstance(model, CompiledModel):
        m = model
    elif is_model_file(model):
        m = CompiledModel.load(model)
        from_file = True
        if m.target != "vdla":
            raise GraphError(f"{model}: a float model compiled for {m.target}; run it with --target "
                             f"{m.target.split()[0]} (without, a model runs on the VDLA device)")
    else:
        spec = quant_options(load_model(model, reduced=reduced, size=size, shapes=shapes), per_channel=per_channel,
                             calibration=calibration, offload=offload)
        fp32 = spec.graph if not spec.qdq else None
        onnx_file = spec.source.get("onnx")
        m = build_model(spec, config or Config(), calib=calib, progress=progress, host_ops=host_ops)
    if not host_ops:  # a loaded or given model is checked as a compiled one is
        require_device(m.summary(), m.target)
    if fp32 is None and check_fp32:
        fp32 = rebuild_fp32(m.info)
        onnx_file = m.info.get("onnx") or None
    compile_s = time.perf_counter() - t0
    cfg = m.config
    dev = Device(device, config=cfg, **(device_options or {}))
    evaluation = spec.evaluation if spec is not None else rebuild_evaluation(m.info)
    x = evaluation[0] if evaluation else models.sample_input(m.graph, seed)
    if progress:
        progress(f"running {m.graph.name} on {dev.name} ({sum(k.target == 'vdla' for k in m.kernels.values())} "
                 "VDLA nodes), checking every node against the int8 numpy reference")
    t1 = time.perf_counter()
    try:
        res = m.run(x, dev, reference=True, cpu_timing=True, progress=progress)
    finally:
        dev.close()  # an RTL device's trace file is complete now
    run_s = time.perf_counter() - t1
    checks = []
    bad = [r.node for r in res.layers if r.exact is False]
    tol = [r for r in res.layers if r.exact and r.max_err]
    # the reference continues from llvm float32 values within tolerance (see executor.run);
    # with none of those it is the whole-graph numpy reference
    ref_out = res.reference if tol and res.reference is not None else reference_run(m.graph, x, check=False)
    exact = not bad and all(np.array_equal(a, b) for a, b in zip(res.outputs, ref_out))
    detail = "bit-exact, every node"
    if tol:
        detail = (f"bit-exact, every integer node; {len(tol)} fp32 llvm node(s) within tolerance "
                  f"(max |err| {max(r.max_err or 0 for r in tol):.1e})")
    checks.append(Check("int8 output vs numpy int8 reference", exact,
                        detail if exact else f"differs at {', '.join(bad[:5]) or 'the output'}"))
    if check_fp32:
        checks.append(_fp32_check(fp32, x, onnx_file, res.outputs, progress))
    if evaluation is not None and fp32 is not None:
        checks.append(_accuracy_check(fp32, x, evaluation[1], res.outputs[0]))
    snr = []
    if spec is not None and not spec.qdq and spec.qconfig is not None and fp32 is not None:
        if progress:
            progress("per-layer int8 vs fp32 SNR")
        from .quantize import layer_snr, quantize

        simple = passes.simplify(fp32)
        cal = spec.calibration or models.sample_input(spec.graph, 100, count=calib)
        snr = layer_snr(simple, quantize(simple, cal, spec.qconfig), x)
    name = m.info.get("name") or m.graph.name
    desc = m.info.get("description") or m.graph.name
    return JobResult(str(name), str(desc), dev.name, cfg, res.layers, checks, compile_s, run_s, from_file,
                     len(m.functions), snr, res.traces)


#: The accuracy floor: int8 on VDLA may lose at most this much against fp32 (a fraction).
ACCURACY_FLOOR = 0.01


def _accuracy_check(fp32: Graph, x: dict[str, np.ndarray], labels: np.ndarray, int8_out: np.ndarray) -> Check:
    from .digits import accuracy

    a_fp = accuracy(reference_run(fp32, x, check=False)[0], labels)
    a_q = accuracy(int8_out, labels)
    return Check(f"accuracy on {len(labels)} held-out images (int8 on VDLA within {100 * ACCURACY_FLOOR:g} point "
                 "of fp32)", a_q >= a_fp - ACCURACY_FLOOR - 1e-12,
                 f"fp32 {100 * a_fp:.2f}%, int8 on VDLA {100 * a_q:.2f}%, difference {100 * (a_q - a_fp):+.2f} points")


def _fp32_check(fp32: Graph | None, x: dict[str, np.ndarray], onnx_file: str | None, int8_out: list[np.ndarray],
                progress: Progress | None) -> Check:
    name = "fp32 CPU path vs onnxruntime"
    if fp32 is None:
        return Check(name, None, "the float model is not known (QDQ model or compiled file without its source)")
    try:
        import onnxruntime as ort
    except ImportError:
        return Check(name, None, "onnxruntime is not installed: pip install 'vdla[graph]'")
    if progress:
        progress("fp32 path: numpy reference vs onnxruntime")
    ref = reference_run(fp32, x, check=False)
    if onnx_file:
        blob = Path(onnx_file).read_bytes()
    else:
        from .onnx_export import to_onnx

        blob = to_onnx(fp32).SerializeToString()
    try:
        got = _ort_outputs(ort, blob, x)
    except Exception as e:  # noqa: BLE001 - onnxruntime's own limits (old opsets, kernels it lacks)
        why = (str(e).strip().splitlines() or [type(e).__name__])[0]
        return Check(name, None, f"onnxruntime cannot run this model: {why[:300]}")
    err = max(float(np.abs(a.astype(np.float64) - b).max()) for a, b in zip(ref, got))
    scale = max(float(np.abs(b).max()) for b in got)
    tol = 1e-4 * max(1.0, scale)
    detail = f"max |err| {err:.2e}, tolerance {tol:.1e}"
    r, q = ref[0].astype(np.float64), int8_out[0].astype(np.float64)
    if r.shape == q.shape:
        noise = float(((r - q) ** 2).sum())
        snr = float("inf") if noise == 0 else 10 * np.log10(max(float((r**2).sum()), 1e-30) / noise)
        detail += f"; int8 vs fp32 SNR {snr:.1f} dB"
        if r.ndim == 2 and r.shape[1] > 1:
            detail += f", top-1 {'agrees' if (r.argmax(1) == q.argmax(1)).all() else 'differs'}"
    return Check(name, err <= tol, detail)


def _ort_outputs(ort: Any, blob: bytes, x: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Run the model on onnxruntime, feeding each input in the element type the model declares
    (the graph reads double / int64 inputs as float32 / int32)."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    sess = ort.InferenceSession(blob, opts, providers=["CPUExecutionProvider"])
    kinds = {"tensor(double)": np.float64, "tensor(int64)": np.int64}
    feeds = {i.name: x[i.name].astype(kinds[i.type]) if i.type in kinds else x[i.name] for i in sess.get_inputs()}
    return [np.asarray(o, np.float32) if np.asarray(o).dtype == np.float64 else o for o in sess.run(None, feeds)]
