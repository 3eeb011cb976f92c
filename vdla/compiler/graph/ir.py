"""Graph IR: a typed dataflow graph of whole-tensor operators.

A :class:`Graph` has named inputs (with a static :class:`TensorType`), named constant
tensors (numpy arrays: weights, biases, shapes), a list of :class:`Node` s and a list of
output value names. Every node computes exactly one value, named like the node, from
values named in ``node.inputs`` (graph inputs, constants or other nodes). Operators, their
attributes, shape inference and numpy semantics live in :mod:`.ops`; value types and
the error class in :mod:`.types`, below both.

``graph.infer_types()`` checks the graph (unknown names, cycles, duplicate names, bad
attributes or shapes) and fills ``node.type``; errors are :class:`GraphError` s naming
the node. ``str(graph)`` prints it one node per line, fused bodies indented.

Passes treat graphs as values: they ``copy()`` and return a new graph. Constant arrays
are shared between copies and never mutated in place.
"""

from __future__ import annotations

import copy as _copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .types import DTYPES, GraphError, TensorType

__all__ = ["GraphError", "TensorType", "Node", "Graph", "DTYPES"]

@dataclass
class Node:
    """One operator application. Its output value is named ``name``."""

    name: str
    op: str
    inputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    #: "cpu" / "vdla" once partitioned, else None.
    target: str | None = None
    #: Free-form annotations of passes (partition reason, layout ...); not semantics.
    notes: dict[str, Any] = field(default_factory=dict)
    #: Filled by Graph.infer_types().
    type: TensorType | None = None

    def copy(self) -> Node:
        attrs = {k: (v.copy() if isinstance(v, Graph) else v) for k, v in self.attrs.items()}
        return Node(self.name, self.op, list(self.inputs), attrs, self.target, dict(self.notes), self.type)


class Graph:
    """A dataflow graph: inputs, constants, nodes, outputs."""

    def __init__(self, name: str = "graph") -> None:
        self.name = name
        self.inputs: dict[str, TensorType] = {}
        self.consts: dict[str, np.ndarray] = {}
        self.nodes: list[Node] = []
        self.outputs: list[str] = []

    # -- building -------------------------------------------------------------------
    def _check_new(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise GraphError(f"value names must be non-empty strings, got {name!r}")
        if self.has(name):
            raise GraphError(f"duplicate value name {name!r}")

    def has(self, name: str) -> bool:
        return name in self.inputs or name in self.consts or any(n.name == name for n in self.nodes)

    def fresh(self, base: str) -> str:
        """A value name not used yet, derived from ``base``."""
        taken = set(self.inputs) | set(self.consts) | {n.name for n in self.nodes}
        if base not in taken:
            return base
        i = 1
        while f"{base}_{i}" in taken:
            i += 1
        return f"{base}_{i}"

    def add_input(self, name: str, shape: Sequence[int], dtype: str = "float32", *,
                  boundary: str | None = None) -> str:
        """Add a graph input; ``boundary``: the wider dtype it is declared with (float64 for a
        float32 input, int64 for an int32 one), whose arrays the runners accept and narrow."""
        self._check_new(name)
        self.inputs[name] = TensorType(tuple(shape), dtype, boundary)
        return name

    def add_const(self, name: str, value: Any, dtype: str | None = None) -> str:
        """Add a constant tensor; ``name`` is made unique. Returns the name used."""
        name = self.fresh(name)
        a = np.array(value, dtype=dtype) if dtype is not None or not isinstance(value, np.ndarray) else value
        if str(a.dtype) == "float64":
            a = a.astype(np.float32)
        elif str(a.dtype) == "int64":
            a = a.astype(np.int32) if a.size == 0 or np.abs(a).max() < 2**31 else a
        TensorType.of(a)  # dtype check
        a.setflags(write=False)
        self.consts[name] = a
        return name

    def add_node(self, op: str, inputs: Sequence[str], name: str | None = None, **attrs: Any) -> str:
        """Append a node (its type inferred at once) and return its value name."""
        from .ops.registry import normalize_attrs  # the registry's op modules build on this one

        name = self.fresh(name or op)
        node = Node(name, op, list(inputs), normalize_attrs(op, attrs, name))
        self.nodes.append(node)
        try:
            self._infer_node(node)
        except GraphError:
            self.nodes.pop()
            raise
        return name

    def set_outputs(self, *names: str) -> None:
        self.outputs = list(names)

    # -- queries --------------------------------------------------------------------
    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise GraphError(f"no node named {name!r} in graph {self.name!r}")

    def producers(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}

    def consumers(self) -> dict[str, list[Node]]:
        """Value name -> nodes reading it (a node reading a value twice appears once)."""
        out: dict[str, list[Node]] = {}
        for n in self.nodes:
            for i in dict.fromkeys(n.inputs):
                out.setdefault(i, []).append(n)
        return out

    def type_of(self, name: str) -> TensorType:
        if name in self.inputs:
            return self.inputs[name]
        if name in self.consts:
            return TensorType.of(self.consts[name])
        for n in self.nodes:
            if n.name == name:
                if n.type is None:
                    self._infer_node(n)
                return n.type  # type: ignore[return-value]
        raise GraphError(f"unknown value {name!r} in graph {self.name!r}")

    def is_const(self, name: str) -> bool:
        return name in self.consts

    def topo_order(self) -> list[Node]:
        """Nodes in a dependency order (stable: keeps list order where it can)."""
        by_name: dict[str, Node] = {}
        for n in self.nodes:
            if n.name in by_name or n.name in self.inputs or n.name in self.consts:
                raise GraphError(f"duplicate value name {n.name!r} (node {n.op})")
            by_name[n.name] = n
        known = set(self.inputs) | set(self.consts)
        for n in self.nodes:
            for i in n.inputs:
                if i not in known and i not in by_name:
                    raise GraphError(f"node {n.name!r} ({n.op}) reads unknown value {i!r}")
        done: set[str] = set()
        order: list[Node] = []
        state: dict[str, int] = {}
        for root in self.nodes:
            if root.name in done:
                continue
            stack: list[tuple[Node, int]] = [(root, 0)]
            while stack:
                n, k = stack.pop()
                if k == 0:
                    if n.name in done:
                        continue
                    state[n.name] = 1
                deps = [by_name[i] for i in n.inputs if i in by_name]
                while k < len(deps) and deps[k].name in done:
                    k += 1
                if k < len(deps):
                    d = deps[k]
                    if state.get(d.name) == 1:
                        raise GraphError(f"cycle through node {d.name!r} ({d.op}) and {n.name!r} ({n.op})")
                    stack.append((n, k + 1))
                    stack.append((d, 0))
                    continue
                state[n.name] = 2
                done.add(n.name)
                order.append(n)
        return order

    # -- checking -------------------------------------------------------------------
    def _infer_node(self, n: Node) -> TensorType:
        from .ops.registry import get_op

        opdef = get_op(n.op, n.name)
        in_types = []
        for i in n.inputs:
            try:
                in_types.append(self.type_of(i))
            except GraphError:
                raise GraphError(f"node {n.name!r} ({n.op}) reads unknown value {i!r}") from None
        try:
            n.type = opdef.infer(n.attrs, in_types)
        except GraphError as e:
            msg = str(e)
            if f"'{n.name}'" not in msg:
                msg = f"node {n.name!r} ({n.op}): {msg}"
            raise GraphError(msg) from None
        return n.type

    def infer_types(self) -> Graph:
        """Validate the whole graph and (re)infer every node's type; returns self."""
        for name in list(self.inputs) + list(self.consts):
            if not isinstance(name, str) or not name:
                raise GraphError(f"bad value name {name!r}")
        for name in self.inputs:
            if name in self.consts:
                raise GraphError(f"{name!r} is both an input and a constant")
        for n in self.nodes:
            n.type = None
        for n in self.topo_order():
            self._infer_node(n)
        if not self.outputs:
            raise GraphError(f"graph {self.name!r} has no outputs")
        for o in self.outputs:
            if not self.has(o):
                raise GraphError(f"graph output {o!r} is not a value of graph {self.name!r}")
        return self

    validate = infer_types

    # -- transforming ---------------------------------------------------------------
    def copy(self) -> Graph:
        g = Graph(self.name)
        g.inputs = dict(self.inputs)
        g.consts = dict(self.consts)
        g.nodes = [n.copy() for n in self.nodes]
        g.outputs = list(self.outputs)
        return g

    def replace_uses(self, old: str, new: str) -> None:
        """Make every reader of ``old`` (nodes and outputs) read ``new``."""
        for n in self.nodes:
            n.inputs = [new if i == old else i for i in n.inputs]
        self.outputs = [new if o == old else o for o in self.outputs]

    def prune(self) -> Graph:
        """Drop nodes and constants the outputs do not depend on; returns self."""
        prod = self.producers()
        live: set[str] = set()
        stack = list(self.outputs)
        while stack:
            v = stack.pop()
            if v in live:
                continue
            live.add(v)
            if v in prod:
                stack.extend(prod[v].inputs)
        self.nodes = [n for n in self.nodes if n.name in live]
        self.consts = {k: v for k, v in self.consts.items() if k in live}
        return self

    def sort(self) -> Graph:
        """Put ``nodes`` into topological order; returns self."""
        self.nodes = self.topo_order()
        return self

    # -- summaries ------------------------------------------------------------------
    def op_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.op] = out.get(n.op, 0) + 1
        return out

    def param_bytes(self) -> int:
        return int(sum(a.nbytes for a in self.consts.values()))

    def __str__(self) -> str:
        return "\n".join(format_graph(self))

    def __repr__(self) -> str:
        return f"<Graph {self.name!r}: {len(self.inputs)} inputs, {len(self.nodes)} nodes, {len(self.consts)} consts>"


def _fmt_attr(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, tuple):
        return "(" + ",".join(_fmt_attr(x) for x in v) + ")"
    return str(v)


def format_graph(g: Graph, indent: str = "") -> Iterable[str]:
    """The printer: one line per node, ``%value`` for values, ``@const`` for constants."""
    ins = ", ".join(f"%{k}: {t}" + (f" (declared {t.boundary})" if t.boundary else "") for k, t in g.inputs.items())
    yield f"{indent}graph {g.name}({ins}) {{"

    def ref(v: str) -> str:
        if v in g.consts:
            a = g.consts[v]
            return f"@{v}:{TensorType.of(a)}"
        return f"%{v}"

    for n in g.nodes:
        attrs = {k: v for k, v in n.attrs.items() if not isinstance(v, Graph)}
        a = " {" + ", ".join(f"{k}={_fmt_attr(v)}" for k, v in attrs.items()) + "}" if attrs else ""
        t = f" : {n.type}" if n.type is not None else ""
        tgt = f"  # {n.target}" if n.target else ""
        yield f"{indent}  %{n.name} = {n.op}({', '.join(ref(i) for i in n.inputs)}){a}{t}{tgt}"
        body = n.attrs.get("body")
        if isinstance(body, Graph):
            yield from format_graph(body, indent + "    ")
    yield f"{indent}  return {', '.join('%' + o for o in g.outputs)}"
    yield f"{indent}}}"


def deepcopy_graph(g: Graph) -> Graph:
    """A copy that also copies constant arrays (for callers that want to mutate them)."""
    h = g.copy()
    h.consts = {k: _copy.deepcopy(v) for k, v in g.consts.items()}
    return h
