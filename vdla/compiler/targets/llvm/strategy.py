"""The CPU strategy: graph nodes (or fused chains) lowered onto :mod:`vdla.compiler.topi` for ``llvm``.

:func:`lower` maps one node onto topi operators and this target's schedules
(:mod:`.schedules`), or returns why it cannot be (the node then runs on the graph's numpy
kernels, with that reason recorded). The graph executor calls it for every CPU node. Mapped today, all in
float32 (the CPU part of a quantised model: the first conv, the pools, the classifier):

* ``conv2d`` (groups 1, any stride/padding/dilation, optional bias) -> ``topi.conv2d_nchw``
  (+ ``bias_add``), ``schedule_conv2d_nchw``; depthwise (groups = input channels, weight
  ``[C*M, 1, KH, KW]``) -> ``topi.depthwise_conv2d_nchw``, ``schedule_depthwise_conv2d_nchw``;
* ``dense`` (optional bias) -> ``topi.dense``, ``schedule_dense``;
* ``max_pool2d`` / ``avg_pool2d`` -> ``topi.pool2d``, ``schedule_pool``;
* ``global_avg_pool2d`` -> ``topi.global_pool``, ``schedule_global_pool``;
* ``softmax`` -> ``topi.softmax``, ``schedule_softmax``;
* ``relu`` / ``clip`` / ``add`` / ``sub`` / ``mul`` / ``div`` / ``maximum`` / ``minimum`` /
  ``batch_norm`` -> topi's element-wise operators, and ``exp`` / ``log`` / ``sqrt`` /
  ``tanh`` / ``sigmoid`` / ``floor`` / ``ceil`` / ``neg`` / ``abs`` / ``leaky_relu`` -> te's
  intrinsics, as a fused node's tail (inlined by the anchor's schedule) or alone
  (``schedule_injective``).

``lstm_scan`` / ``gru_scan`` (an LSTM's / GRU's recurrence) are built with the TE ``scan``.

Integer nodes (quantize/requantize/pack/unpack, int8 convs) stay on numpy, which is
bit-exact by construction; flatten/reshape/concat are copies and stay there too.

A built function depends only on the node's structure, attributes and input types, so
:class:`LlvmCache` shares one function between nodes of equal :func:`signature`. The JIT
functions are not serialisable: a loaded model recompiles them (a few ms each).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...graph.ir import Graph, Node

__all__ = ["LlvmKernel", "LlvmCache", "declare", "lower", "schedule", "schedule_key", "signature"]

_ELEMWISE = ("relu", "clip", "add", "sub", "mul", "batch_norm", "div", "maximum", "minimum",
             "exp", "log", "sqrt", "tanh", "sigmoid", "floor", "ceil", "neg", "abs", "leaky_relu")
_ANCHORS = ("conv2d", "dense", "max_pool2d", "avg_pool2d", "global_avg_pool2d", "softmax")
_SCHEDULE = {
    "conv2d": "schedule_conv2d_nchw",
    "depthwise_conv2d": "schedule_depthwise_conv2d_nchw",
    "dense": "schedule_dense",
    "max_pool2d": "schedule_pool",
    "avg_pool2d": "schedule_pool",
    "global_avg_pool2d": "schedule_global_pool",
    "softmax": "schedule_softmax",
}


@dataclass
class LlvmKernel:
    """A node's llvm function: ``args`` are the outer values passed in order, then the output."""

    func: Any
    args: list[str]
    out_shape: tuple[int, ...]
    out_dtype: str

    def __call__(self, env: Any) -> np.ndarray:
        out = np.empty(self.out_shape, self.out_dtype)
        arrs: list[np.ndarray] = []
        for a in self.args:  # the module refuses aliased arguments (equal constants may share one array)
            v = np.ascontiguousarray(env[a])
            arrs.append(v.copy() if any(np.may_share_memory(v, u) for u in arrs) else v)
        self.func(*arrs, out)
        return out


def _body(node: Node, graph: Graph) -> tuple[list[Node], dict[str, Any], list[str]]:
    """(nodes in order, value name -> TensorType of the outer/body inputs, output names)."""
    body = node.attrs.get("body") if node.op == "fused" else None
    if isinstance(body, Graph):
        types = {k: graph.type_of(k) for k in node.inputs}
        types.update(body.inputs)
        return body.topo_order(), types, list(body.outputs)
    return [node], {k: graph.type_of(k) for k in node.inputs}, [node.name]


def check(node: Node, graph: Graph) -> str | None:
    """None when :func:`lower` can map ``node``, else the reason it cannot."""
    if node.op in ("lstm_scan", "gru_scan"):
        return None
    nodes, types, outs = _body(node, graph)
    if len(outs) != 1:
        return "more than one output"
    anchors = [n for n in nodes if n.op in _ANCHORS]
    if len(anchors) > 1:
        return f"two anchors ({anchors[0].op}, {anchors[1].op}) in one node"
    if anchors and anchors[0] is not nodes[0]:
        return f"{nodes[0].op} before the {anchors[0].op} anchor"
    for n in nodes:
        if n.op not in _ANCHORS + _ELEMWISE:
            return f"{n.op} has no topi operator"
        if n.op == "conv2d" and n.attrs.get("groups", 1) != 1 and not _depthwise(n, types, graph):
            return "grouped conv2d with fewer groups than channels (topi has depthwise and groups=1 NCHW convs)"
        if n.type is None or n.type.dtype != "float32":
            return f"{n.op} on {n.type.dtype if n.type else '?'} (llvm kernels are float32; integers stay numpy-exact)"
    for k in nodes[0].inputs:
        if k in types and types[k].dtype != "float32":
            return f"{types[k].dtype} input"
    return None


def _depthwise(n: Node, types: dict[str, Any], graph: Graph) -> bool:
    """A conv2d with one group per input channel (weight ``[C*M, 1, KH, KW]``): topi's depthwise conv."""
    if n.op != "conv2d" or n.attrs.get("groups", 1) == 1:
        return False
    x, w = (types[v] if v in types else graph.type_of(v) for v in n.inputs[:2])
    return int(n.attrs["groups"]) == int(x.shape[1]) and int(w.shape[1]) == 1


def schedule_key(node: Node, graph: Graph) -> str:
    """The anchor op that picks a node's schedule (``depthwise_conv2d`` for a depthwise conv2d)."""
    nodes, types, _ = _body(node, graph)
    return "depthwise_conv2d" if _depthwise(nodes[0], types, graph) else nodes[0].op


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


def declare(node: Node, graph: Graph) -> tuple[list[Any], list[str], Any] | str:
    """``node`` as topi operators: (placeholders, the outer values they stand for, the output
    tensor), or why it cannot be. Shared by every target's strategy (the GPU's too)."""
    from ... import te, topi

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
            env[v] = te.placeholder(tuple(t.shape), t.dtype, name=f"a{len(args)}")
            args.append(v)
            placeholders.append(env[v])
        return env[v]

    for n in nodes:
        at = n.attrs
        xs = [env[i] if i in env else get(i) for i in n.inputs]
        if n.op == "conv2d" and at.get("groups", 1) != 1:  # depthwise (check() refused other groupings)
            wv = _depthwise_weight(te, xs[1], int(xs[0].shape[1].value))
            y = topi.depthwise_conv2d_nchw(xs[0], wv, tuple(at["strides"]), tuple(at["padding"]), tuple(at["dilation"]))
            if len(xs) == 3:
                y = topi.bias_add(y, xs[2])
        elif n.op == "conv2d":
            y = topi.conv2d_nchw(xs[0], xs[1], tuple(at["strides"]), tuple(at["padding"]), tuple(at["dilation"]))
            if len(xs) == 3:
                y = topi.bias_add(y, xs[2])
        elif n.op == "dense":
            y = topi.dense(xs[0], xs[1], xs[2] if len(xs) == 3 else None)
        elif n.op in ("max_pool2d", "avg_pool2d"):
            y = topi.pool2d(xs[0], tuple(at["kernel"]), tuple(at["strides"]), tuple(at["padding"]),
                            "max" if n.op == "max_pool2d" else "avg", bool(at.get("count_include_pad", False)))
        elif n.op == "global_avg_pool2d":
            y = topi.global_pool(xs[0], "avg")
        elif n.op == "softmax":
            y = topi.softmax(xs[0], int(at["axis"]))
        elif n.op == "relu":
            y = topi.relu(xs[0])
        elif n.op == "clip":
            lo = float(at["min"]) if at["min"] is not None else -np.inf
            hi = float(at["max"]) if at["max"] is not None else np.inf
            if at["min"] is None:
                y = topi.minimum(xs[0], hi)
            elif at["max"] is None:
                y = topi.maximum(xs[0], lo)
            else:
                y = topi.clip(xs[0], lo, hi)
        elif n.op == "add":
            y = topi.add(xs[0], xs[1])
        elif n.op == "sub":
            y = topi.subtract(xs[0], xs[1])
        elif n.op == "mul":
            y = topi.multiply(xs[0], xs[1])
        elif n.op == "batch_norm":
            y = topi.batch_norm_inference(*xs, epsilon=float(at["epsilon"]))
        elif n.op in ("div", "maximum", "minimum"):
            y = {"div": topi.divide, "maximum": topi.maximum, "minimum": topi.minimum}[n.op](xs[0], xs[1])
        elif n.op in _TE_UNARY:
            y = _unary(te, n.op, xs[0], at)
        else:  # pragma: no cover - check() filtered these
            return f"{n.op} has no topi operator"
        env[n.name] = y
    return placeholders, args, env[outs[0]]


def schedule(node: Node, graph: Graph, out: Any) -> Any:
    """The CPU schedule of ``node`` whose :func:`declare` d output is ``out`` (the anchor's
    schedule: it asks ``apply_history_best`` for its workload's tuned knobs)."""
    from . import schedules

    return getattr(schedules, _SCHEDULE.get(schedule_key(node, graph), "schedule_injective"))(out)


def lower(node: Node, graph: Graph, name: str = "cpu") -> LlvmKernel | str:
    """Build ``node`` for the host with llvm, or return why it is not mapped."""
    from ...driver import build

    if node.op == "lstm_scan":
        return _lower_lstm(node, graph, name)
    if node.op == "gru_scan":
        return _lower_gru(node, graph, name)
    decl = declare(node, graph)
    if isinstance(decl, str):
        return decl
    placeholders, args, out = decl
    try:
        sched = schedule(node, graph, out)
        func = build(sched, placeholders + [out], target="llvm", name=name)
    except Exception as e:  # a schedule or codegen limit: numpy it is
        return f"llvm build failed: {type(e).__name__}: {e}"
    t = node.type
    assert t is not None
    return LlvmKernel(func, args, tuple(t.shape), t.dtype)


def _lower_lstm(node: Node, graph: Graph, name: str) -> LlvmKernel | str:
    """``lstm_scan`` with the TE ``scan``: states h and c over T + 1 steps (step 0 the initial
    state), each step's recurrent product, gates and update as computes over the state."""
    from ... import te
    from ...driver import build

    steps, batch, g4 = graph.type_of(node.inputs[0]).shape
    hs = g4 // 4
    gx = te.placeholder((steps, batch, g4), "float32", name="gates_x")
    r = te.placeholder((g4, hs), "float32", name="r")
    h0 = te.placeholder((batch, hs), "float32", name="h0")
    c0 = te.placeholder((batch, hs), "float32", name="c0")
    s_h = te.placeholder((steps + 1, batch, hs), "float32", name="s_h")
    s_c = te.placeholder((steps + 1, batch, hs), "float32", name="s_c")
    init_h = te.compute((1, batch, hs), lambda _, i, j: h0[i, j], name="init_h")
    init_c = te.compute((1, batch, hs), lambda _, i, j: c0[i, j], name="init_c")
    k = te.reduce_axis((0, hs), name="k")
    h2h = te.compute((steps + 1, batch, g4), lambda t, i, g: te.sum(s_h[t - 1, i, k] * r[g, k], axis=k), name="h2h")
    gates = te.compute((steps + 1, batch, g4), lambda t, i, g: gx[t - 1, i, g] + h2h[t, i, g], name="gates")
    shape = (steps + 1, batch, hs)
    next_c = te.compute(shape, lambda t, i, j: te.sigmoid(gates[t, i, 2 * hs + j]) * s_c[t - 1, i, j]
                        + te.sigmoid(gates[t, i, j]) * te.tanh(gates[t, i, 3 * hs + j]), name="next_c")
    next_h = te.compute(shape, lambda t, i, j: te.sigmoid(gates[t, i, hs + j]) * te.tanh(next_c[t, i, j]),
                        name="next_h")
    # the updates are copies, so next_c (read by next_h) is stored inside the step's scope
    update_h = te.compute(shape, lambda *i: next_h[i], name="update_h")
    update_c = te.compute(shape, lambda *i: next_c[i], name="update_c")
    scan_h, scan_c = te.scan([init_h, init_c], [update_h, update_c], [s_h, s_c], inputs=[gx], name="lstm_scan")
    out = te.compute((steps, 2, batch, hs), lambda t, s, i, j: te.if_then_else(
        s == 0, scan_h[t + 1, i, j], scan_c[t + 1, i, j]), name="lstm_out")
    try:
        sched = te.create_schedule(out.op)
        func = build(sched, [gx, r, h0, c0, out], target="llvm", name=name)
    except Exception as e:  # a schedule or codegen limit: numpy it is
        return f"llvm build failed: {type(e).__name__}: {e}"
    return LlvmKernel(func, list(node.inputs), (steps, 2, batch, hs), "float32")


def _lower_gru(node: Node, graph: Graph, name: str) -> LlvmKernel | str:
    """``gru_scan`` with the TE ``scan`` (see :func:`_lower_lstm`)."""
    from ... import te
    from ...driver import build

    steps, batch, g3 = graph.type_of(node.inputs[0]).shape
    hs = g3 // 3
    lbr = bool(node.attrs["linear_before_reset"])
    gx = te.placeholder((steps, batch, g3), "float32", name="gates_x")
    r = te.placeholder((g3, hs), "float32", name="r")
    rbh = te.placeholder((hs,), "float32", name="rbh")
    h0 = te.placeholder((batch, hs), "float32", name="h0")
    s_h = te.placeholder((steps + 1, batch, hs), "float32", name="s_h")
    init_h = te.compute((1, batch, hs), lambda _, i, j: h0[i, j], name="init_h")
    shape = (steps + 1, batch, hs)
    k = te.reduce_axis((0, hs), name="k")
    zr = te.compute((steps + 1, batch, 2 * hs), lambda t, i, g: te.sum(s_h[t - 1, i, k] * r[g, k], axis=k), name="zr")
    z = te.compute(shape, lambda t, i, j: te.sigmoid(gx[t - 1, i, j] + zr[t, i, j]), name="z")
    rg = te.compute(shape, lambda t, i, j: te.sigmoid(gx[t - 1, i, hs + j] + zr[t, i, hs + j]), name="reset")
    k2 = te.reduce_axis((0, hs), name="k2")
    if lbr:
        hh = te.compute(shape, lambda t, i, j: te.sum(s_h[t - 1, i, k2] * r[2 * hs + j, k2], axis=k2), name="hh")
        cand = te.compute(shape, lambda t, i, j: te.tanh(gx[t - 1, i, 2 * hs + j] + rg[t, i, j] * (hh[t, i, j] + rbh[j])),
                          name="cand")
    else:
        rh = te.compute(shape, lambda t, i, j: rg[t, i, j] * s_h[t - 1, i, j], name="rh")
        hh = te.compute(shape, lambda t, i, j: te.sum(rh[t, i, k2] * r[2 * hs + j, k2], axis=k2), name="hh")
        cand = te.compute(shape, lambda t, i, j: te.tanh(gx[t - 1, i, 2 * hs + j] + hh[t, i, j] + rbh[j]),
                          name="cand")
    update = te.compute(shape, lambda t, i, j: cand[t, i, j] + z[t, i, j] * (s_h[t - 1, i, j] - cand[t, i, j]),
                        name="update_h")
    scan_h = te.scan(init_h, update, s_h, inputs=[gx], name="gru_scan")
    out = te.compute((steps, batch, hs), lambda t, i, j: scan_h[t + 1, i, j], name="gru_out")
    try:
        func = build(te.create_schedule(out.op), [gx, r, rbh, h0, out], target="llvm", name=name)
    except Exception as e:  # a schedule or codegen limit: numpy it is
        return f"llvm build failed: {type(e).__name__}: {e}"
    return LlvmKernel(func, list(node.inputs), (steps, batch, hs), "float32")


class LlvmCache:
    """Built functions by :func:`signature` (the argument names differ per node)."""

    def __init__(self) -> None:
        self.funcs: dict[str, LlvmKernel] = {}

    def __len__(self) -> int:
        return len(self.funcs)

    def get(self, node: Node, graph: Graph) -> LlvmKernel | str:
        why = check(node, graph)
        if why is not None:
            return why
        key = signature(node, graph)
        k = self.funcs.get(key)
        if k is None:
            built = lower(node, graph, node.name.replace(".", "_"))
            if isinstance(built, str):
                return built
            self.funcs[key] = k = built
            return k
        return LlvmKernel(k.func, _arg_order(node, graph), k.out_shape, k.out_dtype)


def _arg_order(node: Node, graph: Graph) -> list[str]:
    """The outer values in the order :func:`lower` makes placeholders for them."""
    nodes, _, _ = _body(node, graph)
    seen: list[str] = []
    made: set[str] = set()
    for n in nodes:
        for i in n.inputs:
            if i not in made and i not in seen:
                seen.append(i)
        made.add(n.name)
    return seen
