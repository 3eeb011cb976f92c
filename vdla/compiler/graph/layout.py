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

Channel plumbing in int8 (:mod:`.channels`) stays on the packed tensors: a channel split or
shuffle is a channel map of its source (:func:`channel_maps`), made only where read: a view
of whole blocks, else folded into the next conv2d's weights (a permutation of its input
channels is one of its weight's columns), else a 1x1 conv on VDLA by a 0/1 selection matrix;
a concat is ``concat_packed`` (inputs that are not whole blocks each get their own
zero-padded blocks, the real channels a map again), which the executor places in DRAM; an
int8 max-pool is ``max_pool2d_packed``. Grouped convs whose channels are not whole blocks
take zero groups up to the padded blocks (:func:`padded_groups`).
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
    "real_macs",
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


def real_macs(n: Node, g: Graph) -> int:
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


#: int8 ops that only move channels (:mod:`.channels`): on packed data a view, a gather or a weight fold
_CHANNEL_OPS = ("slice", "reshape", "transpose")


def channel_maps(graph: Graph) -> dict[str, tuple[str, tuple[int, ...]]]:
    """The int8 values that are a channel gather of a 4-D value: ``value -> (source, indices)``
    with ``value == source[:, indices]`` (a channel split, a channel shuffle's reshape /
    transpose / reshape, and chains of them), found by running the chain on a probe tensor
    of element numbers. Values on the way that are not such a gather (the shuffle's 5-D
    ones) are left out; the chain goes on through them."""
    probes: dict[str, tuple[str, np.ndarray]] = {}  # value -> (4-D source, its element numbers)
    out: dict[str, tuple[str, tuple[int, ...]]] = {}
    from .ops.registry import get_op

    for n in graph.topo_order():
        if n.op not in _CHANNEL_OPS or n.type is None or n.type.dtype not in ("int8", "uint8") or len(n.inputs) != 1:
            continue
        v = n.inputs[0]
        if v not in probes:
            t = graph.type_of(v)
            if len(t.shape) != 4 or graph.is_const(v):
                continue
            probes[v] = (v, np.arange(int(np.prod(t.shape)), dtype=np.int64).reshape(t.shape))
        src, pv = probes[v]
        pr = get_op(n.op, n.name).compute(n.attrs, [pv])
        probes[n.name] = (src, pr)
        st = graph.type_of(src).shape
        if pr.ndim != 4 or pr.shape[0] != st[0] or pr.shape[2:] != st[2:]:
            continue
        idx = (pr[0, :, 0, 0] // (st[2] * st[3])) % st[1]
        base = np.arange(int(np.prod(st)), dtype=np.int64).reshape(st)
        if np.array_equal(pr, base[:, idx]):
            out[n.name] = (src, tuple(int(i) for i in idx))
    return out


def _block_range(idx: Sequence[int], channels: int, block: int) -> tuple[int, int] | None:
    """The packed blocks ``[b0, b1)`` that are exactly the channels ``idx`` (in order, from a
    whole block; to a block's end or the tensor's last channel), or None."""
    a = idx[0]
    if a % block or list(idx) != list(range(a, a + len(idx))):
        return None
    e = a + len(idx)
    if e % block and e != channels:
        return None
    return a // block, -(-e // block)


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
        if v in lazy:
            materialize(v)
        if v not in packed:
            return v
        if v not in unpacked_cache:
            name = v if v in g.outputs else f"{v}.unpack"
            unpacked_cache[v] = emit("unpack", [packed[v][0]], name, "cpu", shape=typ(v).shape)
        return unpacked_cache[v]

    def packed_as(v: str, block: int) -> str:
        if v in lazy:
            materialize(v)
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

    maps = channel_maps(g)
    deferred: dict[str, Node] = {}

    def ensure(v: str) -> None:
        """Emit deferred node ``v`` (and the deferred nodes it reads) now that something reads it."""
        if v in deferred:
            emit_unpacked(deferred.pop(v))

    def emit_unpacked(n: Node) -> None:
        for i in n.inputs:
            ensure(i)
        new = Node(n.name, n.op, [unpacked(i) for i in n.inputs], dict(n.attrs), n.target, dict(n.notes))
        out.nodes.append(new)
        out._infer_node(new)
    #: channel gathers of a packed value, made only where a reader needs them (value -> (source, indices))
    lazy: dict[str, tuple[str, tuple[int, ...]]] = {}

    def materialize(v: str) -> None:
        """Make lazy gather ``v`` packed: a slice of whole blocks (a view) or a packed gather."""
        src, idx = lazy.pop(v)
        sp, blk = packed[src]
        st = typ(src).shape
        r = _block_range(idx, st[1], blk)
        if r is not None:
            ps = out.type_of(sp).shape
            nm = emit("slice", [sp], pname(v), "cpu", begin=(0, r[0], 0, 0, 0, 0), end=(ps[0], r[1], *ps[2:]),
                      step=(1,) * 6)
            out.nodes[-1].notes["reason"] = "channel split of whole packed blocks (a view)"
        elif gather_on_vdla(src):
            # a gather is a 1x1 conv by a 0/1 selection matrix: exact (one product per output, and the
            # requantize by 0 keeps every int8), on the device where the data is, stored in the
            # block range of a concat it feeds (a placement) instead of a host step
            w = np.zeros((len(idx), st[1], 1, 1), np.int8)
            w[np.arange(len(idx)), list(idx)] = 1
            wn = out.add_const(f"{v}.select", pack_weight(w, bo, bi, pad=True))
            acc = emit("conv2d_packed", [sp, wn], f"{v}.select", "vdla", strides=(1, 1), padding=(0, 0, 0, 0))
            why = ("channel split / shuffle that does not keep whole blocks, read where it cannot be folded (only "
                   "a plain conv2d's weights take a channel permutation; not a grouped conv, a concat, a pool): a "
                   "1x1 conv by a 0/1 selection matrix on VDLA")
            out.nodes[-1].notes.update(reason=why, macs=0, layout=f"packed b={b} i={bi} o={bo}")  # moves, no MACs
            nm = emit("requantize", [acc], pname(v), "vdla", shift=0, min=-128, max=127, dtype="int8")
            out.nodes[-1].notes["reason"] = why
            blk = bo
        else:
            nm = emit("channel_gather_packed", [sp], pname(v), "cpu", indices=idx)
            out.nodes[-1].notes["reason"] = (
                "channel split / shuffle that does not keep whole blocks, read where it cannot be folded (only a "
                "plain conv2d's weights take a channel permutation; not a grouped conv, a pool or an output), "
                "in blocks that are not VDLA's conv input blocks: a gather on the packed int8 tensor")
        packed[v] = (nm, blk)
        orig_type[v] = typ(v)

    def gather_on_vdla(src: str) -> bool:
        """Can a gather of packed ``src`` run on VDLA (a selection-matrix conv)? Its blocks must be
        the conv's input blocks."""
        return "vdla" in targets and packed[src][1] == bi

    def folded_input(n: Node) -> tuple[str, np.ndarray] | None:
        """A conv2d reading a lazy gather ``source[:, idx]``: the packed source, and the weight
        with the gather folded in (input channel ``idx[j]`` takes column ``j``; zeros elsewhere)."""
        v = n.inputs[0]
        if v not in lazy or n.op != "conv2d" or n.attrs["groups"] != 1:
            return None
        src, idx = lazy[v]
        if len(set(idx)) != len(idx) or packed[src][1] != bi:
            return None
        w = g.consts[n.inputs[1]]
        wf = np.zeros((w.shape[0], typ(src).shape[1], *w.shape[2:]), w.dtype)
        wf[:, list(idx)] = w
        return packed[src][0], wf

    for n in g.topo_order():
        on = n.target in targets
        ins = [g.type_of(i) for i in n.inputs]
        done = False
        if on and n.op in ("conv2d", "conv2d_transpose", "dense"):
            ok = ins[0].dtype in ("int8", "uint8") and ins[1].dtype == "int8"
            plan = vdla_plan(n, g, cfg) if ok else None
            if isinstance(plan, VdlaPlan):
                fold = folded_input(n)
                x = packed_as(n.inputs[0], bi) if fold is None else fold[0]
                wc, a = g.consts[n.inputs[1]] if fold is None else fold[1], n.attrs
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
                    out.nodes[-1].notes["macs"] = real_macs(n, g)
                if fold is not None:
                    out.nodes[-1].notes["channel_fold"] = (
                        f"reads {n.inputs[0]!r} as a channel permutation of {lazy[n.inputs[0]][0]!r} folded into "
                        "its weights")
                packed[n.name] = (nm, bo)
                orig_type[n.name] = n.type  # type: ignore[assignment]
                done = True
        elif n.name in maps and maps[n.name][0] in packed | lazy and n.name not in g.outputs:
            src, idx = maps[n.name]
            if src in lazy:  # a gather of a gather: one gather of the first source
                src, first = lazy[src]
                idx = tuple(first[i] for i in idx)
            lazy[n.name] = (src, idx)
            done = True
        elif (
            n.op == "concat"
            and len(n.type.shape) == 4  # type: ignore[union-attr]
            and n.attrs["axis"] in (1, -3)
            and n.type.dtype in ("int8", "uint8")  # type: ignore[union-attr]
            and any(i in packed or i in lazy for i in n.inputs)
        ):
            blk = next(packed[i][1] if i in packed else packed[lazy[i][0]][1] for i in n.inputs
                       if i in packed or i in lazy)
            ins, gathers, chans = [], [], []
            for i in n.inputs:
                if i in lazy and packed[lazy[i][0]][1] == blk and not gather_on_vdla(lazy[i][0]):
                    # a split / shuffle of a host value: gathered by the concat itself
                    ins.append(packed[lazy[i][0]][0])
                    gathers.append(lazy[i][1])
                else:
                    ins.append(packed_as(i, blk))
                    gathers.append(())
                chans.append(typ(i).shape[1])
            # an input that is not whole blocks before the last: each input in its own zero-padded
            # blocks (a placement still), the real channels a gather of that, folded into the readers
            holes = any(c % blk for c in chans[:-1])
            width = [-(-c // blk) * blk for c in chans] if holes else chans
            name = f"{n.name}.blocks" if holes else pname(n.name)
            nm = emit("concat_packed", ins, name, n.target, channels=tuple(width),
                      gathers=tuple(gathers) if any(gathers) else ())
            out.nodes[-1].notes = dict(n.notes, reason="channel concat of packed int8 tensors (blocks placed "
                                       "one after the other" + (", each input in its own zero-padded blocks)"
                                                                if holes else ")"))
            if holes:
                nt = n.type
                assert nt is not None
                orig_type[nm] = TensorType((nt.shape[0], sum(width), *nt.shape[2:]), nt.dtype)
                packed[nm] = (nm, blk)
                real = [off + j for off, c in zip(np.cumsum([0, *width[:-1]]), chans) for j in range(c)]
                lazy[n.name] = (nm, tuple(int(r) for r in real))
            else:
                packed[n.name] = (nm, blk)
                orig_type[n.name] = n.type  # type: ignore[assignment]
            done = True
        elif (
            n.op == "max_pool2d"
            and ins[0].dtype in ("int8", "uint8")
            and len(ins[0].shape) == 4
            and (n.inputs[0] in packed or n.inputs[0] in lazy)
        ):
            src = n.inputs[0]
            why = "int8 max-pool on the packed tensor (VDLA has no pooling template; no unpack, no repack)"
            if src in lazy and n.name not in g.outputs:
                # a pool works channel by channel: pool the map's source (its unused channels too) and
                # keep the map, so a concat's padded blocks or a shuffle pass through without a gather
                s0, idx = lazy[src]
                nm = emit("max_pool2d_packed", [packed[s0][0]], f"{n.name}.blocks", n.target, **n.attrs)
                out.nodes[-1].notes = dict(n.notes, reason=why)
                st, nt = typ(s0).shape, n.type
                assert nt is not None
                orig_type[nm] = TensorType((st[0], st[1], *nt.shape[2:]), nt.dtype)
                packed[nm] = (nm, packed[s0][1])
                lazy[n.name] = (nm, idx)
                done = True
            else:
                blk = packed[src][1] if src in packed else packed[lazy[src][0]][1]
                nm = emit("max_pool2d_packed", [packed_as(src, blk)], pname(n.name), n.target, **n.attrs)
                out.nodes[-1].notes = dict(n.notes, reason=why)
                packed[n.name] = (nm, blk)
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
        if not done and n.op in _CHANNEL_OPS and n.name not in g.outputs and any(
                i in maps or i in lazy or i in deferred for i in n.inputs):
            # a shuffle's 5-D reshape / transpose on the way to a channel map: emitted only if read
            deferred[n.name] = n
            done = True
        if not done:
            emit_unpacked(n)
    for o in g.outputs:
        ensure(o)
    out.outputs = [unpacked(o) for o in g.outputs]
    return out.prune().infer_types()


def unpacked_consumers(g: Graph) -> list[Node]:
    """The unpack nodes of a graph (the layout transforms back to NCHW)."""
    return [n for n in g.nodes if n.op == "unpack"]
