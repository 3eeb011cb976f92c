"""Folding passes: constant folding, identity removal and batch-norm folding.

* :func:`fold_constants` — evaluate every node whose inputs are all constants (with the
  reference semantics) and replace it by a constant; drop dead nodes and constants.
* :func:`fold_batch_norm` — ``batch_norm(conv(x, w, b))`` with constant parameters and a
  conv output read only by the batch norm becomes ``conv(x, w * k, (b - mean) * k + beta)``
  with ``k = gamma / sqrt(var + eps)`` (conv2d, conv2d_transpose and dense). A batch norm
  with no foldable producer becomes ``mul`` + ``add`` by per-channel constants.
"""

from __future__ import annotations

import numpy as np

from .ir import Graph, Node
from .ops import get_op

__all__ = ["fold_constants", "fold_batch_norm", "remove_identity"]


def fold_constants(graph: Graph) -> Graph:
    """Replace nodes computable from constants alone by constants (fused bodies too)."""
    g = graph.copy()
    kept: list[Node] = []
    for n in g.topo_order():
        if n.inputs and n.op != "fused" and all(i in g.consts for i in n.inputs):
            val = get_op(n.op, n.name).compute(n.attrs, [g.consts[i] for i in n.inputs])
            val = np.ascontiguousarray(val)
            val.setflags(write=False)
            g.consts[n.name] = val
        else:
            kept.append(n)
    g.nodes = kept
    return g.prune().infer_types()


def remove_identity(graph: Graph) -> Graph:
    """Drop no-op nodes: reshape to the same shape, cast to the same dtype, shift by 0."""
    g = graph.copy().infer_types()
    for n in list(g.topo_order()):
        src = g.type_of(n.inputs[0]) if n.inputs else None
        noop = (
            (n.op in ("reshape", "flatten") and src is not None and n.type is not None and src.shape == n.type.shape)
            or (n.op == "cast" and src is not None and src.dtype == n.attrs["dtype"])
            or (n.op == "shift" and n.attrs["n"] == 0)
        )
        if noop and n.name not in g.outputs:
            g.replace_uses(n.name, n.inputs[0])
            g.nodes.remove(n)
    return g.prune().infer_types()


_FOLDABLE = {"conv2d": 0, "conv2d_transpose": 1, "dense": 0}  # weight axis holding output channels


def fold_batch_norm(graph: Graph) -> Graph:
    """Fold inference-mode batch norms into the preceding conv/dense (see module doc)."""
    g = graph.copy().infer_types()
    cons = g.consumers()
    prod = g.producers()
    for bn in list(g.topo_order()):
        if bn.op != "batch_norm" or not all(i in g.consts for i in bn.inputs[1:]):
            continue
        gamma, beta, mean, var = (g.consts[i].astype(np.float64) for i in bn.inputs[1:])
        k = gamma / np.sqrt(var + bn.attrs["epsilon"])
        shift = beta - mean * k
        src = prod.get(bn.inputs[0])
        foldable = (
            src is not None
            and src.op in _FOLDABLE
            and src.inputs[1] in g.consts
            and (len(src.inputs) == 2 or src.inputs[2] in g.consts)
            and len(cons.get(src.name, [])) == 1
            and src.name not in g.outputs
            and g.type_of(src.name).dtype == "float32"
        )
        if foldable and src.op == "conv2d_transpose" and src.attrs.get("groups", 1) != 1:
            foldable = False
        if foldable:
            assert src is not None
            w = g.consts[src.inputs[1]].astype(np.float64)
            axis = _FOLDABLE[src.op]
            shape = [1] * w.ndim
            shape[axis] = -1
            w2 = (w * k.reshape(shape)).astype(np.float32)
            b = g.consts[src.inputs[2]].astype(np.float64) if len(src.inputs) == 3 else np.zeros_like(k)
            b2 = (b * k + shift).astype(np.float32)
            wn = g.add_const(f"{src.name}.weight_bn", w2)
            bname = g.add_const(f"{src.name}.bias_bn", b2)
            src.inputs = [src.inputs[0], wn, bname]
            g.replace_uses(bn.name, src.name)
            g.nodes.remove(bn)
            # keep the BN's name on the folded conv when the BN was a graph output
        else:
            rank = len(g.type_of(bn.inputs[0]).shape)
            cshape = (1, -1) + (1,) * (rank - 2)
            kc = g.add_const(f"{bn.name}.scale", k.astype(np.float32).reshape(cshape))
            sc = g.add_const(f"{bn.name}.shift", shift.astype(np.float32).reshape(cshape))
            idx = g.nodes.index(bn)
            mul = Node(g.fresh(f"{bn.name}.mul"), "mul", [bn.inputs[0], kc])
            g.nodes[idx] = mul
            g.nodes.insert(idx + 1, Node(bn.name, "add", [mul.name, sc]))
        cons = g.consumers()
        prod = g.producers()
    return g.prune().infer_types()
