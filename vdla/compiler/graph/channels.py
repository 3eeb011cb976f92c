"""Channel plumbing in int8: concat, channel split (slice), channel shuffle (reshape /
transpose / reshape) and flatten on the quantised tensors instead of in float between a
``dequantize`` and a ``quantize``.

The quantiser (:mod:`.quantize`) leaves these ops in float: each input is dequantised and
the result quantised again, so on VDLA a ShuffleNet unit or a SqueezeNet fire module is
unpack, dequantize, concat, quantize, pack on the host between two kernels. They only move
values, so with one scale on both sides they are exact on the integers:

* :func:`share_channel_scales` gives every value joined through such an op (a concat's
  inputs and output, a slice's, a shuffle's ...) one calibrated scale, the coarsest of the
  group (no value clips; a branch of a concat loses the finer scale it had alone);
* :func:`int8_channel_ops` then rewrites ``quantize(op(dequantize(q, s)), s)`` into ``op(q)``
  (and a max-pool of such an op's result: a max commutes with a positive scale, and the int8
  pool pads with -128 where the float one pads with -inf):
  with powers of two, ``q * s / s`` is ``q`` in float32, so the integers are exactly the
  quantised graph's. An op whose inputs have different scales stays in float (a model
  quantised elsewhere, e.g. a QDQ import), as before.

The packed layout pass (:mod:`.layout`) then keeps these int8 ops on VDLA's packed tensors.
"""

from __future__ import annotations

from collections.abc import Mapping

from .ir import Graph, Node

__all__ = ["PLUMBING_OPS", "share_channel_scales", "int8_channel_ops"]

#: ops that only move values (so they commute with a per-tensor scale)
PLUMBING_OPS = ("concat", "slice", "reshape", "transpose", "flatten")


def _acts(n: Node, g: Graph) -> list[str]:
    return [i for i in n.inputs if not g.is_const(i)]


def share_channel_scales(graph: Graph, scales: Mapping[str, float]) -> dict[str, float]:
    """``scales`` (calibrated, per float value) with the values joined through a
    :data:`PLUMBING_OPS` node given the coarsest scale of their group (see the module doc)."""
    g = graph.copy().infer_types()
    parent: dict[str, str] = {}

    def find(v: str) -> str:
        while parent.get(v, v) != v:
            parent[v] = parent.get(parent[v], parent[v])
            v = parent[v]
        return v

    prod = g.producers()
    for n in g.topo_order():
        if n.type is None or n.type.dtype != "float32":
            continue
        # a max-pool commutes with a positive scale too: joined where it pools a concat / split
        # (SqueezeNet's fire modules), so that elsewhere (ResNet's stem) its scale stays its own
        pool = n.op == "max_pool2d" and n.inputs[0] in prod and prod[n.inputs[0]].op in PLUMBING_OPS
        if n.op not in PLUMBING_OPS and not pool:
            continue
        for i in _acts(n, g):
            if i in scales and n.name in scales:
                a, b = find(i), find(n.name)
                if a != b:
                    parent[a] = b
    groups: dict[str, float] = {}
    for v, s in scales.items():
        r = find(v)
        groups[r] = max(groups.get(r, 0.0), s)
    return {v: groups[find(v)] for v in scales}


def int8_channel_ops(graph: Graph) -> Graph:
    """Rewrite the float :data:`PLUMBING_OPS` between a ``dequantize`` and a ``quantize`` of
    one scale into int8 ops (see the module doc). Exact: the integers are unchanged."""
    g = graph.copy().infer_types()
    out = Graph(g.name)
    out.inputs = dict(g.inputs)
    out.consts = dict(g.consts)
    vmap: dict[str, str] = {}  # old value -> its name in ``out``
    i8: dict[str, tuple[str, float]] = {}  # old float value -> (int8 value in ``out``, scale)
    deq: dict[str, str] = {}  # old float value made int8 here -> its float (dequantized) form, made on demand
    outputs = set(g.outputs)
    late: dict[str, tuple[str, float]] = {}

    def fl(v: str) -> str:
        """The float value ``v`` in ``out``: a converted op's dequantized int8 result."""
        if v in late:
            if v not in deq:
                q, s = late[v]
                deq[v] = out.add_node("dequantize", [q], name=v if v in outputs else f"{v}.dq", scale=s)
            return deq[v]
        return vmap.get(v, v)

    for n in g.topo_order():
        acts = _acts(n, g)
        if n.op == "dequantize" and g.type_of(n.inputs[0]).dtype == "int8" and not n.attrs.get("zero_point", 0):
            new = Node(n.name, n.op, [fl(i) for i in n.inputs], dict(n.attrs), n.target, dict(n.notes))
            out.nodes.append(new)
            i8[n.name] = (vmap.get(n.inputs[0], n.inputs[0]), float(n.attrs["scale"]))
            continue
        if (
            (n.op in PLUMBING_OPS or (n.op == "max_pool2d" and n.inputs[0] in late))
            and n.type is not None
            and n.type.dtype == "float32"
            and acts
            and all(i in i8 for i in acts)
            and len({i8[i][1] for i in acts}) == 1
            and len(acts) == len(n.inputs)
        ):
            s = i8[acts[0]][1]
            name = f"{n.name}.i8" if n.name in outputs else n.name
            q = out.add_node(n.op, [i8[i][0] for i in n.inputs], name=name, **n.attrs)
            out.nodes[-1].notes.update(n.notes, quant_of=n.name, scale=s)  # for layer_snr
            i8[n.name] = (q, s)
            late[n.name] = (q, s)
            continue
        if (
            n.op == "quantize"
            and n.inputs[0] in i8
            and n.attrs.get("dtype", "int8") == "int8"
            and not n.attrs.get("zero_point", 0)
            and float(n.attrs["scale"]) == i8[n.inputs[0]][1]
            and n.name not in outputs
        ):
            vmap[n.name] = i8[n.inputs[0]][0]  # q * s / s == q: the quantize is the int8 value itself
            continue
        new = Node(n.name, n.op, [fl(i) for i in n.inputs], dict(n.attrs), n.target, dict(n.notes))
        out.nodes.append(new)
    out.outputs = [fl(o) for o in g.outputs]
    return out.prune().infer_types()
