"""Graph nodes as topi operators: the one mapping of a (fused) float32 node onto
:mod:`vdla.compiler.topi`, shared by every target that runs topi operators (llvm, cuda).

:func:`check` says whether a node maps and :func:`declare` returns its placeholders and
output tensor; :func:`schedule` picks the target's schedule for it from :data:`SCHEDULES`,
one table keyed by the anchor op and, where the targets differ, the target kind.
Mapped today, all in float32 (the CPU part of a quantised model: the first conv, the pools,
the classifier; every node of a float model that has an operator):

* ``conv2d`` (groups 1, any stride/padding/dilation, optional bias) -> ``topi.conv2d_nchw``
  (+ ``bias_add``); depthwise (groups = input channels, weight ``[C*M, 1, KH, KW]``) ->
  ``topi.depthwise_conv2d_nchw``; other groupings (ResNeXt, RegNet) ->
  ``topi.group_conv2d_nchw``;
* on llvm, after :func:`..cpu_layout.to_nchwc`: ``conv2d_nchwc`` / ``depthwise_conv2d_nchwc`` ->
  ``topi.conv2d_NCHWc`` / ``topi.depthwise_conv2d_NCHWc`` with the NCHW[x]c schedules, and
  ``layout_transform`` -> ``topi.layout_transform`` (injective); the pools take rank-5 data;
  ``dense_blocked`` (its weight packed at compile time) -> ``topi.dense``; ``channel_shuffle`` ->
  ``topi.channel_shuffle`` (injective);
* on cuda, after :func:`.cuda.select_implementations` (a tuning log says so): ``conv2d_winograd``
  -> ``topi.conv2d_winograd_nchw`` (its weight transformed at compile time) and ``conv2d_1x1``
  -> the GEMM of ``conv2d_1x1.cuda`` on ``[C, H*W]`` views, each with the template's schedule;
* ``conv2d_transpose`` (strides, any padding, output_padding, optional bias; the graph op
  has no groups) -> ``topi.conv2d_transpose_nchw``;
* ``matmul`` (numpy's, batch dimensions broadcast) -> ``topi.batch_matmul``;
* ``dense`` (optional bias) -> ``topi.dense``;
* ``max_pool2d`` / ``avg_pool2d`` -> ``topi.pool2d``; ``global_avg_pool2d`` -> ``topi.global_pool``;
* ``softmax`` -> ``topi.softmax``; ``concat`` -> ``topi.concatenate``; ``transpose`` ->
  ``topi.transpose`` (``schedule_injective``); ``reduce_sum`` / ``_mean`` / ``_max`` / ``_min`` over
  any axes (global pooling as exporters write it) -> ``topi.reduce``, ``schedule_reduce``;
* ``relu`` / ``clip`` / ``add`` / ``sub`` / ``mul`` / ``div`` / ``maximum`` / ``minimum`` /
  ``batch_norm`` -> topi's element-wise operators, and ``exp`` / ``log`` / ``sqrt`` /
  ``tanh`` / ``sigmoid`` / ``floor`` / ``ceil`` / ``neg`` / ``abs`` / ``leaky_relu`` -> te's
  intrinsics, and the activations of :mod:`vdla.compiler.topi.activation` (hard-sigmoid,
  hard-swish, ELU, SELU, erf, GELU (erf and tanh forms), mish, softplus, ...), ``pow`` and
  ``prelu``, as a fused node's tail (inlined by the anchor's schedule) or alone (``schedule_injective``);
* ``layer_norm`` / ``instance_norm`` / ``group_norm`` / ``log_softmax`` -> :mod:`topi.norm <vdla.compiler.topi.norm>`
  (``schedule_norm``: a block per row on a GPU); ``lrn`` -> ``topi.lrn`` (``schedule_reduce``);
* ``slice`` -> ``topi.strided_slice``; ``pad`` (constant, reflect, edge; negative pads
  crop) -> ``topi.pad_nd``; ``take`` (constant indices, folded into the index arithmetic) ->
  ``topi.take``; ``gather`` (run-time int32 indices) -> ``topi.gather``; ``expand`` ->
  ``topi.broadcast_to``; ``resize`` (nearest, linear; ONNX's coordinate modes) ->
  ``topi.resize``; ``where`` (uint8 condition), ``equal`` / ``less`` / ``less_equal`` /
  ``greater`` / ``greater_equal`` and ``logical_not`` / ``_and`` / ``_or`` (uint8 0/1)
  -> ``topi.where`` / ``compare`` / ``logic``; ``cast`` to float32 (and float32 to int32);
  ``reshape`` / ``flatten`` inside a fused chain -> ``topi.reshape`` (alone they are views):
  all injective, anywhere in a chain (``schedule_injective``; concat and transpose too);
* ``argmax`` / ``argmin`` (int32 out) -> ``topi.argreduce`` and ``scatter_nd`` (int32
  indices) -> ``topi.scatter_nd``: ``schedule_reduce``. It and the pool schedules also
  take a reduction or pool after the injective chain feeding it (the fusion's rule 3).

A slice or one-index take that is a contiguous block of its input runs as a view instead
(:func:`..strategy.view_offset`), as flatten and reshape do. A rank-0 input (a scalar
constant) is passed as one element.

Integer nodes (quantize/requantize/pack/unpack, int8 convs) stay on the host's numpy
kernels, which are bit-exact by construction. A declaration depends only on the node's
structure, attributes and input types: nodes of equal :func:`signature` share one function.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import te, topi
from ...topi.activation import ACTIVATIONS, supports
from ..ir import Graph, Node
from ..ops.logic import COMPARE, LOGIC

__all__ = ["DECLARE", "SCHEDULES", "check", "declares", "declare", "schedule", "schedule_key", "signature", "arg_order"]

_REDUCE = ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min")
#: two statistics per row, then the output: a block per row on a GPU (topi.norm)
_NORMS = ("layer_norm", "instance_norm", "group_norm", "log_softmax")
#: anchors whose schedule inlines injective producers (TVM's schedule_reduce): a fused node may
#: have injective ops before one (the fusion's rule 3: a reduction and the chain feeding it)
_REDUCE_ANCHORS = (*_REDUCE, "argmax", "argmin", "max_pool2d", "avg_pool2d", "global_avg_pool2d")

#: the anchor op of a node -> its schedule's name in the target's ``schedules`` package, or
#: {target kind: name} where the targets differ. The ops with a schedule of their own are the
#: anchors: a fused node has at most one, first (or last, see :data:`_REDUCE_ANCHORS`); every
#: other op (element-wise, concat, transpose, slice ...) runs with ``schedule_injective``.
SCHEDULES: dict[str, str | dict[str, str]] = {
    "conv2d": "schedule_conv2d_nchw",
    # the CPU's NCHW[x]c layout (graph.cpu_layout rewrites llvm graphs onto it)
    "conv2d_nchwc": "schedule_conv2d_NCHWc",
    "depthwise_conv2d_nchwc": "schedule_depthwise_conv2d_NCHWc",
    "conv2d_winograd_nchwc": "schedule_conv2d_winograd_NCHWc",
    "depthwise_conv2d": "schedule_depthwise_conv2d_nchw",
    "group_conv2d": "schedule_group_conv2d_nchw",
    "conv2d_transpose": "schedule_conv2d_transpose_nchw",
    # the GPU's other convolution implementations (strategy.cuda rewrites a conv2d into them)
    "conv2d_winograd": {"cuda": "schedule_conv2d_winograd_nchw"},
    "conv2d_1x1": {"cuda": "schedule_conv2d_1x1"},
    "matmul": "schedule_batch_matmul",
    "dense": "schedule_dense",
    "dense_blocked": "schedule_dense",
    "max_pool2d": "schedule_pool",
    "avg_pool2d": "schedule_pool",
    # a GPU block reduces one (n, c) plane with the pool schedule; the CPU has its own
    "global_avg_pool2d": {"llvm": "schedule_global_pool", "cuda": "schedule_pool"},
    "softmax": "schedule_softmax",
    **{op: "schedule_norm" for op in _NORMS},
    "lrn": "schedule_reduce",  # a window over channels per element
    **{op: "schedule_reduce" for op in _REDUCE},
    # the extreme then its index, or the last update hitting each element: reductions per output
    **{op: "schedule_reduce" for op in ("argmax", "argmin", "scatter_nd")},
}

#: ops with a non-float32 output or inputs: op -> (output dtypes, {input position: dtypes});
#: every other op and position is float32 (integer nodes stay numpy-exact)
_DTYPES: dict[str, tuple[tuple[str, ...], dict[int, tuple[str, ...]]]] = {
    "argmax": (("int32",), {}), "argmin": (("int32",), {}),
    "gather": (("float32",), {1: ("int32",)}), "scatter_nd": (("float32",), {1: ("int32",)}),
    "where": (("float32",), {0: ("uint8",)}),
    **{op: (("uint8",), {0: ("float32", "int32"), 1: ("float32", "int32")}) for op in COMPARE},
    **{op: (("uint8",), {0: ("uint8",), 1: ("uint8",)}) for op in LOGIC},
    "cast": (("float32",), {0: ("float32", "int32", "uint8")}),
}


def _body(node: Node, graph: Graph) -> tuple[list[Node], dict[str, Any], list[str]]:
    """(nodes in order, value name -> TensorType of the outer/body inputs, output names)."""
    body = node.attrs.get("body") if node.op == "fused" else None
    if isinstance(body, Graph):
        types = {k: graph.type_of(k) for k in node.inputs}
        types.update(body.inputs)
        return body.topo_order(), types, list(body.outputs)
    return [node], {k: graph.type_of(k) for k in node.inputs}, [node.name]


def check(node: Node, graph: Graph) -> str | None:
    """None when :func:`declare` can map ``node``, else the reason it cannot."""
    nodes, types, outs = _body(node, graph)
    if len(outs) != 1:
        return "more than one output"
    anchors = [n for n in nodes if n.op in SCHEDULES]
    if len(anchors) > 1:
        return f"two anchors ({anchors[0].op}, {anchors[1].op}) in one node"
    if anchors and anchors[0] is not nodes[0] and not (anchors[0] is nodes[-1] and anchors[0].op in _REDUCE_ANCHORS):
        return f"{nodes[0].op} before the {anchors[0].op} anchor"
    for n in nodes:
        if n.op in ACTIVATIONS:
            why = supports(n.op, n.attrs)
            if why is not None:
                return why
        elif n.op not in DECLARE:
            return f"{n.op} has no topi operator"
        outs_ok, ins_ok = _DTYPES.get(n.op, (("float32",), {}))
        if n.op == "cast":  # float -> int32 too (an index computed in float); int -> int stays numpy
            src = types.get(n.inputs[0]) or next((m.type for m in nodes if m.name == n.inputs[0]), None)
            outs_ok = ("float32", "int32") if src is not None and src.dtype == "float32" else outs_ok
        if n.type is None or n.type.dtype not in outs_ok:
            return f"{n.op} on {n.type.dtype if n.type else '?'} (llvm kernels are float32; integers stay numpy-exact)"
        for pos, k in enumerate(n.inputs):
            if k in types and types[k].dtype not in ins_ok.get(pos, ("float32",)):
                return f"{types[k].dtype} input"
    return None


def _conv_kind(groups: int, channels: int, weight_in: int) -> str:
    """Which topi convolution a conv2d of ``groups`` over ``channels`` input channels (weight
    ``[O, weight_in, KH, KW]``) is: ``conv2d``, ``depthwise_conv2d`` (one group per channel,
    weight ``[C*M, 1, KH, KW]``) or ``group_conv2d``. Its declaration and its schedule both ask."""
    if groups == 1:
        return "conv2d"
    return "depthwise_conv2d" if groups == channels and weight_in == 1 else "group_conv2d"


def schedule_key(node: Node, graph: Graph) -> str:
    """The anchor op that picks a node's schedule (``depthwise_conv2d`` for a depthwise conv2d,
    ``group_conv2d`` for another grouping)."""
    nodes, types, _ = _body(node, graph)
    n = nodes[0]
    if n.op == "conv2d":
        x, w = (types[v] if v in types else graph.type_of(v) for v in n.inputs[:2])
        return _conv_kind(int(n.attrs.get("groups", 1)), int(x.shape[1]), int(w.shape[1]))
    last = nodes[-1].op  # a reduction after the injective chain feeding it (see check)
    return last if last in _REDUCE_ANCHORS and len(nodes) > 1 else nodes[0].op


def signature(node: Node, graph: Graph) -> str:
    """Equal signatures: one built function serves both nodes (names are renamed away)."""
    nodes, types, outs = _body(node, graph)
    names: dict[str, str] = {}

    def nm(v: str) -> str:
        if v not in names:
            t = types.get(v)
            names[v] = f"v{len(names)}:{t.dtype}{list(t.shape)}" if t is not None else f"v{len(names)}"
        return names[v]

    items = []
    for n in nodes:
        attrs = {k: v for k, v in n.attrs.items() if k not in ("body", "pattern", "kind", "anchor")}
        items.append([n.op, [nm(i) for i in n.inputs], repr(sorted(attrs.items())), nm(n.name)])
    return json.dumps([items, [nm(o) for o in outs]])


#: element-wise float functions built straight from te's intrinsics (the ONNX importer's math ops)
_TE_UNARY = ("exp", "log", "sqrt", "tanh", "sigmoid", "floor", "ceil", "neg", "abs", "leaky_relu")


def _unary(te: Any, op: str, x: Any, at: dict[str, Any]) -> Any:
    from ...topi.util import INJECTIVE

    if op == "neg":
        fn = lambda v: -v  # noqa: E731
    elif op == "leaky_relu":
        alpha = te.const(float(at["alpha"]), x.dtype)
        zero = te.const(0.0, x.dtype)
        fn = lambda v: te.select(v < zero, v * alpha, v)  # noqa: E731
    else:
        fn = getattr(te, op)
    return te.compute(x.shape, lambda *i: fn(x[i]), name=op, tag=INJECTIVE)


def _depthwise_weight(te: Any, w: Any, c: int) -> Any:
    """The graph's depthwise weight ``[C*M, 1, KH, KW]`` read as topi's ``[C, M, KH, KW]`` (the same
    element order: an injective stage the schedules inline)."""
    from ...topi.util import INJECTIVE

    o, _, kh, kw = (int(d.value) for d in w.shape)
    m = o // c
    return te.compute((c, m, kh, kw), lambda ci, mi, ky, kx: w[ci * m + mi, 0, ky, kx], name="weight_cm", tag=INJECTIVE)


#: how a node of one op is declared: (its input tensors, the node) -> its output tensor
Declare = Callable[[list[Any], Node], Any]

#: op -> its declaration, one row per graph op the topi strategy maps (check() refuses the rest)
DECLARE: dict[str, Declare] = {}


def declares(*ops: str) -> Callable[[Declare], Declare]:
    """Register a function as the declaration of ``ops`` in :data:`DECLARE`."""
    def deco(fn: Declare) -> Declare:
        for op in ops:
            DECLARE[op] = fn
        return fn
    return deco


@declares("conv2d")
def _conv2d(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    groups = int(at.get("groups", 1))
    c = int(xs[0].shape[1].value)
    kind = _conv_kind(groups, c, int(xs[1].shape[1].value))
    if kind == "depthwise_conv2d":  # (a channel multiplier M too)
        wv = _depthwise_weight(te, xs[1], c)
        y = topi.depthwise_conv2d_nchw(xs[0], wv, tuple(at["strides"]), tuple(at["padding"]), tuple(at["dilation"]))
    elif kind == "group_conv2d":
        y = topi.group_conv2d_nchw(xs[0], xs[1], tuple(at["strides"]), tuple(at["padding"]), tuple(at["dilation"]),
                                   groups)
    else:
        y = topi.conv2d_nchw(xs[0], xs[1], tuple(at["strides"]), tuple(at["padding"]), tuple(at["dilation"]))
    return topi.bias_add(y, xs[2]) if len(xs) == 3 else y


@declares("conv2d_nchwc")
def _conv2d_nchwc(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    y = topi.conv2d_NCHWc(xs[0], xs[1], tuple(at["strides"]), tuple(at["padding"]), tuple(at["dilation"]))
    return topi.add(y, xs[2]) if len(xs) == 3 else y


@declares("conv2d_winograd_nchwc")
def _conv2d_winograd_nchwc(xs: list[Any], n: Node) -> Any:
    y = topi.conv2d_winograd_NCHWc(xs[0], xs[1], tuple(n.attrs["padding"]), int(n.attrs["m"]))
    return topi.add(y, xs[2]) if len(xs) == 3 else y


@declares("depthwise_conv2d_nchwc")
def _depthwise_conv2d_nchwc(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    y = topi.depthwise_conv2d_NCHWc(xs[0], xs[1], tuple(at["strides"]), tuple(at["padding"]), tuple(at["dilation"]))
    return topi.add(y, xs[2]) if len(xs) == 3 else y


@declares("channel_shuffle")
def _channel_shuffle(xs: list[Any], n: Node) -> Any:
    return topi.channel_shuffle(xs[0], int(n.attrs["groups"]))


@declares("layout_transform")
def _layout_transform(xs: list[Any], n: Node) -> Any:
    return topi.layout_transform(xs[0], int(n.attrs["src"]), int(n.attrs["dst"]))


@declares("conv2d_transpose")
def _conv2d_transpose(xs: list[Any], n: Node) -> Any:
    at = n.attrs  # weight [C, O, KH, KW]; the graph op has no groups or dilation (the importer's N-D op has)
    y = topi.conv2d_transpose_nchw(xs[0], xs[1], tuple(at["strides"]), tuple(at["padding"]),
                                   tuple(at["output_padding"]))
    return topi.bias_add(y, xs[2]) if len(xs) == 3 else y


@declares("conv2d_winograd")  # the GPU's Winograd convolution (strategy.cuda), its weight transformed
def _conv2d_winograd(xs: list[Any], n: Node) -> Any:
    from ...topi.winograd import conv2d_winograd_nchw

    y = conv2d_winograd_nchw(xs[0], xs[1], tuple(n.attrs["padding"]), int(n.attrs["m"]))
    return topi.bias_add(y, xs[2]) if len(xs) == 3 else y


@declares("conv2d_1x1")  # the GPU's 1x1 convolution as a GEMM on [C, H*W] views (strategy.cuda)
def _conv2d_1x1(xs: list[Any], n: Node) -> Any:
    from ...targets.cuda.schedules.matmul import conv2d_1x1
    from ...topi.util import INJECTIVE

    h, w = (int(v) for v in n.attrs["size"])
    y = conv2d_1x1(xs[0], xs[1], (h, w))
    if len(xs) < 3:
        return y
    b = xs[2]
    return te.compute(y.shape, lambda f, p: y[f, p] + b[f], name="bias_add", tag=INJECTIVE)


@declares("matmul")
def _matmul(xs: list[Any], n: Node) -> Any:
    return topi.batch_matmul(xs[0], xs[1])


@declares("dense", "dense_blocked")  # dense_blocked: the weight packed once, (O/bn, K, bn)
def _dense(xs: list[Any], n: Node) -> Any:
    return topi.dense(xs[0], xs[1], xs[2] if len(xs) == 3 else None)


@declares("max_pool2d", "avg_pool2d")
def _pool2d(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    kind = "max" if n.op == "max_pool2d" else "avg"
    return topi.pool2d(xs[0], tuple(at["kernel"]), tuple(at["strides"]), tuple(at["padding"]), kind,
                       bool(at.get("count_include_pad", False)))


@declares("global_avg_pool2d")
def _global_avg_pool2d(xs: list[Any], n: Node) -> Any:
    return topi.global_pool(xs[0], "avg")


@declares("softmax")
def _softmax(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    return topi.softmax(xs[0], int(at["axis"]))


@declares("log_softmax")
def _log_softmax(xs: list[Any], n: Node) -> Any:
    return topi.log_softmax(xs[0], int(n.attrs["axis"]))


@declares("layer_norm")
def _layer_norm(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    return topi.layer_norm(xs[0], xs[1], xs[2] if len(xs) > 2 else None, int(at["axis"]), float(at["epsilon"]))


@declares("instance_norm")
def _instance_norm(xs: list[Any], n: Node) -> Any:
    return topi.instance_norm(*xs, epsilon=float(n.attrs["epsilon"]))


@declares("group_norm")
def _group_norm(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    return topi.group_norm(*xs, int(at["num_groups"]), float(at["epsilon"]))


@declares("lrn")
def _lrn(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    return topi.lrn(xs[0], int(at["size"]), float(at["alpha"]), float(at["beta"]), float(at["bias"]))


@declares("relu")
def _relu(xs: list[Any], n: Node) -> Any:
    return topi.relu(xs[0])


@declares("clip")
def _clip(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    if at["min"] is None:
        return topi.minimum(xs[0], float(at["max"]) if at["max"] is not None else np.inf)
    if at["max"] is None:
        return topi.maximum(xs[0], float(at["min"]))
    return topi.clip(xs[0], float(at["min"]), float(at["max"]))


_BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "maximum": "maximum",
           "minimum": "minimum", "pow": "power", "prelu": "prelu"}


@declares(*_BINARY)
def _binary(xs: list[Any], n: Node) -> Any:
    return getattr(topi, _BINARY[n.op])(xs[0], xs[1])


@declares("batch_norm")
def _batch_norm(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    return topi.batch_norm_inference(*xs, epsilon=float(at["epsilon"]))


@declares("concat")
def _concat(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    return topi.concatenate(xs, int(at["axis"]))


@declares("transpose")
def _transpose(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    return topi.transpose(xs[0], at["perm"])


@declares("reshape", "flatten")
def _reshape(xs: list[Any], n: Node) -> Any:
    # alone a view (strategy.VIEW_OPS); inside a fused chain an index remap the chain inlines
    assert n.type is not None
    return topi.reshape(xs[0], n.type.shape)


@declares(*_REDUCE)
def _reduce(xs: list[Any], n: Node) -> Any:
    return topi.reduce(xs[0], n.op.removeprefix("reduce_"), n.attrs["axes"], bool(n.attrs["keepdims"]))


@declares(*_TE_UNARY)
def _te_unary(xs: list[Any], n: Node) -> Any:
    return _unary(te, n.op, xs[0], n.attrs)


@declares(*ACTIVATIONS)
def _activation(xs: list[Any], n: Node) -> Any:
    return topi.activation(xs[0], n.op, n.attrs)


@declares("slice")
def _slice(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    return topi.strided_slice(xs[0], at["begin"], at["end"], at["step"])


@declares("pad")
def _pad(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    return topi.pad_nd(xs[0], at["pads"], at["mode"], float(at["value"]))


@declares("take")
def _take(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    return topi.take(xs[0], at["indices"], at["ishape"], int(at["axis"]))


@declares("gather")
def _gather(xs: list[Any], n: Node) -> Any:
    return topi.gather(xs[0], xs[1], int(n.attrs["axis"]))


@declares("expand")
def _expand(xs: list[Any], n: Node) -> Any:
    assert n.type is not None
    return topi.broadcast_to(xs[0], n.type.shape)


@declares("where")
def _where(xs: list[Any], n: Node) -> Any:
    return topi.where(*xs)


@declares(*COMPARE)
def _compare(xs: list[Any], n: Node) -> Any:
    return topi.compare(n.op, xs[0], xs[1])


@declares(*LOGIC)
def _logic(xs: list[Any], n: Node) -> Any:
    return topi.logic(n.op, *xs)


@declares("cast")
def _cast(xs: list[Any], n: Node) -> Any:
    from ...topi.util import INJECTIVE

    x = xs[0]
    return te.compute(x.shape, lambda *i: x[i].astype(n.attrs["dtype"]), name="cast", tag=INJECTIVE)


@declares("argmax", "argmin")
def _argreduce(xs: list[Any], n: Node) -> Any:
    at = n.attrs
    return topi.argreduce(xs[0], n.op, int(at["axis"]), bool(at["keepdims"]), bool(at["select_last_index"]))


@declares("resize")
def _resize(xs: list[Any], n: Node) -> Any:
    from ..ops.image import resize_scales

    at = n.attrs
    scales = resize_scales(at, tuple(int(d.value) for d in xs[0].shape))
    return topi.resize(xs[0], at["sizes"], scales, at["mode"], at["coord_mode"], at["nearest_mode"])


@declares("scatter_nd")
def _scatter_nd(xs: list[Any], n: Node) -> Any:
    return topi.scatter_nd(*xs)


def declare(node: Node, graph: Graph) -> tuple[list[Any], list[str], Any] | str:
    """``node`` as topi operators: (placeholders, the outer values they stand for, the output
    tensor), or why it cannot be."""
    if node.op in ("lstm_scan", "gru_scan"):
        return f"{node.op} is built with the TE scan (llvm only), not from topi operators"

    why = check(node, graph)
    if why is not None:
        return why
    nodes, types, outs = _body(node, graph)
    env: dict[str, Any] = {}
    args: list[str] = []
    placeholders: list[Any] = []

    def get(v: str) -> Any:
        if v not in env:
            t = types[v] if v in types else graph.type_of(v)
            ph = te.placeholder(tuple(t.shape) or (1,), t.dtype, name=f"a{len(args)}")
            # a rank-0 value (a scalar constant) is passed as one element, as numpy's
            # ascontiguousarray and the GPU copies make it; read as a scalar (inlined)
            env[v] = ph if t.shape else te.compute((), lambda: ph[0], name=f"a{len(args)}_scalar", tag="injective")
            args.append(v)
            placeholders.append(ph)
        return env[v]

    for n in nodes:
        xs = [env[i] if i in env else get(i) for i in n.inputs]
        env[n.name] = DECLARE[n.op](xs, n)
    return placeholders, args, env[outs[0]]


def schedule(node: Node, graph: Graph, out: Any, kind: str) -> Any:
    """The ``kind`` target's schedule of ``node`` whose :func:`declare` d output is ``out`` (the
    anchor's schedule: it asks ``apply_history_best`` for its workload's tuned knobs)."""
    name = SCHEDULES.get(schedule_key(node, graph), "schedule_injective")
    if isinstance(name, dict):
        if kind not in name:
            raise ValueError(f"{schedule_key(node, graph)} has no {kind} schedule (only {', '.join(name)})")
        name = name[kind]
    schedules = importlib.import_module(f"vdla.compiler.targets.{kind}.schedules")
    return getattr(schedules, name)(out)


def arg_order(node: Node, graph: Graph) -> list[str]:
    """The outer values in the order :func:`declare` makes placeholders for them."""
    nodes, _, _ = _body(node, graph)
    seen: list[str] = []
    made: set[str] = set()
    for n in nodes:
        for i in n.inputs:
            if i not in made and i not in seen:
                seen.append(i)
        made.add(n.name)
    return seen
