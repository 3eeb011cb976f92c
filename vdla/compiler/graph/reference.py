"""The numpy reference executor: the oracle every other target is checked against.

``run(graph, inputs)`` evaluates the nodes in topological order with the semantics of
:mod:`.ops` — float32 for float graphs, exact integer arithmetic (int8 operands, int32
accumulation with 32-bit wrap, VTA's rounding shift requantisation) for quantised ones.
Inputs are checked against the graph's declared names, shapes and dtypes (an input declared
wider than it is computed, float64 or int64, also takes arrays of that dtype, narrowed by
:func:`.types.narrow_input`); with ``check=True`` every computed value is also checked against
its inferred type. Every runner checks its inputs here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .ir import Graph, GraphError, TensorType
from .ops.registry import get_op
from .types import narrow_input

__all__ = ["run", "check_inputs"]


def check_inputs(graph: Graph, inputs: Any) -> dict[str, np.ndarray]:
    """Normalise ``inputs`` (a dict, a list in input order, or one array) and check them; an
    array of an input's declared wider dtype comes back narrowed (a value out of range is an error)."""
    names = list(graph.inputs)
    if isinstance(inputs, np.ndarray):
        inputs = [inputs]
    if isinstance(inputs, Sequence) and not isinstance(inputs, (str, bytes)):
        if len(inputs) != len(names):
            raise GraphError(f"graph {graph.name!r} takes {len(names)} inputs ({', '.join(names)}), got {len(inputs)}")
        inputs = dict(zip(names, inputs))
    if not isinstance(inputs, Mapping):
        raise GraphError(f"inputs must be a dict, a list or an array, got {type(inputs).__name__}")
    for k in inputs:
        if k not in graph.inputs:
            raise GraphError(f"graph {graph.name!r} has no input named {k!r}; its inputs are {', '.join(names)}")
    out: dict[str, np.ndarray] = {}
    for k, t in graph.inputs.items():
        if k not in inputs:
            raise GraphError(f"missing input {k!r} ({t}) of graph {graph.name!r}")
        a = np.asarray(inputs[k])
        if tuple(a.shape) != t.shape:
            raise GraphError(f"input {k!r} of graph {graph.name!r} expects shape {t.shape}, got {tuple(a.shape)}")
        if t.boundary is not None and str(a.dtype) == t.boundary:
            a = narrow_input(k, t, a, graph.name)
        elif str(a.dtype) != t.dtype:
            also = f" (or {t.boundary}, as the model declares it)" if t.boundary else ""
            raise GraphError(f"input {k!r} of graph {graph.name!r} expects dtype {t.dtype}{also}, got {a.dtype}")
        out[k] = a
    return out


def run(
    graph: Graph,
    inputs: Any,
    *,
    return_all: bool = False,
    check: bool = True,
) -> Any:
    """Evaluate ``graph``; returns the list of outputs, or with ``return_all`` a dict of
    every value (inputs, constants and node outputs)."""
    env: dict[str, np.ndarray] = dict(graph.consts)
    env.update(check_inputs(graph, inputs))
    for node in graph.topo_order():
        opdef = get_op(node.op, node.name)
        args = [env[i] for i in node.inputs]
        try:
            val = opdef.compute(node.attrs, args)
        except GraphError:
            raise
        except Exception as e:  # a numpy error is a bug or a bad graph: name the node
            raise GraphError(f"node {node.name!r} ({node.op}) failed: {type(e).__name__}: {e}") from e
        if check:
            if node.type is None:
                graph._infer_node(node)
            got = TensorType(val.shape, str(val.dtype))
            if got != node.type:
                raise GraphError(f"node {node.name!r} ({node.op}) computed {got}, its inferred type is {node.type}")
        env[node.name] = val
    if return_all:
        return env
    return [env[o] for o in graph.outputs]
