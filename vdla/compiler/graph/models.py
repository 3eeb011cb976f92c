"""Built-in models with weights generated from a seed (no downloads).

* :func:`resnet18` — ResNet-18 v1 (conv 7x7/2, BN, ReLU, max-pool, 4 x 2 basic blocks,
  global pool, FC) at 224x224 or a reduced input size (and width) for tests;
* :func:`resnet_block` — one basic block (with or without the downsample shortcut), the
  reduced model for RTL simulation;
* :func:`mobilenet_v1` — MobileNet v1 (depthwise-separable blocks, ReLU6 as clip);
* :func:`mlp` — a small multi-layer perceptron;
* :func:`dcgan_generator` — the DCGAN generator (a stack of conv2d_transpose, as in the
  TVM paper's evaluation), 100-d noise to a 3x64x64 image;
* :func:`resnet50` — ResNet-50 v1.5 (bottleneck blocks 3-4-6-3, the stride on the 3x3);
* :func:`dqn` — the Atari DQN (84x84x4 frames; 8x8/4, 4x4/2, 3x3/1 convs, two dense layers);
* :func:`lstm_lm` — the LSTM language model (2 layers, hidden 650, PTB's 10,000 words),
  unrolled over a few timesteps from dense / sigmoid / tanh / mul / add (there is no LSTM
  op): each gate is a dense layer on ``[x_t, h_{t-1}]``, so every matmul is a GEMM.

All are float32 graphs with inference-mode batch norms (fold them with
:func:`.fold.fold_batch_norm`). Weights use He-normal initialisation and batch-norm
statistics that keep activations in a sane range, so quantisation is meaningful.
:data:`MODELS` maps names to builders; :func:`get` builds one by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .ir import Graph, GraphError
from .reference import run

__all__ = ["resnet18", "resnet_block", "mobilenet_v1", "mlp", "dcgan_generator", "resnet50", "dqn", "lstm_lm",
           "MODELS", "get", "sample_input"]


class _Builder:
    def __init__(self, name: str, seed: int) -> None:
        self.g = Graph(name)
        self.rng = np.random.default_rng(seed)

    def weight(self, name: str, shape: Sequence[int], fan_in: int, gain: float = 2.0) -> str:
        w = self.rng.standard_normal(shape) * np.sqrt(gain / fan_in)
        return self.g.add_const(name, w.astype(np.float32))

    def bn(self, x: str, c: int, name: str) -> str:
        r = self.rng
        gamma = r.uniform(0.6, 1.2, c).astype(np.float32)
        beta = r.normal(0.0, 0.1, c).astype(np.float32)
        mean = r.normal(0.0, 0.2, c).astype(np.float32)
        var = r.uniform(0.8, 1.6, c).astype(np.float32)
        ps = [
            self.g.add_const(f"{name}.{k}", v)
            for k, v in (("gamma", gamma), ("beta", beta), ("mean", mean), ("var", var))
        ]
        return self.g.add_node("batch_norm", [x, *ps], name=name, epsilon=1e-5)

    def conv(
        self, x: str, cout: int, k: int, stride: int, pad: int, name: str, groups: int = 1, bias: bool = False
    ) -> str:
        cin = self.g.type_of(x).shape[1]
        w = self.weight(f"{name}.weight", (cout, cin // groups, k, k), cin // groups * k * k)
        ins = [x, w]
        if bias:
            ins.append(self.g.add_const(f"{name}.bias", self.rng.normal(0, 0.05, cout).astype(np.float32)))
        return self.g.add_node("conv2d", ins, name=name, strides=stride, padding=pad, groups=groups)

    def dense(self, x: str, cout: int, name: str, gain: float = 2.0) -> str:
        cin = self.g.type_of(x).shape[1]
        w = self.weight(f"{name}.weight", (cout, cin), cin, gain)
        b = self.g.add_const(f"{name}.bias", self.rng.normal(0, 0.05, cout).astype(np.float32))
        return self.g.add_node("dense", [x, w, b], name=name)


def _centre_head(g: Graph, fc: str, seed: int, samples: int = 2) -> Graph:
    """Data-dependent init of the classifier bias: subtract the mean logit over a few
    synthetic inputs, so the arg-max depends on the input rather than on a constant
    offset (random networks otherwise predict one class for everything)."""
    node = g.node(fc)
    w = g.consts[node.inputs[1]].astype(np.float64)
    feats = [run(g, x, return_all=True, check=False)[node.inputs[0]] for x in sample_input(g, seed + 7, samples)]  # type: ignore[union-attr]
    mean = np.concatenate(feats).astype(np.float64).mean(axis=0)
    g.consts[node.inputs[2]] = np.ascontiguousarray((-(w @ mean)).astype(np.float32))
    return g


def _check_size(name: str, size: int, minimum: int) -> None:
    if size < minimum:
        raise GraphError(f"{name}: input size {size} is below the minimum {minimum}")


def resnet18(
    input_size: int = 224,
    num_classes: int = 1000,
    batch: int = 1,
    width: int = 64,
    seed: int = 0,
    centre_head: bool = False,
) -> Graph:
    """ResNet-18 v1. ``width`` scales the channel counts (64 is the real network).
    ``centre_head`` sets the classifier bias from two synthetic inputs (see :func:`_centre_head`)."""
    _check_size("resnet18", input_size, 32)
    b = _Builder("resnet18", seed)
    x = b.g.add_input("data", (batch, 3, input_size, input_size))
    x = b.bn(b.conv(x, width, 7, 2, 3, "conv1"), width, "bn1")
    x = b.g.add_node("relu", [x], name="relu1")
    x = b.g.add_node("max_pool2d", [x], name="maxpool", kernel=3, strides=2, padding=1)
    for stage, mult in enumerate((1, 2, 4, 8), start=1):
        c = width * mult
        for blk in range(2):
            p = f"layer{stage}.{blk}"
            stride = 2 if stage > 1 and blk == 0 else 1
            y = b.g.add_node("relu", [b.bn(b.conv(x, c, 3, stride, 1, f"{p}.conv1"), c, f"{p}.bn1")], name=f"{p}.relu1")
            y = b.bn(b.conv(y, c, 3, 1, 1, f"{p}.conv2"), c, f"{p}.bn2")
            if stride != 1 or b.g.type_of(x).shape[1] != c:
                x = b.bn(b.conv(x, c, 1, stride, 0, f"{p}.downsample"), c, f"{p}.downsample.bn")
            y = b.g.add_node("add", [y, x], name=f"{p}.add")
            x = b.g.add_node("relu", [y], name=f"{p}.relu2")
    x = b.g.add_node("global_avg_pool2d", [x], name="avgpool")
    x = b.g.add_node("flatten", [x], name="flatten")
    x = b.dense(x, num_classes, "fc", gain=1.0)
    b.g.set_outputs(x)
    b.g.infer_types()
    return _centre_head(b.g, "fc", seed) if centre_head else b.g


def resnet_block(input_size: int = 8, channels: int = 16, batch: int = 1, seed: int = 0, downsample: bool = False) -> Graph:
    """One ResNet basic block (conv-BN-ReLU, conv-BN, shortcut add, ReLU), optionally with
    the strided 1x1 downsample shortcut: the reduced model for RTL simulation."""
    b = _Builder("resnet_block", seed)
    x = b.g.add_input("data", (batch, channels, input_size, input_size))
    c, stride = (2 * channels, 2) if downsample else (channels, 1)
    y = b.g.add_node("relu", [b.bn(b.conv(x, c, 3, stride, 1, "conv1"), c, "bn1")], name="relu1")
    y = b.bn(b.conv(y, c, 3, 1, 1, "conv2"), c, "bn2")
    if downsample:
        x = b.bn(b.conv(x, c, 1, stride, 0, "downsample"), c, "downsample.bn")
    y = b.g.add_node("add", [y, x], name="add")
    b.g.set_outputs(b.g.add_node("relu", [y], name="relu2"))
    return b.g.infer_types()


# (output channels, stride) of MobileNet v1's 13 depthwise-separable blocks
_MOBILENET = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]


def mobilenet_v1(
    input_size: int = 224,
    num_classes: int = 1000,
    batch: int = 1,
    alpha: float = 1.0,
    seed: int = 0,
    centre_head: bool = False,
) -> Graph:
    """MobileNet v1 with width multiplier ``alpha``; ReLU6 is ``clip(0, 6)``."""
    _check_size("mobilenet_v1", input_size, 32)
    b = _Builder("mobilenet_v1", seed)

    def ch(c: int) -> int:
        return max(8, int(c * alpha))

    x = b.g.add_input("data", (batch, 3, input_size, input_size))
    x = b.g.add_node("clip", [b.bn(b.conv(x, ch(32), 3, 2, 1, "conv1"), ch(32), "bn1")], name="relu1", min=0.0, max=6.0)
    for i, (c, s) in enumerate(_MOBILENET, start=1):
        cin = b.g.type_of(x).shape[1]
        p = f"block{i}"
        x = b.bn(b.conv(x, cin, 3, s, 1, f"{p}.dw", groups=cin), cin, f"{p}.dw.bn")
        x = b.g.add_node("clip", [x], name=f"{p}.dw.relu", min=0.0, max=6.0)
        x = b.bn(b.conv(x, ch(c), 1, 1, 0, f"{p}.pw"), ch(c), f"{p}.pw.bn")
        x = b.g.add_node("clip", [x], name=f"{p}.pw.relu", min=0.0, max=6.0)
    x = b.g.add_node("global_avg_pool2d", [x], name="avgpool")
    x = b.g.add_node("flatten", [x], name="flatten")
    x = b.dense(x, num_classes, "fc", gain=1.0)
    b.g.set_outputs(x)
    b.g.infer_types()
    return _centre_head(b.g, "fc", seed) if centre_head else b.g


def mlp(
    in_features: int = 784, hidden: Sequence[int] = (256, 128), num_classes: int = 10, batch: int = 1, seed: int = 0
) -> Graph:
    """Dense + ReLU layers, then a classifier and a softmax."""
    b = _Builder("mlp", seed)
    x = b.g.add_input("data", (batch, in_features))
    for i, h in enumerate(hidden, start=1):
        x = b.g.add_node("relu", [b.dense(x, h, f"fc{i}")], name=f"relu{i}")
    x = b.dense(x, num_classes, "classifier", gain=1.0)
    x = b.g.add_node("softmax", [x], name="prob", axis=-1)
    b.g.set_outputs(x)
    return b.g.infer_types()


def dcgan_generator(nz: int = 100, ngf: int = 64, out_channels: int = 3, batch: int = 1, seed: int = 0) -> Graph:
    """DCGAN generator: noise ``[N, nz]`` -> image ``[N, 3, 64, 64]`` through conv2d_transpose."""
    b = _Builder("dcgan_generator", seed)
    z = b.g.add_input("noise", (batch, nz))
    x = b.g.add_node("reshape", [z], name="reshape", shape=(batch, nz, 1, 1))
    chans = [ngf * 8, ngf * 4, ngf * 2, ngf]
    for i, c in enumerate(chans, start=1):
        cin = b.g.type_of(x).shape[1]
        w = b.weight(f"deconv{i}.weight", (cin, c, 4, 4), cin * 4)
        stride, pad = (1, 0) if i == 1 else (2, 1)
        x = b.g.add_node("conv2d_transpose", [x, w], name=f"deconv{i}", strides=stride, padding=pad)
        x = b.g.add_node("relu", [b.bn(x, c, f"bn{i}")], name=f"relu{i}")
    cin = b.g.type_of(x).shape[1]
    w = b.weight("deconv5.weight", (cin, out_channels, 4, 4), cin * 4, gain=1.0)
    x = b.g.add_node("conv2d_transpose", [x, w], name="deconv5", strides=2, padding=1)
    x = b.g.add_node("tanh", [x], name="image")
    b.g.set_outputs(x)
    return b.g.infer_types()


def resnet50(
    input_size: int = 224,
    num_classes: int = 1000,
    batch: int = 1,
    width: int = 64,
    seed: int = 0,
    centre_head: bool = False,
) -> Graph:
    """ResNet-50 v1.5: bottleneck blocks (1x1, 3x3 with the stage's stride, 1x1 to 4x the
    width), 3-4-6-3 per stage, a strided 1x1 projection shortcut on each stage's first
    block. ``width`` scales the channel counts (64 is the real network). The last batch
    norm of every residual branch starts small (gamma 0.2-0.5) so that 16 blocks of random
    weights keep the activations in range, as trained ResNets do."""
    _check_size("resnet50", input_size, 32)
    b = _Builder("resnet50", seed)
    x = b.g.add_input("data", (batch, 3, input_size, input_size))
    x = b.g.add_node("relu", [b.bn(b.conv(x, width, 7, 2, 3, "conv1"), width, "bn1")], name="relu1")
    x = b.g.add_node("max_pool2d", [x], name="maxpool", kernel=3, strides=2, padding=1)
    for stage, (blocks, mult) in enumerate(zip((3, 4, 6, 3), (1, 2, 4, 8)), start=1):
        c = width * mult
        for blk in range(blocks):
            p = f"layer{stage}.{blk}"
            stride = 2 if stage > 1 and blk == 0 else 1
            y = b.g.add_node("relu", [b.bn(b.conv(x, c, 1, 1, 0, f"{p}.conv1"), c, f"{p}.bn1")], name=f"{p}.relu1")
            y = b.g.add_node("relu", [b.bn(b.conv(y, c, 3, stride, 1, f"{p}.conv2"), c, f"{p}.bn2")],
                             name=f"{p}.relu2")
            y = b.bn(b.conv(y, 4 * c, 1, 1, 0, f"{p}.conv3"), 4 * c, f"{p}.bn3")
            b.g.consts[f"{p}.bn3.gamma"] = b.rng.uniform(0.2, 0.5, 4 * c).astype(np.float32)
            if blk == 0:
                x = b.bn(b.conv(x, 4 * c, 1, stride, 0, f"{p}.downsample"), 4 * c, f"{p}.downsample.bn")
            y = b.g.add_node("add", [y, x], name=f"{p}.add")
            x = b.g.add_node("relu", [y], name=f"{p}.relu3")
    x = b.g.add_node("global_avg_pool2d", [x], name="avgpool")
    x = b.g.add_node("flatten", [x], name="flatten")
    x = b.dense(x, num_classes, "fc", gain=1.0)
    b.g.set_outputs(x)
    b.g.infer_types()
    return _centre_head(b.g, "fc", seed) if centre_head else b.g


def dqn(input_size: int = 84, num_actions: int = 18, frames: int = 4, batch: int = 1, seed: int = 0) -> Graph:
    """The Atari DQN (Mnih et al. 2015): ``frames`` stacked ``input_size``-square frames,
    conv 32 8x8/4, conv 64 4x4/2, conv 64 3x3/1 (each with bias and ReLU), dense 512 + ReLU,
    dense to one Q-value per action."""
    _check_size("dqn", input_size, 36)
    b = _Builder("dqn", seed)
    x = b.g.add_input("frames", (batch, frames, input_size, input_size))
    for i, (c, k, s) in enumerate(((32, 8, 4), (64, 4, 2), (64, 3, 1)), start=1):
        x = b.g.add_node("relu", [b.conv(x, c, k, s, 0, f"conv{i}", bias=True)], name=f"relu{i}")
    x = b.g.add_node("flatten", [x], name="flatten")
    x = b.g.add_node("relu", [b.dense(x, 512, "fc1")], name="relu4")
    b.g.set_outputs(b.dense(x, num_actions, "q_values", gain=1.0))
    return b.g.infer_types()


def lstm_lm(vocab: int = 10000, hidden: int = 650, layers: int = 2, steps: int = 4, batch: int = 1,
            seed: int = 0) -> Graph:
    """The LSTM language model (Zaremba et al.'s medium PTB model: 2 layers, hidden 650),
    unrolled over ``steps`` timesteps from zero state.

    Inputs ``x0`` .. ``x{steps-1}`` are the embedded words ``[batch, hidden]`` (the
    embedding lookup is a gather the host does). Each cell computes its four gates as dense
    layers on ``concat(x_t, h_{t-1})`` (``i, f, o = sigmoid``, ``g = tanh``), then
    ``c = f * c + i * g`` and ``h = o * tanh(c)``; the top layer's ``h`` goes through the
    decoder (dense to ``vocab``). The output is every step's logits, ``[steps * batch, vocab]``.
    Weights are uniform in +-0.05 (the paper's initialisation)."""
    if min(vocab, hidden, layers, steps, batch) < 1:
        raise GraphError(f"lstm_lm: vocab, hidden, layers, steps and batch must be >= 1, got "
                         f"{vocab}, {hidden}, {layers}, {steps}, {batch}")
    b = _Builder("lstm_lm", seed)
    g = b.g

    def uniform(name: str, shape: tuple[int, ...]) -> str:
        return g.add_const(name, b.rng.uniform(-0.05, 0.05, shape).astype(np.float32))

    gates = {"i": "sigmoid", "f": "sigmoid", "g": "tanh", "o": "sigmoid"}
    w = {(ly, k): (uniform(f"l{ly}.w_{k}", (hidden, 2 * hidden)), uniform(f"l{ly}.b_{k}", (hidden,)))
         for ly in range(layers) for k in gates}
    zero = g.add_const("zero_state", np.zeros((batch, hidden), np.float32))
    h = [zero] * layers
    c = [zero] * layers
    dec_w, dec_b = uniform("decoder.weight", (vocab, hidden)), uniform("decoder.bias", (vocab,))
    logits = []
    for t in range(steps):
        x = g.add_input(f"x{t}", (batch, hidden))
        for ly in range(layers):
            p = f"t{t}.l{ly}"
            xh = g.add_node("concat", [x, h[ly]], name=f"{p}.xh", axis=1)
            a = {k: g.add_node(act, [g.add_node("dense", [xh, *w[(ly, k)]], name=f"{p}.{k}")], name=f"{p}.{k}.{act}")
                 for k, act in gates.items()}
            fc = g.add_node("mul", [a["f"], c[ly]], name=f"{p}.fc")
            c[ly] = g.add_node("add", [fc, g.add_node("mul", [a["i"], a["g"]], name=f"{p}.ig")], name=f"{p}.c")
            h[ly] = g.add_node("mul", [a["o"], g.add_node("tanh", [c[ly]], name=f"{p}.tanh_c")], name=f"{p}.h")
            x = h[ly]
        logits.append(g.add_node("dense", [x, dec_w, dec_b], name=f"t{t}.decoder"))
    g.set_outputs(g.add_node("concat", logits, name="logits", axis=0) if steps > 1 else logits[0])
    return g.infer_types()


MODELS: dict[str, Callable[..., Graph]] = {
    "resnet18": resnet18,
    "resnet_block": resnet_block,
    "mobilenet_v1": mobilenet_v1,
    "mlp": mlp,
    "dcgan_generator": dcgan_generator,
    "resnet50": resnet50,
    "dqn": dqn,
    "lstm_lm": lstm_lm,
}


def get(name: str, **kwargs) -> Graph:
    """Build a built-in model by name (``kwargs`` go to its builder)."""
    if name not in MODELS:
        raise GraphError(f"unknown model {name!r}; built-in models are {', '.join(MODELS)}")
    return MODELS[name](**kwargs)


def _index_bound(graph: Graph, name: str) -> int:
    """The extent an integer input indexes when only ``gather`` nodes read it (else 0);
    fused bodies are looked into (their inputs keep the outer names)."""
    readers: list[tuple[Graph, Any]] = []

    def scan(g: Graph) -> None:
        for n in g.nodes:
            body = n.attrs.get("body") if n.op == "fused" else None
            if isinstance(body, Graph):
                scan(body)
            elif name in n.inputs:
                readers.append((g, n))

    scan(graph)
    if not readers or any(n.op != "gather" or n.inputs[1] != name or n.inputs[0] == name for _, n in readers):
        return 0
    return min(g.type_of(n.inputs[0]).shape[n.attrs["axis"]] for g, n in readers)


def sample_input(
    graph: Graph, seed: int = 0, count: int | None = None
) -> dict[str, np.ndarray] | list[dict[str, np.ndarray]]:
    """Deterministic synthetic inputs: smooth random images for 4-D inputs, normals otherwise.

    With ``count`` a list of that many input dicts, else one dict.
    """
    rng = np.random.default_rng(seed)

    def one() -> dict[str, np.ndarray]:
        out = {}
        for k, t in graph.inputs.items():
            if t.dtype == "int32" and _index_bound(graph, k):  # indices (an embedding's tokens)
                out[k] = rng.integers(0, _index_bound(graph, k), t.shape).astype(np.int32)
                continue
            if t.dtype != "float32":
                raise GraphError(f"sample_input: input {k!r} is {t}; only float32 inputs (and int32 indices of a "
                                 "gather) are generated")
            if len(t.shape) == 4:
                n, c, h, w = t.shape
                lo = rng.standard_normal((n, c, max(1, h // 8), max(1, w // 8)))
                up = np.repeat(np.repeat(lo, -(-h // lo.shape[2]), axis=2), -(-w // lo.shape[3]), axis=3)[:, :, :h, :w]
                a = 0.7 * up + 0.3 * rng.standard_normal(t.shape)
            else:
                a = rng.standard_normal(t.shape)
            out[k] = a.astype(np.float32)
        return out

    if count is None:
        return one()
    return [one() for _ in range(count)]
