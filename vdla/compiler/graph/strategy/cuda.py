"""The cuda strategy's choice between a convolution's implementations (TVM's op strategy:
several implementations per op, the one whose tuned record is fastest wins).

A float ``conv2d`` node (groups 1, constant weights) has on the GPU, as :func:`conv2d_implementations`
lists them (the first is the default):

==================================  ====================================================  ========
implementation (autotvm template)   when                                                  graph op
==================================  ====================================================  ========
``conv2d_nchw.cuda``                always: the direct, shared-memory tiled convolution   conv2d
``conv2d_nchw_winograd.cuda``       3x3, stride 1, dilation 1 (F(4x4) when the height is  conv2d_winograd
                                    a multiple of 8, else F(2x2), as TVM infers it)
``conv2d_1x1.cuda``                 1x1, stride 1, no padding, batch 1: a GEMM            conv2d_1x1
==================================  ====================================================  ========

:func:`select_implementations` asks the tuning log in effect (``apply_history_best``, ``vdla
build|run --tuning-log``) for each implementation's best record of the node's workload
(:func:`~vdla.compiler.autotvm.dispatch.query_cost`) and keeps the fastest; an implementation
without a record is not a candidate, and without any record the node stays direct, so an untuned
build is unchanged. A node given to another implementation is rewritten here, once, at graph level
(TVM's ``AlterOpLayout`` after ``select_implementation``): Winograd's weight is transformed at
compile time (a new constant), the 1x1 GEMM reads its data and writes its output as reshaped views
(a unary activation after it, such as ReLU, is moved before the view so it fuses). The choice is
the node's ``reason`` (shown per node by ``vdla build|run``), naming both costs.

``vdla tune MODEL --target cuda`` lists the tasks of every implementation of every node: the
tuning job runs this selection under a context that records what it asks for
(:func:`vdla.compiler.autotvm.tuning.model_tasks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...autotvm.dispatch import query_cost
from ...targets.cuda.schedules.winograd import NAME as WINOGRAD
from ...targets.cuda.schedules.winograd import winograd_args, winograd_tile
from ...topi.activation import ACTIVATIONS
from ...topi.winograd import winograd_weight_nchw
from ..ir import Graph, Node

__all__ = ["Implementation", "conv2d_implementations", "choose", "select_implementations", "DIRECT", "WINOGRAD",
           "GEMM_1X1"]

DIRECT = "conv2d_nchw.cuda"
GEMM_1X1 = "conv2d_1x1.cuda"

#: ops after a 1x1 GEMM computed on its 2-d output before the view back (so they fuse into it)
_UNARY = frozenset({"relu", "clip", *ACTIVATIONS})


@dataclass(frozen=True)
class Implementation:
    """One way to run a node: its autotvm template ``name`` and the ``workload`` its records name."""

    name: str
    workload: list[Any]


def _conv_args(node: Node, graph: Graph) -> list[Any] | None:
    """The ``conv2d_nchw.cuda`` arguments of a float conv2d node of groups 1 with a constant
    4-d weight, else None (the node has one implementation, the topi strategy's as ever)."""
    if node.op != "conv2d" or len(node.inputs) < 2 or int(node.attrs.get("groups", 1)) != 1:
        return None
    if any(i not in graph.consts for i in node.inputs[1:]):
        return None
    x, w = graph.type_of(node.inputs[0]), graph.type_of(node.inputs[1])
    if x.dtype != "float32" or w.dtype != "float32" or len(x.shape) != 4 or len(w.shape) != 4:
        return None
    at = node.attrs
    return [list(x.shape), list(w.shape), list(at["strides"]), list(at["padding"]), list(at["dilation"])]


def conv2d_implementations(node: Node, graph: Graph) -> list[Implementation]:
    """The GPU implementations of ``node`` (the direct one first: the default), or [] when it is not
    a float conv2d with constant weights and groups 1."""
    args = _conv_args(node, graph)
    if args is None:
        return []
    data, kernel, stride, padding, dilation = args
    out = [Implementation(DIRECT, [DIRECT, args])]
    wino = winograd_args(args, winograd_tile(data[2]))
    if wino is not None:
        out.append(Implementation(WINOGRAD, [WINOGRAD, wino]))
    if kernel[2:] == [1, 1] and stride == [1, 1] and not any(padding) and dilation == [1, 1] and data[0] == 1:
        out.append(Implementation(GEMM_1X1, [GEMM_1X1, [data[1], data[2], data[3], kernel[0]]]))
    return out


def _us(cost: float | None) -> str:
    return "no record" if cost is None else f"{cost * 1e6:.2f} us"


def choose(node: Node, graph: Graph) -> tuple[Implementation | None, str]:
    """The implementation ``node`` runs (None: it has no others) and why, when it is not the default:
    the fastest of those with a record in the tuning log in effect (the default on a tie)."""
    impls = conv2d_implementations(node, graph)
    if not impls:
        return None, ""
    costs = [query_cost("cuda", i.workload) for i in impls]  # (every one asked: model_tasks records them)
    timed = [(c, k) for k, c in enumerate(costs) if c is not None]
    if not timed:
        return impls[0], ""
    _, best = min(timed)  # (ties: the earlier, the direct one first)
    if best == 0:
        return impls[0], ""
    return impls[best], (f"{impls[best].name}: its tuned record ({_us(costs[best])}) is faster than "
                         f"{DIRECT}'s ({_us(costs[0])})")


class _Rewriter:
    """The new graph: nodes copied in order, the convolutions given to another implementation
    replaced by that implementation's nodes."""

    def __init__(self, graph: Graph) -> None:
        self.src = graph
        self.g = Graph(graph.name)
        self.g.inputs = dict(graph.inputs)
        self.g.consts = dict(graph.consts)
        self.g.outputs = list(graph.outputs)
        self.readers = graph.consumers()
        self.skip: set[str] = set()
        self.taken = set(graph.inputs) | set(graph.consts) | {n.name for n in graph.nodes}

    def fresh(self, base: str) -> str:
        """A name free in both graphs (a later node of the source keeps its own): ``taken`` holds
        every source name and every name made here, so it covers the new graph too."""
        name, i = base, 1
        while name in self.taken:
            name, i = f"{base}_{i}", i + 1
        self.taken.add(name)
        return name

    def add(self, src: Node, op: str, inputs: list[str], name: str, notes: dict[str, Any] | None = None,
            **attrs: Any) -> str:
        made = self.g.add_node(op, inputs, name=name, **attrs)
        node = self.g.nodes[-1]
        node.target, node.notes = src.target, {**src.notes, **(notes or {})}
        return made

    def winograd(self, n: Node, impl: Implementation, notes: dict[str, Any]) -> None:
        m = int(impl.workload[1][5])
        w = self.src.consts[n.inputs[1]]
        u = self.g.add_const(self.fresh(f"{n.inputs[1]}.winograd{m}"), winograd_weight_nchw(np.asarray(w), m))
        self.add(n, "conv2d_winograd", [n.inputs[0], u, *n.inputs[2:]], n.name, notes, padding=n.attrs["padding"],
                 m=m)

    def gemm_1x1(self, n: Node, notes: dict[str, Any]) -> None:
        _, c, h, wd = self.src.type_of(n.inputs[0]).shape
        w = np.asarray(self.src.consts[n.inputs[1]])
        oc = w.shape[0]
        data = self.add(n, "reshape", [n.inputs[0]], self.fresh(f"{n.name}.data2d"), shape=(c, h * wd))
        weight = self.g.add_const(self.fresh(f"{n.inputs[1]}.2d"), np.ascontiguousarray(w.reshape(oc, c)))
        last, value = n, self.add(n, "conv2d_1x1", [data, weight, *n.inputs[2:]], self.fresh(f"{n.name}.gemm"),
                                  notes, size=(h, wd))
        # a unary activation that alone reads the product runs on it before the view back: it fuses
        while last.name not in self.src.outputs and len(self.readers.get(last.name, [])) == 1:
            r = self.readers[last.name][0]
            if r.op not in _UNARY or r.inputs != [last.name]:
                break
            value = self.add(r, r.op, [value], self.fresh(f"{r.name}.2d"), **r.attrs)
            self.skip.add(r.name)
            last = r
        self.add(last, "reshape", [value], last.name, shape=(1, oc, h, wd))

    def copy(self, n: Node) -> None:
        self.g.nodes.append(n.copy())


def select_implementations(graph: Graph) -> Graph:
    """``graph`` (float32, simplified, not fused) with each convolution on the implementation
    :func:`choose` gives it (see the module doc); the graph itself when every one stays direct.
    Values keep their names, so readers and outputs are unchanged."""
    g = graph.copy().infer_types()
    choices = {}
    for n in g.topo_order():
        impl, why = choose(n, g)
        if impl is not None and impl.name != DIRECT:
            choices[n.name] = (impl, why)
    if not choices:
        return graph
    rw = _Rewriter(g)
    for n in g.topo_order():
        if n.name in rw.skip:
            continue
        if n.name not in choices:
            rw.copy(n)
            continue
        impl, why = choices[n.name]
        notes = {"reason": why, "implementation": impl.name}
        if impl.name == WINOGRAD:
            rw.winograd(n, impl, notes)
        else:
            rw.gemm_1x1(n, notes)
    return rw.g.prune().infer_types()
