"""Shallow convolutions on VDLA as an unfold (im2col) on the host and a 1x1 convolution.

VDLA's conv templates reduce over whole blocks of input channels at every tap, so a
convolution with fewer input channels than the block (a network's stem: 3 colour channels)
multiplies mostly zeros: MobileNetV2's 3x3 stem pads 3 channels to 16 at each of its 9 taps
(19 % of the GEMM's work real). Unfolding the input first puts (channel, tap) on the reduction
axis instead: 27 values padded to 32 (84 % real), and the convolution becomes a 1x1 on the core
with the weight reshaped to (O, C*KH*KW, 1, 1). The integers are the same: the same int8
products, summed exactly in int32. The unfold is a gather of the int8 input on the CPU, where
the input is quantised anyway; :func:`unfold_shallow_convs` rewrites every VDLA conv2d it
makes cheaper and notes why on both nodes.
"""

from __future__ import annotations

from ...config import Config
from .ir import Graph, Node
from .layout import VdlaPlan, vdla_plan

__all__ = ["unfold_shallow_convs", "saves_gemm_work"]


def _blocks(n: int, block: int) -> int:
    return -(-n // block)


def saves_gemm_work(channels: int, kh: int, kw: int, block: int) -> bool:
    """Does an unfold cut a conv's reduction work: fewer padded blocks over (channel, tap) than
    ``kh*kw`` taps of the channels padded to whole blocks?"""
    return kh * kw > 1 and _blocks(channels * kh * kw, block) < kh * kw * _blocks(channels, block)


def _candidate(n: Node, g: Graph, block: int) -> bool:
    if n.op != "conv2d" or n.target != "vdla" or n.attrs["groups"] != 1 or n.attrs["dilation"] != (1, 1):
        return False
    if "taps" in n.notes or not g.is_const(n.inputs[1]):  # a spread (dilated) kernel counts its real taps
        return False
    _, c, kh, kw = g.consts[n.inputs[1]].shape
    return c < block and saves_gemm_work(c, kh, kw, block)


def unfold_shallow_convs(graph: Graph, config: Config | None = None) -> Graph:
    """A copy of a partitioned graph whose VDLA convolutions with fewer input channels than the
    Config's ``block_in`` read an ``unfold`` of their input (on the CPU) as 1x1 convolutions,
    where that needs fewer GEMM blocks (:func:`saves_gemm_work`)."""
    block = (config or Config()).block_in
    g = graph.copy()
    if not any(_candidate(n, g, block) for n in g.nodes):
        return graph
    nodes: list[Node] = []
    made: list[tuple[Node, Node]] = []  # (unfold, its 1x1 conv)
    for n in g.nodes:
        if not _candidate(n, g, block):
            nodes.append(n)
            continue
        w = g.consts[n.inputs[1]]
        o, c, kh, kw = w.shape
        col = Node(g.fresh(f"{n.name}.unfold"), "unfold", [n.inputs[0]],
                   {"kernel": (kh, kw), "strides": n.attrs["strides"], "padding": n.attrs["padding"]}, "cpu",
                   {"reason": f"unfold (im2col) of {n.name!r}'s {c}-channel input: its {c} channels x {kh}x{kw} "
                              f"taps on the GEMM's reduction ({_blocks(c * kh * kw, block)} blocks of {block}, not "
                              f"{kh * kw * _blocks(c, block)})"})
        flat = g.add_const(f"{n.inputs[1]}.unfolded", w.reshape(o, c * kh * kw, 1, 1))
        conv = Node(n.name, "conv2d", [col.name, flat, *n.inputs[2:]],
                    {**n.attrs, "strides": (1, 1), "padding": (0, 0, 0, 0)}, n.target, dict(n.notes))
        nodes += [col, conv]
        made.append((col, conv))
    g.nodes = nodes
    g.infer_types()
    for col, conv in made:
        plan = vdla_plan(conv, g, config)
        # a 1x1 over the (channel, tap) blocks fits wherever the k x k conv did; say what it became
        conv.notes["reason"] = (plan.describe() if isinstance(plan, VdlaPlan) else str(plan)) + \
            f"; a 1x1 conv of its unfolded {col.attrs['kernel'][0]}x{col.attrs['kernel'][1]} input"
    return g
