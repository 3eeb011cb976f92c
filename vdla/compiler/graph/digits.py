"""A trained model: a small CNN for scikit-learn's bundled handwritten digits.

The data is ``sklearn.datasets.load_digits`` (1,797 8x8 grey images of 0-9, shipped in
the scikit-learn wheel: nothing is downloaded), split once into a training and a held-out
set (:func:`load_split`, stratified, fixed seed). :func:`digits_cnn` is the network
(conv 3x3 16, ReLU, conv 3x3 32, ReLU, max-pool 2, dense 64, ReLU, dense 10) as a graph
at any batch size, with the weights trained by ``examples/train_digits.py`` and committed
as ``data/digits_cnn.onnx`` (read back by :func:`trained_weights`). ``vdla run digits``
(:mod:`.job`) quantises it to int8 with per-channel weight scales, calibrating on training
images, runs the whole held-out set through VDLA as one batch and reports fp32 and int8
accuracy (:func:`accuracy`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .ir import Graph, GraphError

__all__ = ["WEIGHTS_FILE", "LAYERS", "load_split", "digits_cnn", "trained_weights", "accuracy"]

#: The committed trained weights (an ONNX model at batch 1).
WEIGHTS_FILE = Path(__file__).resolve().parent / "data" / "digits_cnn.onnx"

#: (name, kind, output channels / features): the network, in order (convs are 3x3, pad 1).
LAYERS: tuple[tuple[str, str, int], ...] = (
    ("conv1", "conv", 16),
    ("conv2", "conv", 32),
    ("pool", "maxpool", 0),
    ("fc1", "dense", 64),
    ("fc2", "dense", 10),
)
TEST_FRACTION = 0.2
SPLIT_SEED = 0


def load_split(seed: int = SPLIT_SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train images, train labels, held-out images, held-out labels); images are float32
    ``(N, 1, 8, 8)`` scaled to [0, 1] (the data's 0..16 / 16)."""
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError as e:
        raise GraphError("the digits model needs scikit-learn (its bundled digits data): "
                         "pip install 'vdla[digits]'") from e
    d = load_digits()
    x = (d.images.astype(np.float32) / np.float32(16.0))[:, None]
    y = d.target.astype(np.int64)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=TEST_FRACTION, random_state=seed, stratify=y)
    return xtr, ytr, xte, yte


def weight_shapes() -> dict[str, tuple[int, ...]]:
    """Every parameter's shape, derived from :data:`LAYERS` (8x8 input, one channel)."""
    shapes: dict[str, tuple[int, ...]] = {}
    c, hw = 1, 8
    feat = 0
    for name, kind, out in LAYERS:
        if kind == "conv":
            shapes[f"{name}.weight"], shapes[f"{name}.bias"] = (out, c, 3, 3), (out,)
            c = out
        elif kind == "maxpool":
            hw //= 2
            feat = c * hw * hw
        else:
            shapes[f"{name}.weight"], shapes[f"{name}.bias"] = (out, feat), (out,)
            feat = out
    return shapes


def digits_cnn(batch: int = 1, weights: Mapping[str, np.ndarray] | None = None, seed: int = 0) -> Graph:
    """The digits CNN at ``batch``; ``weights`` by parameter name (default: the trained ones,
    :func:`trained_weights`; ``seed`` only draws random ones when ``weights`` is ``{}``)."""
    if batch < 1:
        raise GraphError(f"digits_cnn: batch must be >= 1, got {batch}")
    shapes = weight_shapes()
    if weights is None:
        weights = trained_weights()
    elif not weights:
        rng = np.random.default_rng(seed)
        weights = {k: (rng.standard_normal(s) * np.sqrt(2.0 / max(1, int(np.prod(s[1:]))))).astype(np.float32)
                   if len(s) > 1 else np.zeros(s, np.float32) for k, s in shapes.items()}
    for k, s in shapes.items():
        if k not in weights or tuple(weights[k].shape) != s:
            got = tuple(weights[k].shape) if k in weights else "missing"
            raise GraphError(f"digits_cnn: parameter {k!r} must have shape {s}, got {got}")
    g = Graph("digits_cnn")
    x = g.add_input("image", (batch, 1, 8, 8))
    for name, kind, _ in LAYERS:
        if kind == "maxpool":
            x = g.add_node("max_pool2d", [x], name=name, kernel=2, strides=2, padding=0)
            x = g.add_node("flatten", [x], name="flatten")
            continue
        w = g.add_const(f"{name}.weight", np.asarray(weights[f"{name}.weight"], np.float32))
        b = g.add_const(f"{name}.bias", np.asarray(weights[f"{name}.bias"], np.float32))
        if kind == "conv":
            x = g.add_node("conv2d", [x, w, b], name=name, strides=1, padding=1)
        else:
            x = g.add_node("dense", [x, w, b], name=name)
        if name != LAYERS[-1][0]:
            x = g.add_node("relu", [x], name=f"{name}.relu")
    g.set_outputs(x)
    return g.infer_types()


def trained_weights(path: str | Path = WEIGHTS_FILE) -> dict[str, np.ndarray]:
    """The parameters stored in the committed ONNX file (its initializers, by name)."""
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as e:
        raise GraphError("the digits model's weights are an ONNX file: pip install 'vdla[graph]'") from e
    p = Path(path)
    if not p.is_file():
        raise GraphError(f"no trained digits weights at {p}: run examples/train_digits.py")
    m = onnx.load(str(p))
    return {t.name: numpy_helper.to_array(t).astype(np.float32) for t in m.graph.initializer}


def accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of rows whose arg-max is the label."""
    logits = np.asarray(logits).reshape(len(labels), -1)
    return float((logits.argmax(axis=1) == labels).mean())
