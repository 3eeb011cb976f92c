"""The main job: a model in, a per-layer report and checked outputs out.

    vdla run resnet18 --device fsim             # ResNet-18 224x224 on the golden simulator
    vdla run resnet18 --reduced --device pysim  # a reduced ResNet-18 on the RTL
    vdla build resnet18 -o resnet18.vdla        # compile once ...
    vdla run resnet18.vdla --device fsim        # ... run without recompiling
    vdla run model.onnx                         # an ONNX file (float, or QDQ-quantised)
    vdla run digits --device fsim               "resnet50": Settings({}, {"input_size": 32, "width": 16, "num_classes": 10}),
    # the DQN's three conv shapes (8x8/4, 4x4/2, 3x3/1) and both dense layers on VDLA
    "dqn": Settings(
        {}, {"input_size": 36},
        QConfig(skip_conv=(), skip_dense=False, per_channel=True), PartitionPolicy(skip_first_conv=False, offload_dense=True),
    ),
    # every gate's matmul and the decoder on VDLA; sigmoid / tanh / the cell's mul and add on the CPU
    "lstm_lm": Settings(
        {}, {"vocab": 100, "hidden": 32, "steps": 2},
        QConfig(skip_dense=False, per_channel=True), PartitionPolicy(offload_dense=True), size_arg=None,
    ),
    # the trained digits CNN: fp32 and int8 accuracy

:func:`load_model` builds a built-in model (:data:`.models.MODELS`, weights from a seed)
or imports an ONNX file, with the per-model quantisation and partition settings
(:data:`SETTINGS`); :func:`build_model` runs :func:`.passes.prepare` and
:func:`.executor.compile_model`; :func:`run_job` runs the compiled model on a Device, checks
it node by node against the int8 numpy reference (bit-exact) and the fp32 CPU path against
onnxruntime (within tolerance, when installed), and returns a :class:`JobResult` whose
:meth:`~JobResult.table` is the report the CLI prints.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...config import Config
from . import models, passes
from .executor import CompiledModel, LayerRecord, compile_model, is_model_file
from .ir import Graph, GraphError
from .partition import UNSUPPORTED, PartitionPolicy
from .quantize import QConfig
from .reference import run as reference_run

__all__ = ["SETTINGS", "ModelSpec", "load_model", "quant_options", "build_model", "run_job", "JobResult",
           "parse_shapes"]

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Settings:
    full: dict[str, Any]
    reduced: dict[str, Any]
    qconfig: QConfig = QConfig(int8_shortcut=True)
    policy: PartitionPolicy = PartitionPolicy()
    size_arg: str | None = "input_size"


#: Built-in models: builder arguments (full / --reduced) and the VDLA flow's settings.
SETTINGS: dict[str, Settings] = {
    "resnet18": Settings({}, {"input_size": 32, "width": 16, "num_classes": 10}),
    "resnet_block": Settings(
        {"input_size": 56, "channels": 64}, {"input_size": 8, "channels": 16},
        QConfig(skip_conv=(), int8_shortcut=True), PartitionPolicy(skip_first_conv=False),
    ),
    "mobilenet_v1": Settings({}, {"input_size": 32, "alpha": 0.25, "num_classes": 10}),
    "mlp": Settings(
        {}, {"in_features": 64, "hidden": (32, 16)},
        QConfig(skip_dense=False, skip_nodes=frozenset({"classifier"})), PartitionPolicy(offload_dense=True),
        size_arg=None,
    ),
    "dcgan_generator": Settings({}, {"ngf": 8}, size_arg=None),
    "resnet50": Settings({}, {"input_size": 32, "width": 16, "num_classes": 10}),
    # the DQN's three conv shapes (8x8/4, 4x4/2, 3x3/1) and both dense layers on VDLA
    "dqn": Settings(
        {}, {"input_size": 36},
        QConfig(skip_conv=(), skip_dense=False, per_channel=True), PartitionPolicy(skip_first_conv=False, offload_dense=True),
    ),
    # every gate's matmul and the decoder on VDLA; sigmoid / tanh / the cell's mul and add on the CPU
    "lstm_lm": Settings(
        {}, {"vocab": 100, "hidden": 32, "steps": 2},
        QConfig(skip_dense=False, per_channel=True), PartitionPolicy(offload_dense=True), size_arg=None,
    ),
    # the trained digits CNN (:mod:`.digits`): every conv and dense on VDLA, per-channel
    # weight scales, calibrated on training images; full: the whole held-out set as one batch
    "digits": Settings(
        {}, {"batch": 60},
        QConfig(skip_conv=(), skip_dense=False, per_channel=True, calibration="percentile"),
        PartitionPolicy(skip_first_conv=False, offload_dense=True), size_arg=None,
    ),
}


@dataclass
class ModelSpec:
    """A float model and how to put it on VDLA."""

    name: str
    graph: Graph  # float32 (or QDQ, see ``qdq``)
    qconfig: QConfig | None
    policy: PartitionPolicy
    description: str
    source: dict[str, Any] = field(default_factory=dict)  # how to rebuild it (kept in the model file)
    qdq: bool = False
    #: Calibration inputs (default: synthetic ones, :func:`.models.sample_input`).
    calibration: list[dict[str, np.ndarray]] | None = None
    #: A labelled evaluation batch (inputs, labels): the job runs it and reports accuracy.
    evaluation: tuple[dict[str, np.ndarray], np.ndarray] | None = None


def parse_shapes(specs: Sequence[str] | None) -> dict[str, tuple[int, ...]]:
    """``["x=1,3,224,224", ...]`` (the CLI's ``--shape``) -> ``{"x": (1, 3, 224, 224)}``."""
    out: dict[str, tuple[int, ...]] = {}
    for spec in specs or ():
        name, eq, dims = spec.partition("=")
        try:
            shape = tuple(int(d) for d in dims.replace("x", ",").split(",") if d.strip())
        except ValueError:
            shape = ()
        if not eq or not name or not shape or min(shape) < 1:
            raise GraphError(f"--shape {spec!r}: expected NAME=d0,d1,... with positive integer dimensions")
        out[name] = shape
    return out


def _shapes_text(shapes: Mapping[str, Sequence[int]]) -> str:
    """``--shape`` arguments as one string (a model file's info keeps scalars only)."""
    return " ".join(f"{k}={','.join(str(int(d)) for d in v)}" for k, v in shapes.items())


def load_model(model: str, *, reduced: bool = False, size: int | None = None,
               shapes: Mapping[str, Sequence[int]] | None = None) -> ModelSpec:
    """A built-in model by name, or an ONNX file (QDQ models keep their own scales);
    ``shapes`` binds an ONNX model's dynamic input dimensions."""
    if model == "digits":
        return _digits_spec(reduced)
    if model in SETTINGS:
        st = SETTINGS[model]
        kw = dict(st.reduced if reduced else st.full)
        if size is not None:
            if st.size_arg is None:
                raise GraphError(f"model {model!r} has no input size to set (--size)")
            kw[st.size_arg] = size
        g = models.get(model, **kw)
        shape = "x".join(map(str, next(iter(g.inputs.values())).shape))
        desc = f"{model} {'reduced ' if reduced else ''}input {shape}"
        return ModelSpec(model, g, st.qconfig, st.policy, desc,
                         {"model": model, "reduced": int(reduced), "size": size or 0})
    p = Path(model)
    if p.suffix == ".onnx" or p.is_file():
        if not p.is_file():
            raise GraphError(f"no such ONNX file: {model}")
        from .onnx_import import load_onnx

        g = load_onnx(p, shapes)
        qdq = any(n.op in ("quantize", "dequantize") for n in g.nodes)
        shape = ", ".join(f"{k} {'x'.join(map(str, t.shape))}" for k, t in g.inputs.items())
        return ModelSpec(p.stem, g, None if qdq else QConfig(int8_shortcut=True), PartitionPolicy(),
                         f"ONNX {p.name} ({shape}{', QDQ' if qdq else ''})",
                         {"onnx": str(p.resolve()), **({"shapes": _shapes_text(shapes)} if shapes else {})},
                         qdq)
    raise GraphError(
        f"unknown model {model!r}: give a built-in model ({', '.join(SETTINGS)}), an .onnx file or a compiled .vdla model"
    )


def quant_options(spec: ModelSpec, *, per_channel: bool | None = None, calibration: str | None = None) -> ModelSpec:
    """``spec`` with its int8 settings changed: per-channel weight scales on or off, the
    activation calibration ("max", "percentile" or "kl"); None keeps the model's own."""
    from dataclasses import replace

    from .quantize import CALIBRATIONS

    if calibration is not None and calibration not in CALIBRATIONS:
        raise GraphError(f"unknown calibration {calibration!r} (one of {', '.join(CALIBRATIONS)})")
    if spec.qconfig is None or (per_channel is None and calibration is None):
        return spec  # a QDQ model keeps the scales it was written with
    q = spec.qconfig
    q = replace(q, per_channel=q.per_channel if per_channel is None else per_channel,
                calibration=calibration or q.calibration)
    return replace(spec, qconfig=q)


def _digits_spec(reduced: bool) -> ModelSpec:
    """The trained digits CNN at the evaluation batch: the held-out set (the first
    ``reduced`` batch of it with ``--reduced``), calibrated on training images."""
    from . import digits

    st = SETTINGS["digits"]
    xtr, _, xte, yte = digits.load_split()
    n = int(st.reduced["batch"]) if reduced else len(xte)
    g = digits.digits_cnn(n)
    # up to 1,200 training images (240 with --reduced, for quick tests)
    cal = [{"image": xtr[i : i + n]} for i in range(0, len(xtr) - n + 1, n)][: 4 if reduced else max(1, 1200 // n)]
    desc = f"digits CNN (trained), {'first ' if reduced else ''}{n} held-out images as one batch {n}x1x8x8"
    return ModelSpec("digits", g, st.qconfig, st.policy, desc,
                     {"model": "digits", "reduced": int(reduced), "size": 0},
                     calibration=cal, evaluation=({"image": xte[:n]}, yte[:n]))


def build_model(spec: ModelSpec, config: Config, *, calib: int = 1, seed: int = 100,
                progress: Progress | None = None) -> CompiledModel:
    """Quantise (calibrating on ``calib`` synthetic inputs), partition, pack, fuse, compile."""
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
    m = compile_model(g, config, progress=progress)
    m.info.update({k: v for k, v in spec.source.items()})
    m.info.update({"prepare_s": t1 - t0, "description": spec.description, "name": spec.name})
    return m


def _rebuild_fp32(info: dict[str, Any]) -> Graph | None:
    """The float graph a compiled model came from (for the onnxruntime check), if known."""
    try:
        if info.get("model"):
            return load_model(info["model"], reduced=bool(info.get("reduced")), size=info.get("size") or None).graph
        if info.get("onnx") and Path(info["onnx"]).is_file():
            spec = load_model(info["onnx"], shapes=parse_shapes(str(info.get("shapes", "")).split()))
            return None if spec.qdq else spec.graph
    except (GraphError, ImportError):
        return None
    return None


def _rebuild_evaluation(info: dict[str, Any]) -> tuple[dict[str, np.ndarray], np.ndarray] | None:
    """The labelled evaluation batch of a compiled built-in model that has one (digits)."""
    if info.get("model") != "digits":
        return None
    try:
        return load_model("digits", reduced=bool(info.get("reduced"))).evaluation
    except (GraphError, ImportError):
        return None


# =====================================================================================
# running and reporting
# =====================================================================================


@dataclass
class Check:
    name: str
    ok: bool | None  # None: skipped
    detail: str

    def line(self) -> str:
        word = "PASS" if self.ok else ("skipped" if self.ok is None else "FAIL")
        return f"{self.name}: {word} ({self.detail})"


#: How many per-layer SNR lines the report shows at most (the lowest).
SNR_LINES = 8


@dataclass
class JobResult:
    model: str
    description: str
    device: str
    config: Config
    layers: list[LayerRecord]
    checks: list[Check]
    compile_s: float
    run_s: float
    compiled_from_file: bool = False
    kernels: int = 0
    #: (float value, int8 scale, SNR dB) of every int8 tensor against fp32 (see quantize.layer_snr)
    snr: list[tuple[str, float, float]] = field(default_factory=list)
    #: node -> its kernel's module timeline on the device (`RunResult.traces`), for `vdla.plot`
    traces: dict[str, list[tuple[int, str, int, int]]] = field(default_factory=dict, repr=False)

    # -- totals -------------------------------------------------------------------------
    @property
    def vdla_layers(self) -> list[LayerRecord]:
        return [r for r in self.layers if r.target == "vdla"]

    @property
    def total_cycles(self) -> int:
        return sum(r.cycles or 0 for r in self.vdla_layers)

    @property
    def vdla_seconds(self) -> float:
        return self.total_cycles / (self.config.clock_mhz * 1e6)

    @property
    def cpu_seconds(self) -> float:
        """Host time of the nodes on the host (``llvm`` and numpy ``cpu``)."""
        return sum(r.seconds for r in self.layers if r.target in ("cpu", "llvm"))

    @property
    def offload_cpu_seconds(self) -> float | None:
        t = [r.cpu_seconds for r in self.vdla_layers]
        return None if not t or any(v is None for v in t) else float(sum(t))  # type: ignore[arg-type]

    @property
    def speedup(self) -> float | None:
        c = self.offload_cpu_seconds
        return c / self.vdla_seconds if c and self.vdla_seconds else None

    @property
    def ok(self) -> bool:
        return all(c.ok is not False for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "description": self.description, "device": self.device,
            "config": self.config.name, "clock_mhz": self.config.clock_mhz,
            "layers": [r.to_dict() for r in self.layers],
            "total_cycles": self.total_cycles, "vdla_latency_s": self.vdla_seconds,
            "cpu_nodes_s": self.cpu_seconds, "offloaded_cpu_path_s": self.offload_cpu_seconds,
            "speedup": self.speedup, "compile_s": self.compile_s, "run_s": self.run_s, "kernels": self.kernels,
            "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in self.checks],
            "snr_db": [{"value": v, "scale": sc, "snr_db": db} for v, sc, db in self.snr],
            "ok": self.ok,
        }

    def table(self) -> str:
        c = self.config
        lines = [
            f"vdla run {self.model}: {self.description}",
            f"config {c.name}: {c.batch}x{c.block_in}x{c.block_out} GEMM at {c.clock_mhz:g} MHz "
            f"(peak {c.peak_gops:.1f} GOPS), device {self.device}",
            (f"loaded a compiled model ({self.kernels} VDLA kernels)" if self.compiled_from_file else
             f"compiled {len(self.vdla_layers)}/{len(self.layers)} nodes onto VDLA ({self.kernels} kernels) "
             f"in {self.compile_s:.1f} s") + f"; ran in {self.run_s:.1f} s",
            "",
            f"{'#':>3}  {'node':<28} {'kernel':<38} {'target':<6} {'cycles':>9} {'time':>10} "
            f"{'GEMM%':>6} {'bytes':>9} {'exact':>5}",
        ]
        for i, r in enumerate(self.layers, 1):
            cyc = f"{r.cycles:>9}" if r.cycles is not None else f"{'-':>9}"
            util = f"{100 * r.gemm_util:>5.1f}%" if r.gemm_util is not None else f"{'-':>6}"
            ex = "-" if r.exact is None else ("NO" if not r.exact else "tol" if r.max_err else "yes")
            kern = r.op.replace("_packed", "").replace("requantize", "requant")
            kern = kern if len(kern) <= 38 else kern[:35] + "..."
            lines.append(f"{i:>3}  {r.node[:28]:<28} {kern:<38} {r.target:<6} {cyc} {_fmt_s(r.seconds):>10} "
                         f"{util} {_fmt_b(r.bytes_moved):>9} {ex:>5}")
        fb = [r for r in self.layers if r.reason.startswith(("fallback", UNSUPPORTED))]
        for r in fb:
            lines.append(f"     {r.node}: CPU {r.reason}")
        for r in self.layers:
            if r.target == "cpu" and "numpy: " in r.reason:
                lines.append(f"     {r.node}: not on llvm ({r.reason[r.reason.index('numpy: ') + 7:]})")
        lines.append("")
        macs = sum(r.macs for r in self.vdla_layers)
        util = sum((r.gemm_util or 0) * (r.cycles or 0) for r in self.vdla_layers) / max(1, self.total_cycles)
        lines.append(f"total VDLA cycles {self.total_cycles} = {self.vdla_seconds * 1e3:.2f} ms at {c.clock_mhz:g} MHz "
                     f"({len(self.vdla_layers)} layers, GEMM utilisation {100 * util:.1f}%, "
                     f"{2 * macs / max(self.vdla_seconds, 1e-12) / 1e9:.1f} GOPS)")
        nl = sum(r.target == "llvm" for r in self.layers)
        lines.append(f"CPU nodes on this host: {self.cpu_seconds * 1e3:.1f} ms "
                     f"({len(self.layers) - len(self.vdla_layers)} nodes, {nl} built for llvm)")
        oc = self.offload_cpu_seconds
        if oc is not None and self.vdla_layers:
            lines.append(f"offloaded layers: VDLA {self.vdla_seconds * 1e3:.2f} ms vs CPU path {oc * 1e3:.1f} ms "
                         f"(numpy int8 on this host) -> speedup {self.speedup:.1f}x")
        lines.append(f"end-to-end latency (VDLA at {c.clock_mhz:g} MHz + CPU nodes): "
                     f"{(self.vdla_seconds + self.cpu_seconds) * 1e3:.2f} ms")
        if self.snr:
            worst = min(self.snr, key=lambda t: t[2])
            shown = self.snr
            if len(shown) > SNR_LINES:  # the lowest ones, in graph order; --json has them all
                cut = sorted(db for _, _, db in shown)[SNR_LINES - 1]
                shown = [t for t in shown if t[2] <= cut][:SNR_LINES]
            lines.append(f"per-layer int8 vs fp32 SNR ({len(self.snr)} int8 tensors; lowest {worst[2]:.1f} dB "
                         f"at {worst[0]}" + (f"; the {len(shown)} lowest shown" if len(shown) < len(self.snr) else "")
                         + "):")
            for v, sc, db in shown:
                lines.append(f"     {v[:40]:<40} scale 2^{int(np.log2(sc)):<4} {db:6.1f} dB")
        lines += [ck.line() for ck in self.checks]
        lines.append(f"result: {'PASS' if self.ok else 'FAIL'}")
        return "\n".join(lines)


def _fmt_s(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def _fmt_b(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f}M"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f}K"
    return str(n)


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
    else:
        spec = quant_options(load_model(model, reduced=reduced, size=size, shapes=shapes), per_channel=per_channel,
                             calibration=calibration)
        fp32 = spec.graph if not spec.qdq else None
        onnx_file = spec.source.get("onnx")
        m = build_model(spec, config or Config(), calib=calib, progress=progress)
    if fp32 is None and check_fp32:
        fp32 = _rebuild_fp32(m.info)
        onnx_file = m.info.get("onnx") or None
    compile_s = time.perf_counter() - t0
    cfg = m.config
    dev = Device(device, config=cfg, **(device_options or {}))
    evaluation = spec.evaluation if spec is not None else _rebuild_evaluation(m.info)
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


def stderr_progress(enabled: bool = True) -> Progress | None:
    """Progress messages on one updating stderr line (`vdla.progress.status`): None when
    ``enabled`` is false (``-q``), stderr is not a terminal, or ``VDLA_PROGRESS=0``."""
    from ... import progress

    return progress.status() if enabled else None
