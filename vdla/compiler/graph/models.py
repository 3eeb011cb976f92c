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
  op): each gate is a dense layer on ``[x_t, h_{t-1}]``, so every matmul is a GEMM;
* :func:`mobilenet_v2`, :func:`shufflenet_v2` (x0.5), :func:`squeezenet1_1`, :func:`mnasnet0_5` —
  torchvision's mobile classifiers, layer for layer (inverted residuals with depthwise convs,
  channel split and shuffle as slice / reshape / transpose, fire modules with ceil-mode pools);
* :func:`mobilenet_v3_small` — torchvision's MobileNetV3-Small (hard-swish, squeeze-excite with a
  hard-sigmoid gate, 5x5 depthwise).

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
           "mobilenet_v2", "shufflenet_v2", "squeezenet1_1", "mnasnet0_5", "mobilenet_v3_small", "MODELS", "get", "sample_input"]


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


def _head(b: _Builder, x: str, num_classes: int) -> str:
    """The classifier of the ImageNet CNNs: global average pool, flatten, FC ``fc``."""
    x = b.g.add_node("global_avg_pool2d", [x], name="avgpool")
    x = b.g.add_node("flatten", [x], name="flatten")
    return b.dense(x, num_classes, "fc", gain=1.0)


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
    b.g.set_outputs(_head(b, x, num_classes))
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
    b.g.set_outputs(_head(b, x, num_classes))
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
    b.g.set_outputs(_head(b, x, num_classes))
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


def _make_divisible(v: float, divisor: int = 8) -> int:
    """torchvision's ``_make_divisible``: ``v`` rounded to a multiple of ``divisor``, never
    more than 10 % below ``v``."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def _relu6(b: _Builder, x: str, name: str) -> str:
    return b.g.add_node("clip", [x], name=name, min=0.0, max=6.0)


def _inverted_residual(b: _Builder, x: str, cout: int, k: int, stride: int, expand: int, p: str,
                       act: Callable[[_Builder, str, str], str]) -> str:
    """MobileNet v2 / MNASNet's block: 1x1 expand (skipped at ratio 1) + BN + act, kxk
    depthwise + BN + act, 1x1 project + BN; the input added when the shape is kept. The
    projection's batch norm starts small (gamma 0.2-0.5) where a residual follows, so the
    stacked blocks keep activations in range."""
    cin = b.g.type_of(x).shape[1]
    hidden = cin * expand
    y = x
    if expand != 1:
        y = act(b, b.bn(b.conv(y, hidden, 1, 1, 0, f"{p}.expand"), hidden, f"{p}.expand.bn"), f"{p}.expand.act")
    y = act(b, b.bn(b.conv(y, hidden, k, stride, k // 2, f"{p}.dw", groups=hidden), hidden, f"{p}.dw.bn"),
            f"{p}.dw.act")
    y = b.bn(b.conv(y, cout, 1, 1, 0, f"{p}.project"), cout, f"{p}.project.bn")
    if stride == 1 and cin == cout:
        b.g.consts[f"{p}.project.bn.gamma"] = b.rng.uniform(0.2, 0.5, cout).astype(np.float32)
        y = b.g.add_node("add", [y, x], name=f"{p}.add")
    return y


# (expansion t, output channels c, repeats n, first stride s) of MobileNet v2's stages (torchvision)
_MOBILENET_V2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                 (6, 320, 1, 1)]


def mobilenet_v2(
    input_size: int = 224,
    num_classes: int = 1000,
    batch: int = 1,
    width_mult: float = 1.0,
    seed: int = 0,
    centre_head: bool = False,
) -> Graph:
    """MobileNet v2 as torchvision builds it: conv 3x3/2 to 32, 17 inverted residuals
    (:data:`_MOBILENET_V2`; ReLU6 as ``clip(0, 6)``, 3x3 depthwise), 1x1 conv to 1280,
    global pool, FC. ``width_mult`` scales the channels (rounded to multiples of 8)."""
    _check_size("mobilenet_v2", input_size, 32)
    b = _Builder("mobilenet_v2", seed)
    c0 = _make_divisible(32 * width_mult)
    last = _make_divisible(1280 * max(1.0, width_mult))
    x = b.g.add_input("data", (batch, 3, input_size, input_size))
    x = _relu6(b, b.bn(b.conv(x, c0, 3, 2, 1, "conv1"), c0, "bn1"), "relu1")
    i = 0
    for t, c, n, s in _MOBILENET_V2:
        for r in range(n):
            x = _inverted_residual(b, x, _make_divisible(c * width_mult), 3, s if r == 0 else 1, t, f"block{i}",
                                   _relu6)
            i += 1
    x = _relu6(b, b.bn(b.conv(x, last, 1, 1, 0, "conv_last"), last, "conv_last.bn"), "conv_last.relu")
    b.g.set_outputs(_head(b, x, num_classes))
    b.g.infer_types()
    return _centre_head(b.g, "fc", seed) if centre_head else b.g


#: ShuffleNet v2's stage output channels (conv1, stage 2-4, conv5) by width (torchvision's x0.5 ... x2.0)
_SHUFFLENET_V2 = {
    "0.5": (24, 48, 96, 192, 1024),
    "1.0": (24, 116, 232, 464, 1024),
    "1.5": (24, 176, 352, 704, 1024),
    "2.0": (24, 244, 488, 976, 2048),
}


def shufflenet_v2(
    input_size: int = 224,
    num_classes: int = 1000,
    batch: int = 1,
    width: str = "0.5",
    seed: int = 0,
    centre_head: bool = False,
) -> Graph:
    """ShuffleNet v2 as torchvision builds it (``width`` "0.5" is ``shufflenet_v2_x0_5``):
    conv 3x3/2 + BN + ReLU, max-pool 3x3/2, stages of 4, 8 and 4 units, conv 1x1 to
    1024, global pool, FC. A stride-2 unit runs two branches on the whole input (depthwise
    3x3/2 + BN, 1x1 + BN + ReLU; and 1x1 + BN + ReLU, depthwise 3x3/2 + BN, 1x1 + BN +
    ReLU); a stride-1 unit splits the channels in halves (two ``slice`` nodes), keeps the
    first and runs the second branch on the other. The halves are concatenated and the
    channels shuffled (reshape to ``[N, 2, C/2, H, W]``, transpose, reshape back)."""
    _check_size("shufflenet_v2", input_size, 32)
    if width not in _SHUFFLENET_V2:
        raise GraphError(f"shufflenet_v2: width {width!r} is not one of {', '.join(_SHUFFLENET_V2)}")
    chans = _SHUFFLENET_V2[width]
    b = _Builder("shufflenet_v2", seed)
    g = b.g

    def cbr(x: str, c: int, k: int, s: int, p: str, groups: int = 1, relu: bool = True) -> str:
        y = b.bn(b.conv(x, c, k, s, k // 2, p, groups=groups), c, f"{p}.bn")
        return g.add_node("relu", [y], name=f"{p}.relu") if relu else y

    def split(x: str, lo: int, hi: int, name: str) -> str:
        n, _, h, w = g.type_of(x).shape
        return g.add_node("slice", [x], name=name, begin=(0, lo, 0, 0), end=(n, hi, h, w), step=(1, 1, 1, 1))

    x = g.add_input("data", (batch, 3, input_size, input_size))
    x = cbr(x, chans[0], 3, 2, "conv1")
    x = g.add_node("max_pool2d", [x], name="maxpool", kernel=3, strides=2, padding=1)
    for stage, (repeats, cout) in enumerate(zip((4, 8, 4), chans[1:4]), start=2):
        bf = cout // 2
        for u in range(repeats):
            p = f"stage{stage}.{u}"
            cin = g.type_of(x).shape[1]
            if u == 0:  # stride 2: both branches on the whole input
                left = cbr(x, cin, 3, 2, f"{p}.branch1.dw", groups=cin, relu=False)
                left = cbr(left, bf, 1, 1, f"{p}.branch1.pw")
                right = x
                stride = 2
            else:
                left, right = split(x, 0, cin // 2, f"{p}.split0"), split(x, cin // 2, cin, f"{p}.split1")
                stride = 1
            right = cbr(right, bf, 1, 1, f"{p}.branch2.pw1")
            right = cbr(right, bf, 3, stride, f"{p}.branch2.dw", groups=bf, relu=False)
            right = cbr(right, bf, 1, 1, f"{p}.branch2.pw2")
            y = g.add_node("concat", [left, right], name=f"{p}.concat", axis=1)
            n, c, h, w = g.type_of(y).shape
            y = g.add_node("reshape", [y], name=f"{p}.shuffle.split", shape=(n, 2, c // 2, h, w))
            y = g.add_node("transpose", [y], name=f"{p}.shuffle.transpose", perm=(0, 2, 1, 3, 4))
            x = g.add_node("reshape", [y], name=f"{p}.shuffle", shape=(n, c, h, w))
    x = cbr(x, chans[4], 1, 1, "conv5")
    g.set_outputs(_head(b, x, num_classes))
    g.infer_types()
    return _centre_head(g, "fc", seed) if centre_head else g


def _ceil_pool(b: _Builder, x: str, name: str, kernel: int = 3, stride: int = 2) -> str:
    """``max_pool2d`` with PyTorch's ``ceil_mode=True`` (no padding): the partial window at
    the bottom / right edge is kept, as end padding of -inf (the max pool's padding value)."""
    _, _, h, w = b.g.type_of(x).shape

    def extra(d: int) -> int:
        out = -(-(d - kernel) // stride) + 1  # ceil
        return max(0, (out - 1) * stride + kernel - d)

    return b.g.add_node("max_pool2d", [x], name=name, kernel=kernel, strides=stride,
                        padding=(0, 0, extra(h), extra(w)))


# (squeeze, expand 1x1, expand 3x3) of SqueezeNet 1.1's fire modules, "pool" a ceil-mode max-pool
_SQUEEZENET_1_1: list[tuple[int, int, int] | str] = [
    "pool", (16, 64, 64), (16, 64, 64), "pool", (32, 128, 128), (32, 128, 128), "pool",
    (48, 192, 192), (48, 192, 192), (64, 256, 256), (64, 256, 256),
]


def squeezenet1_1(input_size: int = 224, num_classes: int = 1000, batch: int = 1, seed: int = 0) -> Graph:
    """SqueezeNet 1.1 as torchvision builds it: conv 3x3/2 to 64 (bias, no padding) + ReLU,
    then fire modules (squeeze 1x1 + ReLU; expand 1x1 and 3x3, each + ReLU, concatenated on
    the channels) between three 3x3/2 max-pools in ceil mode (:func:`_ceil_pool`), a 1x1
    conv to the classes + ReLU, global pool, flatten. Every conv has a bias; no batch norm."""
    _check_size("squeezenet1_1", input_size, 32)
    b = _Builder("squeezenet1_1", seed)
    g = b.g

    def conv_relu(x: str, c: int, k: int, s: int, pad: int, p: str, gain: float = 2.0) -> str:
        cin = g.type_of(x).shape[1]
        w = b.weight(f"{p}.weight", (c, cin, k, k), cin * k * k, gain)
        bias = g.add_const(f"{p}.bias", b.rng.normal(0, 0.05, c).astype(np.float32))
        return g.add_node("relu", [g.add_node("conv2d", [x, w, bias], name=p, strides=s, padding=pad)],
                          name=f"{p}.relu")

    x = g.add_input("data", (batch, 3, input_size, input_size))
    x = conv_relu(x, 64, 3, 2, 0, "conv1")
    pools = fires = 0
    for item in _SQUEEZENET_1_1:
        if item == "pool":
            pools += 1
            x = _ceil_pool(b, x, f"maxpool{pools}")
            continue
        sq, e1, e3 = item
        fires += 1
        p = f"fire{fires}"
        s = conv_relu(x, sq, 1, 1, 0, f"{p}.squeeze")
        x = g.add_node("concat", [conv_relu(s, e1, 1, 1, 0, f"{p}.expand1x1"),
                                  conv_relu(s, e3, 3, 1, 1, f"{p}.expand3x3")], name=f"{p}.concat", axis=1)
    x = conv_relu(x, num_classes, 1, 1, 0, "classifier", gain=1.0)
    x = g.add_node("global_avg_pool2d", [x], name="avgpool")
    g.set_outputs(g.add_node("flatten", [x], name="flatten"))
    return g.infer_types()


# (kernel, first stride, expansion, repeats) of MNASNet's six stacks (torchvision)
_MNASNET = [(3, 2, 3, 3), (5, 2, 3, 3), (5, 2, 6, 3), (3, 1, 6, 2), (5, 2, 6, 4), (3, 1, 6, 1)]


def _mnasnet_depths(alpha: float) -> list[int]:
    """torchvision's ``_get_depths``: the channel counts scaled by ``alpha``, rounded to multiples
    of 8 (never below 90 % of the scaled value): [16, 8, 16, 24, 40, 48, 96, 160] at 0.5."""
    return [_make_divisible(d * alpha) for d in (32, 16, 24, 40, 80, 96, 192, 320)]


def mnasnet0_5(
    input_size: int = 224,
    num_classes: int = 1000,
    batch: int = 1,
    alpha: float = 0.5,
    seed: int = 0,
    centre_head: bool = False,
) -> Graph:
    """MNASNet as torchvision builds it (``alpha`` 0.5 is ``mnasnet0_5``): conv 3x3/2 + BN +
    ReLU, a depthwise-separable block without skip (depthwise 3x3 + BN + ReLU, 1x1 + BN),
    six stacks of inverted residuals (:data:`_MNASNET`: 3x3 and 5x5 depthwise, ReLU), 1x1
    conv to 1280 + BN + ReLU, global pool, FC."""
    _check_size("mnasnet0_5", input_size, 32)
    b = _Builder("mnasnet0_5", seed)
    d = _mnasnet_depths(alpha)

    def relu(b: _Builder, x: str, name: str) -> str:
        return b.g.add_node("relu", [x], name=name)

    x = b.g.add_input("data", (batch, 3, input_size, input_size))
    x = relu(b, b.bn(b.conv(x, d[0], 3, 2, 1, "conv1"), d[0], "bn1"), "relu1")
    x = relu(b, b.bn(b.conv(x, d[0], 3, 1, 1, "sep.dw", groups=d[0]), d[0], "sep.dw.bn"), "sep.dw.relu")
    x = b.bn(b.conv(x, d[1], 1, 1, 0, "sep.pw"), d[1], "sep.pw.bn")
    for st, ((k, s, t, n), c) in enumerate(zip(_MNASNET, d[2:]), start=1):
        for r in range(n):
            x = _inverted_residual(b, x, c, k, s if r == 0 else 1, t, f"stack{st}.{r}", relu)
    x = relu(b, b.bn(b.conv(x, 1280, 1, 1, 0, "conv_last"), 1280, "conv_last.bn"), "conv_last.relu")
    b.g.set_outputs(_head(b, x, num_classes))
    b.g.infer_types()
    return _centre_head(b.g, "fc", seed) if centre_head else b.g


#: MobileNetV3-Small's blocks (torchvision): kernel, expanded channels, output channels, squeeze-excite,
#: activation ("RE" ReLU, "HS" hard-swish), stride
_MOBILENET_V3_SMALL = [(3, 16, 16, True, "RE", 2), (3, 72, 24, False, "RE", 2), (3, 88, 24, False, "RE", 1),
                       (5, 96, 40, True, "HS", 2), (5, 240, 40, True, "HS", 1), (5, 240, 40, True, "HS", 1),
                       (5, 120, 48, True, "HS", 1), (5, 144, 48, True, "HS", 1), (5, 288, 96, True, "HS", 2),
                       (5, 576, 96, True, "HS", 1), (5, 576, 96, True, "HS", 1)]


def _act(b: _Builder, x: str, kind: str, name: str) -> str:
    return b.g.add_node("relu" if kind == "RE" else "hard_swish", [x], name=name)


def _squeeze_excite(b: _Builder, x: str, p: str) -> str:
    """torchvision's SqueezeExcitation: global mean, 1x1 conv (bias) + ReLU to a quarter of the
    channels (a multiple of 8), 1x1 conv (bias) + hard-sigmoid, the input scaled by that gate."""
    c = b.g.type_of(x).shape[1]
    s = b.g.add_node("global_avg_pool2d", [x], name=f"{p}.pool")
    s = b.g.add_node("relu", [b.conv(s, _make_divisible(c // 4, 8), 1, 1, 0, f"{p}.fc1", bias=True)], name=f"{p}.relu")
    gate = b.g.add_node("hard_sigmoid", [b.conv(s, c, 1, 1, 0, f"{p}.fc2", bias=True)], name=f"{p}.gate",
                        alpha=1 / 6, beta=0.5)
    return b.g.add_node("mul", [x, gate], name=f"{p}.scale")


def mobilenet_v3_small(
    input_size: int = 224,
    num_classes: int = 1000,
    batch: int = 1,
    seed: int = 0,
    centre_head: bool = False,
) -> Graph:
    """MobileNetV3-Small as torchvision builds it: conv 3x3/2 to 16 + BN + hard-swish, eleven
    inverted residuals (:data:`_MOBILENET_V3_SMALL`: 3x3 and 5x5 depthwise, ReLU or hard-swish,
    squeeze-excite with a hard-sigmoid gate in nine), 1x1 conv to 576 + BN + hard-swish, global
    pool, FC to 1024 + hard-swish, FC."""
    _check_size("mobilenet_v3_small", input_size, 32)
    b = _Builder("mobilenet_v3_small", seed)
    x = b.g.add_input("data", (batch, 3, input_size, input_size))
    x = _act(b, b.bn(b.conv(x, 16, 3, 2, 1, "conv1"), 16, "bn1"), "HS", "act1")
    for i, (k, exp, cout, se, act, stride) in enumerate(_MOBILENET_V3_SMALL):
        p, cin, y = f"block{i}", b.g.type_of(x).shape[1], x
        if exp != cin:
            y = _act(b, b.bn(b.conv(y, exp, 1, 1, 0, f"{p}.expand"), exp, f"{p}.expand.bn"), act, f"{p}.expand.act")
        y = _act(b, b.bn(b.conv(y, exp, k, stride, k // 2, f"{p}.dw", groups=exp), exp, f"{p}.dw.bn"), act,
                 f"{p}.dw.act")
        if se:
            y = _squeeze_excite(b, y, f"{p}.se")
        y = b.bn(b.conv(y, cout, 1, 1, 0, f"{p}.project"), cout, f"{p}.project.bn")
        if stride == 1 and cin == cout:
            b.g.consts[f"{p}.project.bn.gamma"] = b.rng.uniform(0.2, 0.5, cout).astype(np.float32)
            y = b.g.add_node("add", [y, x], name=f"{p}.add")
        x = y
    x = _act(b, b.bn(b.conv(x, 576, 1, 1, 0, "conv_last"), 576, "conv_last.bn"), "HS", "conv_last.act")
    x = b.g.add_node("flatten", [b.g.add_node("global_avg_pool2d", [x], name="avgpool")], name="flatten")
    x = b.g.add_node("hard_swish", [b.dense(x, 1024, "fc1")], name="fc1.act")
    b.g.set_outputs(b.dense(x, num_classes, "fc", gain=1.0))
    b.g.infer_types()
    return _centre_head(b.g, "fc", seed) if centre_head else b.g


MODELS: dict[str, Callable[..., Graph]] = {
    "resnet18": resnet18,
    "resnet_block": resnet_block,
    "mobilenet_v1": mobilenet_v1,
    "mlp": mlp,
    "dcgan_generator": dcgan_generator,
    "resnet50": resnet50,
    "dqn": dqn,
    "lstm_lm": lstm_lm,
    "mobilenet_v2": mobilenet_v2,
    "shufflenet_v2": shufflenet_v2,
    "squeezenet1_1": squeezenet1_1,
    "mnasnet0_5": mnasnet0_5,
    "mobilenet_v3_small": mobilenet_v3_small,
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
