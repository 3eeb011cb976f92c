"""VDLA's packed layouts at the graph level: the layout-transformation pass (the numpy packing
itself is :mod:`vdla.compiler.targets.vdla.packing`).

Layouts (VTA's ``graph_pack``; ``b`` = ``Config.batch``, ``i`` = ``Config.block_in``,
``o`` = ``Config.block_out``):

* activations ``NCHW{b}n{c}c``: ``(N, C, H, W) -> (N/b, C/c, H, W, b, c)``; 2-D
  ``(N, C) -> (N/b, C/c, b, c)``. A conv's input uses ``c = i``, its output ``c = o``.
* weights ``OIHW{o}o{i}i``: ``(O, I, KH, KW) -> (O/o, I/i, KH, KW, o, i)``; dense
  ``(M, K) -> (M/o, K/i, o, i)``.
* per-channel constants (bias, shifts) ``(1, C, 1, 1) -> (1, C/c, 1, 1, 1, c)``.
* grouped conv2d weights: conv2d's packing of the OIHW weight (``I/G`` input channels),
  after merging groups into whole blocks if need be (:func:`group_merge`,
  :func:`merge_group_weight`);
* conv2d_transpose weights ``(I, O, k, k)`` (IOHW): the per-phase sub-kernels of the
  VDLA template, ``(s, s, O/o, I/i, J, J, o, i)`` (:func:`pack_transpose_weight`).

Every dimension split into blocks is zero-padded up to a multiple of its block first
(channel padding); ``unpack`` drops the padding again.

:func:`vdla_plan` says whether a GEMM node (conv2d, grouped conv2d, conv2d_transpose,
dense) fits a VDLA template with a given Config, or which constraint it breaks; the
partitioner places nodes by it and :func:`to_packed_layout` packs what it accepts.

:func:`to_packed_layout` rewrites the int8 convolutions/dense layers placed on VDLA (and
the element-wise integer ops that follow them) onto packed tensors, inserting ``pack`` /
``unpack`` nodes where a packed value meets an unpacked consumer — the paper's layout
transformation between producer and consumer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...config import Config
from ..targets.vdla.packing import pack_channel_const, pack_transpose_weight, pack_weight
from .ir import Graph, Node, TensorType

__all__ = [
    "group_merge",
    "padded_groups",
    "merge_group_weight",
    "VdlaPlan",
    "vdla_plan",
    "to_packed_layout",
]


def group_merge(cin: int, cout: int, groups: int, block_in: int, block_out: int) -> int | str:
    """How many consecutive groups of a grouped conv make one VDLA group, or why none can.

    VDLA's grouped template needs every group to be whole channel blocks (``I/G`` a multiple
    of ``block_in``, ``O/G`` of ``block_out``). ``m`` merged groups are one group of ``m I/G``
    input and ``m O/G`` output channels with a block-diagonal weight (zeros between the
    merged groups; exact), so the smallest ``m`` dividing ``G`` that makes whole blocks is
    taken: a depthwise conv's 16 channels of a block become one 16-channel group. A conv
    whose channels all fit one input and one output block merges into a single group (its
    channels are zero-padded as a plain conv's). The GEMM work stays that of the blocks the
    groups touch: VDLA multiplies whole blocks either way.
    """
    cg, og = cin // groups, cout // groups
    m = math.lcm(block_in // math.gcd(cg, block_in), block_out // math.gcd(og, block_out))
    if groups % m == 0:
        return m
    if cin <= block_in and cout <= block_out:
        return groups
    if padded_groups(cin, cout, groups, block_in, block_out) is not None:
        return m
    return (
        f"{groups} groups of {cg} input / {og} output channel(s) do not merge into groups of whole blocks "
        f"({block_in} input / {block_out} output channels): that takes {m} groups per block, {m} does not "
        f"divide {groups}, and zero groups up to a multiple of {m} would not fill exactly the zero-padded "
        "channel blocks"
    )


def padded_groups(cin: int, cout: int, groups: int, block_in: int, block_out: int) -> int | None:
    """The group count a grouped conv is zero-padded to so that its merged groups are whole
    blocks (a 24-channel depthwise conv: 32 groups, two of 16), or None when no padding is
    needed or none fits.

    The packed layout already zero-pads the channels to whole blocks (24 -> 32); the extra
    groups are exactly those padded channels, with zero weights, so the packed tensors keep
    their shapes and the real channels their values (the padded outputs are zero and are
    dropped on unpacking). It fits only when the padded groups fill exactly the padded
    input and output blocks."""
    cg, og = cin // groups, cout // groups
    m = math.lcm(block_in // math.gcd(cg, block_in), block_out // math.gcd(og, block_out))
    if groups % m == 0:
        return None
    gp = -(-groups // m) * m
    if gp * cg == -(-cin // block_in) * block_in and gp * og == -(-cout // block_out) * block_out:
        return gp
    return None


def merge_group_weight(w: np.ndarray, groups: int, merge: int, pad_to: int | None = None) -> np.ndarray:
    """A grouped conv's OIHW weight ``(O, I/G, KH, KW)`` as the weight of ``G / merge`` groups
    ``(O, merge * I/G, KH, KW)``: block-diagonal, each output channel's taps at its own
    group's input channels, zeros at the other merged groups'. ``pad_to`` (see
    :func:`padded_groups`): first append all-zero groups up to ``pad_to`` groups."""
    if pad_to is not None and pad_to > groups:
        og = w.shape[0] // groups
        w = np.concatenate([w, np.zeros(((pad_to - groups) * og, *w.shape[1:]), w.dtype)])
        groups = pad_to
    if merge == 1:
        return w
    o, cg = w.shape[:2]
    og = o // groups
    out = np.zeros((o, merge * cg, *w.shape[2:]), w.dtype)
    for g in range(groups):
        j = g % merge
        out[g * og : (g + 1) * og, j * cg : (j + 1) * cg] = w[g * og : (g + 1) * og]
    return out


@dataclass(frozen=True)
class VdlaPlan:
    """How a GEMM node maps onto a VDLA template (see :func:`vdla_plan`)."""

    #: conv2d_packed (conv2d, grouped conv2d with ``groups`` > 1), conv2d_transpose_packed or dense_packed
    op: str
    #: VDLA groups (grouped conv2d): the graph's groups / ``merge``
    groups: int = 1
    #: graph groups merged into one VDLA group (block-diagonal weight, see :func:`group_merge`)
    merge: int = 1
    #: the graph's groups plus the all-zero groups that fill its zero-padded channel blocks
    #: (see :func:`padded_groups`); 0 when none are added
    padded: int = 0

    def describe(self) -> str:
        if self.op == "conv2d_transpose_packed":
            return "int8 GEMM (conv2d_transpose, one stride-1 conv per output phase)"
        if self.merge > 1:
            pad = f", zero-padded to {self.padded} groups" if self.padded else ""
            return (f"int8 GEMM (grouped conv2d as {self.groups} group(s) of whole blocks, {self.merge} groups merged "
                    f"with block-diagonal weights{pad})")
        if self.groups > 1:
            return f"int8 GEMM (grouped conv2d, {self.groups} groups)"
        return "int8 GEMM"


def _same(v: Sequence[int]) -> bool:
    return len(set(v)) == 1


def vdla_plan(node: Node, graph: Graph, config: Config | None = None) -> VdlaPlan | str:
    """The VDLA template an int8 ``conv2d`` / ``conv2d_transpose`` / ``dense`` node fits with
    ``config``'s blocks, or the constraint it breaks (a sentence, for the partition reason).
    Operand dtypes are the partitioner's check, not this one's."""
    cfg = config or Config()
    op, a = node.op, node.attrs
    if len(node.inputs) != 2:
        return f"{op} with a bias input (VDLA adds the bias on its ALU: the quantised graph has a separate add)"
    if not graph.is_const(node.inputs[1]):
        return f"{op} weight {node.inputs[1]!r} is not a constant"
    if op == "dense":
        return VdlaPlan("dense_packed")
    xs, ws = graph.type_of(node.inputs[0]).shape, graph.type_of(node.inputs[1]).shape
    if op == "conv2d":
        if a["dilation"] != (1, 1):
            return f"conv2d dilation {a['dilation']} (the VDLA conv templates have no dilation)"
        g = a["groups"]
        if g == 1:
            return VdlaPlan("conv2d_packed")
        if not _same(a["padding"]):
            return (f"grouped conv2d padding {a['padding']} is not the same on every side (the grouped "
                    "template pads all four sides alike)")
        m = group_merge(xs[1], ws[0], g, cfg.block_in, cfg.block_out)
        if isinstance(m, str):
            return f"grouped conv2d: {m}"
        gp = padded_groups(xs[1], ws[0], g, cfg.block_in, cfg.block_out) if g % m else None
        if gp is not None:
            return VdlaPlan("conv2d_packed", gp // m, m, gp)
        return VdlaPlan("conv2d_packed", g // m, m)
    if op == "conv2d_transpose":
        from ..targets.vdla.env import VDLAError
        from ..targets.vdla.top.conv2d_transpose import transpose_geometry

        _, _, kh, kw = ws
        if kh != kw:
            return f"conv2d_transpose kernel {kh}x{kw} is not square (the template takes k x k kernels)"
        if not _same(a["strides"]):
            return f"conv2d_transpose strides {a['strides']} differ (the template takes one stride for both axes)"
        if not _same(a["padding"]):
            return f"conv2d_transpose padding {a['padding']} is not the same on every side"
        if a["output_padding"] != (0, 0):
            return f"conv2d_transpose output_padding {a['output_padding']} (the template needs 0)"
        try:
            transpose_geometry(xs[2], xs[3], kh, a["strides"][0], a["padding"][0])
        except VDLAError as e:
            return str(e)
        return VdlaPlan("conv2d_transpose_packed")
    return f"{op} has no VDLA template"


def _real_macs(n: Node, g: Graph) -> int:
    """A conv2d node's multiply-accumulates at its unpadded (graph) shapes, a spread (dilated)
    kernel's zero taps left out."""
    o, w = n.type.shape, g.type_of(n.inputs[1]).shape  # type: ignore[union-attr]
    real, spread = n.notes.get("taps", (1, 1))
    return int(np.prod(o)) * w[1] * w[2] * w[3] * real // spread


def _per_channel(t: TensorType, act: TensorType) -> bool:
    """Is a constant of type t a scalar or per-channel broadcast against activation ``act``?"""
    s, r = t.shape, len(act.shape)
    if t.size == 1:
        return True
    c = act.shape[1]
    if len(s) > r:
        return False
    s = (1,) * (r - len(s)) + s
    return s[1] == c and all(d == 1 for i, d in enumerate(s) if i != 1)


_ELEMWISE_PACKABLE = {"add", "sub", "mul", "relu", "clip", "shift", "channel_shift", "requantize", "cast",
                      "int_hard_swish"}


def to_packed_layout(graph: Graph, config: Config | None = None, targets: Sequence[str] = ("vdla",)) -> Graph:
    """Rewrite nodes placed on ``targets`` onto VDLA's packed layouts (see the module doc).

    Packed: int8 ``conv2d`` (grouped too) -> ``conv2d_packed``, int8 ``conv2d_transpose``
    -> ``conv2d_transpose_packed``, int8 ``dense`` -> ``dense_packed`` where :func:`vdla_plan`
    accepts them, and element-wise ops whose activation inputs are all packed. Other nodes
    get ``unpack`` ed inputs; graph outputs are unpacked.
    """
    cfg = config or Config()
    b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    g = graph.copy()
    g.infer_types()
    out = Graph(g.name)
    out.inputs = dict(g.inputs)
    out.consts = dict(g.consts)
    #: value -> (packed value name, block) for values available packed
    packed: dict[str, tuple[str, int]] = {}
    unpacked_cache: dict[str, str] = {}
    repacked: dict[tuple[str, int], str] = {}
    orig_type: dict[str, TensorType] = {}
    origin_types = {n.name: n.type for n in g.nodes}
    prod = g.producers()

    def typ(v: str) -> TensorType:
        return orig_type.get(v) or origin_types.get(v) or g.type_of(v)

    def emit(op: str, inputs: list[str], name: str, target: str | None, **attrs) -> str:
        nm = out.add_node(op, inputs, name=name, **attrs)
        out.nodes[-1].target = target
        return nm

    def unpacked(v: str) -> str:
        if v not in packed:
            return v
        if v not in unpacked_cache:
            name = v if v in g.outputs else f"{v}.unpack"
            unpacked_cache[v] = emit("unpack", [packed[v][0]], name, "cpu", shape=typ(v).shape)
        return unpacked_cache[v]

    def packed_as(v: str, block: int) -> str:
        if v in packed and packed[v][1] == block:
            return packed[v][0]
        key = (v, block)
        if key not in repacked:
            repacked[key] = emit("pack", [unpacked(v)], f"{v}.pack{block}", "cpu", batch=b, block=block)
        return repacked[key]

    def const_packed(v: str, block: int, act: TensorType) -> str:
        a = g.consts[v]
        if a.size == 1:
            return v
        rank = 6 if len(act.shape) == 4 else 4
        return out.add_const(f"{v}.packed", pack_channel_const(a, block, rank))

    def pname(v: str) -> str:  # a packed graph output keeps its name for the unpacked value
        return f"{v}.packed" if v in g.outputs else v

    for n in g.topo_order():
        on = n.target in targets
        ins = [g.type_of(i) for i in n.inputs]
        done = False
        if on and n.op in ("conv2d", "conv2d_transpose", "dense"):
            ok = ins[0].dtype in ("int8", "uint8") and ins[1].dtype == "int8"
            plan = vdla_plan(n, g, cfg) if ok else None
            if isinstance(plan, VdlaPlan):
                x = packed_as(n.inputs[0], bi)
                wc, a = g.consts[n.inputs[1]], n.attrs
                if plan.op == "conv2d_transpose_packed":
                    wp = pack_transpose_weight(wc, a["strides"][0], a["padding"][0], bo, bi, pad=True)
                    attrs = {"strides": a["strides"], "padding": a["padding"], "kernel": wc.shape[2:]}
                else:
                    if n.op == "conv2d":
                        wc = merge_group_weight(wc, a["groups"], plan.merge, plan.padded or None)
                    wp = pack_weight(wc, bo, bi, pad=True)
                    attrs = {"strides": a["strides"], "padding": a["padding"]} if n.op == "conv2d" else {}
                    if plan.groups > 1:
                        attrs["groups"] = plan.groups
                w = out.add_const(f"{n.inputs[1]}.packed", wp)
                nm = emit(plan.op, [x, w], pname(n.name), n.target, **attrs)
                out.nodes[-1].notes = dict(n.notes, layout=f"packed b={b} i={bi} o={bo}")
                if plan.merge > 1:  # the weight's zeros between merged groups are no real MACs
                    out.nodes[-1].notes["group_merge"] = plan.merge
                if n.op == "conv2d":  # the real MACs: the zero-padded channels' are none
                    out.nodes[-1].notes["macs"] = _real_macs(n, g)
                packed[n.name] = (nm, bo)
                orig_type[n.name] = n.type  # type: ignore[assignment]
                done = True
        elif on and n.op in _ELEMWISE_PACKABLE:
            acts = [i for i in n.inputs if not g.is_const(i)]
            blocks = [packed[i][1] for i in acts if i in packed]
            # an unpacked input computed on the target itself (an op this pass cannot pack)
            # keeps the node unpacked too, so it can fuse with that producer
            local = any(i in prod and prod[i].target in targets and i not in packed for i in acts)
            if (
                acts
                and not local
                and len(n.type.shape) in (2, 4)
                and all(  # type: ignore[union-attr]
                    _per_channel(g.type_of(i), n.type)
                    for i in n.inputs
                    if g.is_const(i)  # type: ignore[arg-type]
                )
                and all(typ(i).shape == n.type.shape for i in acts)
            ):  # type: ignore[union-attr]
                blk = blocks[0] if blocks else bo
                new_in = [const_packed(i, blk, n.type) if g.is_const(i) else packed_as(i, blk) for i in n.inputs]  # type: ignore[arg-type]
                nm = emit(n.op, new_in, pname(n.name), n.target, **n.attrs)
                out.nodes[-1].notes = dict(n.notes)
                packed[n.name] = (nm, blk)
                orig_type[n.name] = n.type  # type: ignore[assignment]
                done = True
        if not done:
            new = Node(n.name, n.op, [unpacked(i) for i in n.inputs], dict(n.attrs), n.target, dict(n.notes))
            out.nodes.append(new)
            out._infer_node(new)
    out.outputs = [unpacked(o) for o in g.outputs]
    return out.infer_types()


def unpacked_consumers(g: Graph) -> list[Node]:
    """The unpack nodes of a graph (the layout transforms back to NCHW)."""
    return [n for n in g.nodes if n.op == "unpack"]
