"""VDLA's packed layouts: numpy pack/unpack helpers and the layout-transformation pass.

Layouts (VTA's ``graph_pack``; ``b`` = ``Config.batch``, ``i`` = ``Config.block_in``,
``o`` = ``Config.block_out``):

* activations ``NCHW{b}n{c}c``: ``(N, C, H, W) -> (N/b, C/c, H, W, b, c)``; 2-D
  ``(N, C) -> (N/b, C/c, b, c)``. A conv's input uses ``c = i``, its output ``c = o``.
* weights ``OIHW{o}o{i}i``: ``(O, I, KH, KW) -> (O/o, I/i, KH, KW, o, i)``; dense
  ``(M, K) -> (M/o, K/i, o, i)``.
* per-channel constants (bias, shifts) ``(1, C, 1, 1) -> (1, C/c, 1, 1, 1, c)``.

Every dimension split into blocks is zero-padded up to a multiple of its block first
(channel padding); ``unpack`` drops the padding again.

:func:`to_packed_layout` rewrites the int8 convolutions/dense layers placed on VDLA (and
the element-wise integer ops that follow them) onto packed tensors, inserting ``pack`` /
``unpack`` nodes where a packed value meets an unpacked consumer — the paper's layout
transformation between producer and consumer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...config import Config
from .ir import Graph, GraphError, Node, TensorType

__all__ = [
    "round_up",
    "packed_shape",
    "pack_activation",
    "unpack_activation",
    "pack_weight",
    "unpack_weight",
    "pack_channel_const",
    "to_packed_layout",
]


def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def packed_shape(shape: Sequence[int], batch: int, block: int) -> tuple[int, ...]:
    """Packed shape of an NCHW (or NC) activation."""
    n, c, *hw = shape
    return (round_up(n, batch) // batch, round_up(c, block) // block, *hw, batch, block)


def _pad_axes(a: np.ndarray, multiples: dict[int, int]) -> np.ndarray:
    pads = [(0, 0)] * a.ndim
    for ax, m in multiples.items():
        pads[ax] = (0, round_up(a.shape[ax], m) - a.shape[ax])
    return np.pad(a, pads) if any(p[1] for p in pads) else a


def pack_activation(x: np.ndarray, batch: int, block: int) -> np.ndarray:
    """``(N, C, H, W) -> (N/b, C/c, H, W, b, c)`` or ``(N, C) -> (N/b, C/c, b, c)``, zero-padded."""
    if x.ndim not in (2, 4):
        raise GraphError(f"pack_activation needs a 2-D or 4-D array, got shape {x.shape}")
    x = _pad_axes(x, {0: batch, 1: block})
    n, c, *hw = x.shape
    y = x.reshape(n // batch, batch, c // block, block, *hw)
    perm = (0, 2, 4, 5, 1, 3) if x.ndim == 4 else (0, 2, 1, 3)
    return np.ascontiguousarray(y.transpose(perm))


def unpack_activation(xp: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Inverse of :func:`pack_activation`; ``shape`` is the original (unpadded) shape."""
    shape = tuple(shape)
    if xp.ndim == 6:
        nb, cb, h, w, b, c = xp.shape
        x = xp.transpose(0, 4, 1, 5, 2, 3).reshape(nb * b, cb * c, h, w)
    elif xp.ndim == 4:
        nb, cb, b, c = xp.shape
        x = xp.transpose(0, 2, 1, 3).reshape(nb * b, cb * c)
    else:
        raise GraphError(f"unpack_activation needs a 4-D or 6-D array, got shape {xp.shape}")
    return np.ascontiguousarray(x[tuple(slice(0, s) for s in shape)])


def pack_weight(w: np.ndarray, block_out: int, block_in: int) -> np.ndarray:
    """``(O, I, KH, KW) -> (O/o, I/i, KH, KW, o, i)`` or ``(M, K) -> (M/o, K/i, o, i)``, zero-padded."""
    if w.ndim not in (2, 4):
        raise GraphError(f"pack_weight needs a 2-D or 4-D array, got shape {w.shape}")
    w = _pad_axes(w, {0: block_out, 1: block_in})
    o, i, *k = w.shape
    y = w.reshape(o // block_out, block_out, i // block_in, block_in, *k)
    perm = (0, 2, 4, 5, 1, 3) if w.ndim == 4 else (0, 2, 1, 3)
    return np.ascontiguousarray(y.transpose(perm))


def unpack_weight(wp: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Inverse of :func:`pack_weight`."""
    return unpack_activation(wp, shape)  # same index algebra


def pack_channel_const(c: np.ndarray, block: int, rank: int) -> np.ndarray:
    """A per-channel constant broadcastable against a packed tensor of ``rank`` 6 or 4."""
    v = np.asarray(c).reshape(-1)
    v = np.pad(v, (0, round_up(v.size, block) - v.size))
    shape = (1, v.size // block, 1, 1, 1, block) if rank == 6 else (1, v.size // block, 1, block)
    return np.ascontiguousarray(v.reshape(shape))


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


_ELEMWISE_PACKABLE = {"add", "sub", "mul", "relu", "clip", "shift", "requantize", "cast"}


def to_packed_layout(graph: Graph, config: Config | None = None, targets: Sequence[str] = ("vdla",)) -> Graph:
    """Rewrite nodes placed on ``targets`` onto VDLA's packed layouts (see the module doc).

    Packed: int8 ``conv2d`` (groups 1, dilation 1, no bias input) -> ``conv2d_packed``,
    int8 ``dense`` -> ``dense_packed``, and element-wise ops whose activation inputs are
    all packed. Other nodes get ``unpack`` ed inputs; graph outputs are unpacked.
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
        if on and n.op in ("conv2d", "dense") and len(n.inputs) == 2 and g.is_const(n.inputs[1]):
            ok = ins[0].dtype in ("int8", "uint8") and ins[1].dtype == "int8"
            if n.op == "conv2d":
                ok = ok and n.attrs["groups"] == 1 and n.attrs["dilation"] == (1, 1)
            if ok:
                x = packed_as(n.inputs[0], bi)
                w = out.add_const(f"{n.inputs[1]}.packed", pack_weight(g.consts[n.inputs[1]], bo, bi))
                if n.op == "conv2d":
                    nm = emit(
                        "conv2d_packed",
                        [x, w],
                        pname(n.name),
                        n.target,
                        strides=n.attrs["strides"],
                        padding=n.attrs["padding"],
                    )
                else:
                    nm = emit("dense_packed", [x, w], pname(n.name), n.target)
                out.nodes[-1].notes = dict(n.notes, layout=f"packed b={b} i={bi} o={bo}")
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
