"""The model zoo: the built-in models' settings and loading a model by name or file.

:func:`load_model` builds a built-in model (:data:`.models.MODELS`, weights from a seed)
or imports an ONNX file, with the per-model quantisation and partition settings
(:data:`SETTINGS`: builder arguments full and ``--reduced``, the QConfig and the
PartitionPolicy of the VDLA flow) as a :class:`ModelSpec`; :func:`quant_options` applies
the command line's quantisation options. The jobs (:mod:`.job`, :mod:`.compare`), the
tuner, the benchmarks and the tests load models through here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import models
from .ir import Graph, GraphError
from .partition import PartitionPolicy
from .quantize import QConfig

__all__ = ["SETTINGS", "OFFLOADS", "Settings", "ModelSpec", "load_model", "quant_options", "parse_shapes", "rebuild_fp32",
           "rebuild_evaluation"]

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Settings:
    full: dict[str, Any]
    reduced: dict[str, Any]
    qconfig: QConfig = QConfig(int8_shortcut=True)
    policy: PartitionPolicy = PartitionPolicy()
    size_arg: str | None = "input_size"


#: What the VDLA flow puts on the core. "all": every convolution and dense layer VDLA can map,
#: the first convolution (its input quantised at the boundary) and the classifier included (the
#: mobile networks, issue 35: their stem and classifier are up to a quarter of their MACs);
#: "vta": VTA's ResNet flow, whose first convolution and classifier stay float32 on the CPU
#: (VTA's ``skip_conv_layers=[0]`` / ``skip_dense_layer``).
OFFLOADS = ("all", "vta")
_ALL_Q = QConfig(skip_conv=(), skip_dense=False, int8_shortcut=True)
_ALL_P = PartitionPolicy(skip_first_conv=False, offload_dense=True)


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
    # torchvision's mobile classifiers (bench_cpu_models.py times them at 224x224 against onnxruntime)
    # (every MAC on VDLA: OFFLOADS "all")
    "mobilenet_v2": Settings({}, {"input_size": 32, "width_mult": 0.25, "num_classes": 10}, _ALL_Q, _ALL_P),
    "shufflenet_v2": Settings({}, {"input_size": 32, "num_classes": 10}, _ALL_Q, _ALL_P),
    "squeezenet1_1": Settings({}, {"input_size": 32, "num_classes": 10}, _ALL_Q, _ALL_P),
    "mnasnet0_5": Settings({}, {"input_size": 32, "alpha": 0.25, "num_classes": 10}, _ALL_Q, _ALL_P),
    "mobilenet_v3_small": Settings({}, {"input_size": 32, "num_classes": 10}, _ALL_Q, _ALL_P),
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
        # a model a user brings: everything VDLA can map on the core (OFFLOADS "all")
        return ModelSpec(p.stem, g, None if qdq else _ALL_Q, PartitionPolicy() if qdq else _ALL_P,
                         f"ONNX {p.name} ({shape}{', QDQ' if qdq else ''})",
                         {"onnx": str(p.resolve()), **({"shapes": _shapes_text(shapes)} if shapes else {})},
                         qdq)
    raise GraphError(
        f"unknown model {model!r}: give a built-in model ({', '.join(SETTINGS)}), an .onnx file or a compiled .vdla model"
    )


def quant_options(spec: ModelSpec, *, per_channel: bool | None = None, calibration: str | None = None,
                  offload: str | None = None) -> ModelSpec:
    """``spec`` with its int8 settings changed: per-channel weight scales on or off, the
    activation calibration ("max", "percentile" or "kl"), what goes on VDLA (:data:`OFFLOADS`);
    None keeps the model's own."""
    from dataclasses import replace

    from .quantize import CALIBRATIONS

    if calibration is not None and calibration not in CALIBRATIONS:
        raise GraphError(f"unknown calibration {calibration!r} (one of {', '.join(CALIBRATIONS)})")
    if offload is not None and offload not in OFFLOADS:
        raise GraphError(f"unknown offload {offload!r} (one of {', '.join(OFFLOADS)})")
    if spec.qconfig is None or (per_channel is None and calibration is None and offload is None):
        return spec  # a QDQ model keeps the scales it was written with
    q, pol = spec.qconfig, spec.policy
    q = replace(q, per_channel=q.per_channel if per_channel is None else per_channel,
                calibration=calibration or q.calibration)
    if offload is not None:
        every = offload == "all"
        q = replace(q, skip_conv=() if every else (0,), skip_dense=not every)
        pol = replace(pol, skip_first_conv=not every, offload_dense=every)
    return replace(spec, qconfig=q, policy=pol)


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


def rebuild_fp32(info: dict[str, Any]) -> Graph | None:
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


def rebuild_evaluation(info: dict[str, Any]) -> tuple[dict[str, np.ndarray], np.ndarray] | None:
    """The labelled evaluation batch of a compiled built-in model that has one (digits)."""
    if info.get("model") != "digits":
        return None
    try:
        return load_model("digits", reduced=bool(info.get("reduced"))).evaluation
    except (GraphError, ImportError):
        return None
