"""Operator fusion with the TVM paper's rules (§3, Fig. 4).

Op classes come from :mod:`.ops` (``elemwise`` ⊂ injective, reduction, complex-out-fusable,
opaque). Groups are formed greedily in topological order:

1. **complex-out-fusable + element-wise**: a conv/dense (packed or not) absorbs the chain
   of element-wise ops reading its result — bias add, ReLU/clip, the residual add,
   shifts, requantise, cast — as long as each intermediate value has exactly one reader, is
   not a graph output and stays on the same target. Element-wise producers of the chain's
   other operands (e.g. the shift aligning a residual) whose only reader is in the group
   are pulled in as well.
2. **injective chains**: consecutive injective ops (single reader each) become one group.
3. **reduction + injective inputs**: a pooling/reduction absorbs the injective op that
   feeds it (single reader, same target).

A group becomes one ``fused`` node whose ``body`` attribute is a sub-graph; its attrs
record ``pattern`` (e.g. ``conv2d+add+relu+requantize``), ``kind`` and ``anchor``. The
fused node sits where the group's last member was, which keeps topological order.
"""

from __future__ import annotations

from .ir import Graph, Node
from .ops import op_kind

__all__ = ["fuse", "unfuse"]


def _make_group(g: Graph, members: list[Node], kind: str, anchor: str) -> Node:
    names = {m.name for m in members}
    ext: list[str] = []
    for m in members:
        for i in m.inputs:
            if i not in names and i not in ext:
                ext.append(i)
    body = Graph(f"{members[-1].name}.body")
    for i in ext:
        body.inputs[i] = g.type_of(i)
    body.nodes = [m.copy() for m in members]
    body.outputs = [members[-1].name]
    body.infer_types()
    target = members[0].target
    notes: dict[str, object] = {"members": [m.name for m in members]}
    if kind == "complex" and "reason" in members[0].notes:  # why the anchor runs where it does
        notes["reason"] = members[0].notes["reason"]
    node = Node(
        members[-1].name,
        "fused",
        ext,
        {"body": body, "pattern": "+".join(m.op for m in members), "kind": kind, "anchor": anchor},
        target,
        notes,
    )
    node.type = members[-1].type
    return node


def _side_chain(
    p: Node | None, prod: dict[str, Node], names: set[str], taken: set[str], sole_reader, anchor: Node
) -> list[Node]:
    """Element-wise producers of a side operand that only the group reads (e.g. the cast
    and shift aligning a residual). Empty when the chain starts at another complex op,
    which fuses them as its own epilogue."""
    side: list[Node] = []
    while p is not None and p.name not in names and p.name not in taken:
        r = sole_reader(p.name)
        want = side[-1].name if side else None
        if (
            op_kind(p.op, p.attrs) != "elemwise"
            or p.target != anchor.target
            # an int8 value is where a producer's kernel ends (it stores int8): the side
            # chain widening it back (cast, shift) belongs to the reader's group
            or (p.type is not None and p.type.dtype in ("int8", "uint8"))
            or r is None
            or (r.name != want if side else r.name not in names)
        ):
            break
        side.append(p)
        acts = [j for j in p.inputs if j in prod]
        p = prod.get(acts[0]) if len(acts) == 1 else None
    if p is not None and side and op_kind(p.op, p.attrs) == "complex" and sole_reader(p.name) is side[-1]:
        return []
    return side


def fuse(graph: Graph) -> Graph:
    """Group nodes into ``fused`` nodes by the rules of the module doc."""
    g = graph.copy().infer_types()
    order = g.topo_order()
    pos = {n.name: k for k, n in enumerate(order)}
    cons = g.consumers()
    prod = g.producers()
    outputs = set(g.outputs)
    taken: set[str] = set()
    groups: list[tuple[list[Node], str, str]] = []

    def sole_reader(v: str) -> Node | None:
        rs = cons.get(v, [])
        if len(rs) == 1 and v not in outputs:
            return rs[0]
        return None

    def same_target(a: Node, b: Node) -> bool:
        return a.target == b.target

    # rule 1: complex-out-fusable anchors absorb element-wise consumers
    for n in order:
        if n.name in taken or op_kind(n.op, n.attrs) != "complex":
            continue
        chain = [n]
        while True:
            r = sole_reader(chain[-1].name)
            if r is None or r.name in taken or op_kind(r.op, r.attrs) != "elemwise" or not same_target(r, n):
                break
            if r.type is None or r.type.shape != chain[-1].type.shape:  # type: ignore[union-attr]
                break
            chain.append(r)
        if len(chain) == 1:
            continue
        members = list(chain)
        names = {m.name for m in members}
        # pull in element-wise producers of side operands read only by the group
        for m in chain[1:]:
            for i in m.inputs:
                side = _side_chain(prod.get(i), prod, names, taken, sole_reader, n)
                members.extend(side)
                names |= {p.name for p in side}
        members.sort(key=lambda m: pos[m.name])
        # the last member must be the chain's end (the group's single output)
        members.remove(chain[-1])
        members.append(chain[-1])
        taken |= names
        groups.append((members, "complex", n.op))

    # rule 2 and 3: injective chains, and reductions with their injective input
    for n in order:
        if n.name in taken:
            continue
        k = op_kind(n.op, n.attrs)
        if k in ("injective", "elemwise"):
            chain = [n]
            while True:
                r = sole_reader(chain[-1].name)
                if r is None or r.name in taken or not same_target(r, n):
                    break
                rk = op_kind(r.op, r.attrs)
                if rk in ("injective", "elemwise"):
                    chain.append(r)
                    continue
                if rk == "reduction":
                    chain.append(r)
                    k = "reduction"
                break
            if len(chain) > 1:
                taken |= {m.name for m in chain}
                anchor = chain[-1].op if k == "reduction" else chain[0].op
                groups.append((chain, "reduction" if k == "reduction" else "injective", anchor))

    replace: dict[str, Node] = {}
    drop: set[str] = set()
    for members, kind, anchor in groups:
        fused = _make_group(g, members, kind, anchor)
        replace[members[-1].name] = fused
        drop |= {m.name for m in members[:-1]}
    g.nodes = [replace.get(n.name, n) for n in order if n.name not in drop]
    return g.infer_types()


def unfuse(graph: Graph) -> Graph:
    """Inline every fused node's body again (the inverse of :func:`fuse`)."""
    g = graph.copy()
    nodes: list[Node] = []
    for n in g.topo_order():
        if n.op == "fused":
            body: Graph = n.attrs["body"]
            rename = dict(zip(body.inputs, n.inputs))
            for m in body.topo_order():
                c = m.copy()
                c.inputs = [rename.get(i, i) for i in c.inputs]
                nodes.append(c)
        else:
            nodes.append(n)
    g.nodes = nodes
    return g.infer_types()
