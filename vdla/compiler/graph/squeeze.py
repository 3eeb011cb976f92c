"""Squeeze-excite on VDLA's packed int8 layout: the pool and the gate's multiply as host steps on
the packed tensors.

MobileNetV3 and EfficientNet pool each block's activations to one value per channel (a global
average pool, the squeeze), compute a gate from it with two small 1x1 convolutions, and scale
the activations by the gate (the excite). The convolutions run on VDLA; the pool and the
multiply stay on the CPU, and after the layout pass each reads its operands unpacked and
dequantised and quantises and packs its result again: four host steps per block, two of them
unpacking the whole map. :func:`pool_packed` turns

* ``pack(quantize(global_avg_pool2d(dequantize(unpack(x)))))`` into one
  ``global_avg_pool2d_packed`` of the packed int8 ``x`` (the sum per channel exact in integers);
* ``pack(quantize(mul(dequantize(unpack(x)), dequantize(unpack(g)))))`` into one ``mul_packed``
  (the same float32 operations element by element; a per-channel gate broadcasts in the blocks),

so a squeeze-excite costs two host steps that never unpack.
"""

from __future__ import annotations

from .ir import Graph, Node

__all__ = ["pool_packed"]


def _int8_source(v: str, prod: dict[str, Node], target: str | None) -> tuple[Node, Node, str] | None:
    """``v = dequantize(unpack(p))`` with ``p`` a packed int8 value: (dequantize, unpack, p)."""
    dq = prod.get(v)
    if dq is None or dq.op != "dequantize" or dq.target != target or dq.attrs["zero_point"]:
        return None
    up = prod.get(dq.inputs[0])
    if up is None or up.op != "unpack" or up.target != target or up.type is None or up.type.dtype != "int8":
        return None
    src = prod.get(up.inputs[0])
    if src is None or src.type is None or len(src.type.shape) != 6:
        return None
    return dq, up, up.inputs[0]


def _rewrite(k: Node, g: Graph, prod: dict[str, Node], cons: dict[str, list[Node]]) -> tuple[Node, list[Node]] | None:
    """The packed node replacing the chain that ends at ``pack`` node ``k``, and the chain's
    quantize and pool / mul (which go)."""
    q = prod.get(k.inputs[0])
    if q is None or q.op != "quantize" or q.target != k.target or q.attrs["dtype"] != "int8" or q.attrs["zero_point"]:
        return None
    op = prod.get(q.inputs[0])
    if op is None or op.target != k.target or any(len(cons.get(n.name, [])) != 1 for n in (q, op)):
        return None
    srcs = [_int8_source(i, prod, k.target) for i in op.inputs]
    if not all(srcs) or any(g.type_of(s[2]).shape[-1] != k.attrs["block"] for s in srcs if s):
        return None
    if op.op == "global_avg_pool2d":
        (dq, _, p), = srcs  # type: ignore[misc]
        node = Node(k.name, "global_avg_pool2d_packed", [p],
                    {"in_scale": dq.attrs["scale"], "out_scale": q.attrs["scale"]}, k.target,
                    dict(op.notes, reason="int8 global average pool on the packed tensor (no unpack, no repack)"))
    elif op.op == "mul" and len(srcs) == 2:
        (da, _, pa), (db, _, pb) = srcs  # type: ignore[misc]
        ta, tb = g.type_of(pa).shape, g.type_of(pb).shape
        if not all(y in (1, x) for x, y in zip(ta, tb)) or ta[4:] != tb[4:]:
            return None  # only the map times a per-channel gate, or two maps alike
        node = Node(k.name, "mul_packed", [pa, pb],
                    {"a_scale": da.attrs["scale"], "b_scale": db.attrs["scale"], "out_scale": q.attrs["scale"]},
                    k.target, dict(op.notes, reason="int8 multiply of packed tensors (no unpack, no repack)"))
    else:
        return None
    return node, [q, op]


def pool_packed(graph: Graph) -> Graph:
    """A copy of a packed graph (after :func:`.layout.to_packed_layout`) whose squeeze-excite pools
    and gate multiplies between packed int8 values run on the packed tensors (see the module doc)."""
    prod, cons = graph.producers(), graph.consumers()
    found = [(n, r) for n in graph.nodes if n.op == "pack" and (r := _rewrite(n, graph, prod, cons))]
    if not found:
        return graph
    g = graph.copy()
    swap = {k.name: node for k, (node, _) in found}
    drop = {n.name for _, (_, gone) in found for n in gone}
    g.nodes = [swap.get(n.name, n) for n in g.nodes if n.name not in drop]
    # the unpacks and dequantizes no one reads any more go as well
    while True:
        read = {i for n in g.nodes for i in n.inputs} | set(g.outputs)
        idle = [n for n in g.nodes if n.name not in read and n.op in ("unpack", "dequantize")]
        if not idle:
            return g.infer_types()
        g.nodes = [n for n in g.nodes if n not in idle]
