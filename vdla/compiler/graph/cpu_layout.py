"""The CPU's packed layout at graph level: a float graph rewritten onto NCHW[x]c for llvm
(TVM's ``AlterOpLayout`` to ``conv2d_NCHWc`` on x86).

:func:`to_nchwc` walks the graph in order and

* turns each float convolution with constant weights into ``conv2d_nchwc`` (groups 1),
  ``conv2d_winograd_nchwc`` (a 3x3, stride-1 one the cost rule gives to Winograd's algorithm,
  its weights transformed here) or ``depthwise_conv2d_nchwc`` (one filter per channel), its
  weights and bias packed once here;
* picks each convolution's blocks: ``(tile_ic, tile_oc)`` of the tuned record of its
  ``conv2d_NCHWc.x86`` workload when a tuning log is applied (``apply_history_best``; such a
  conv stays direct, never Winograd), else the cost rule (the input block its producer already has; the output block whose register
  tile holds the most accumulators, :func:`~vdla.compiler.targets.llvm.schedules.conv2d.conv_block`);
* packs a dense layer's constant weight by blocks of output features, ``dense_blocked``;
* keeps values packed through the ops that do not care about the layout: the element-wise
  ones (per-channel constants such as a PReLU slope packed alike), the pools, concat along
  channels when every part fills whole blocks, slices of whole channel blocks (views), and
  ShuffleNet's channel shuffle (reshape, transpose, reshape: one ``channel_shuffle``);
* inserts a ``layout_transform`` only where a block changes or a value meets an op that
  needs NCHW (a flatten, a transpose, a graph output): one per value and block, shared by
  its readers.

The fusion pass then folds the element-wise tails (bias, ReLU, the residual add) into the
packed convolutions; the strategy declares them with ``topi.conv2d_NCHWc`` /
``topi.depthwise_conv2d_NCHWc`` and the NCHW[x]c schedules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autotvm.dispatch import query
from ..targets.llvm.schedules.conv2d import channel_block, conv_block
from ..targets.llvm.schedules.winograd import winograd_tile
from ..topi.activation import ACTIVATIONS
from ..topi.conv2d import pack_kernel
from ..topi.winograd import winograd_weight
from .ir import Graph, Node
from .ops.nchwc import block_dense_weight, to_blocks

__all__ = ["to_nchwc", "conv_workload"]

#: element-wise ops whose result does not depend on the layout (numpy broadcasting of their
#: constants is per channel or per tensor, which a packed constant keeps)
_ELEMWISE = frozenset({"relu", "clip", "add", "sub", "mul", "div", "maximum", "minimum", "pow", "prelu", "exp",
                       "log", "sqrt", "tanh", "sigmoid", "neg", "abs", "leaky_relu", "floor", "ceil", *ACTIVATIONS})
_POOLS = frozenset({"max_pool2d", "avg_pool2d", "global_avg_pool2d"})


def conv_workload(n: Node, data_shape: tuple[int, ...], weight_shape: tuple[int, ...]) -> list[Any] | None:
    """The ``conv2d_NCHWc.x86`` workload ``[N, IC, H, W, OC, K, stride, pad]`` of a conv2d node, or
    None when the template's arguments cannot name it (non-square kernel or input, mixed strides
    or paddings, dilation)."""
    at = n.attrs
    nb, ic, h, w = data_shape
    oc, _, kh, kw = weight_shape
    if kh != kw or h != w or len(set(at["strides"])) != 1 or len(set(at["padding"])) != 1 or tuple(
            at["dilation"]) != (1, 1):
        return None
    return ["conv2d_NCHWc.x86", [nb, ic, h, w, oc, kh, int(at["strides"][0]), int(at["padding"][0])]]


class _Rewriter:
    """The walk of :func:`to_nchwc`: the new graph, and where each value now is and in which block."""

    def __init__(self, graph: Graph, lanes: int, regs: int, winograd: bool = True) -> None:
        self.src = graph
        self.winograd = winograd
        self.lanes, self.regs = lanes, regs
        self.g = Graph(graph.name)
        self.g.inputs = dict(graph.inputs)
        self.g.consts = dict(graph.consts)
        self.at: dict[str, str] = {v: v for v in [*graph.inputs, *graph.consts]}  # value -> its name here
        self.block: dict[str, int] = {}  # name here -> block (absent: plain)
        self.forms: dict[tuple[str, int], str] = {}  # (name here, block) -> the transformed value
        self.readers = graph.consumers()
        self.skip: set[str] = set()  # nodes already rewritten with an earlier one (a shuffle's chain)

    def blk(self, v: str) -> int:
        return self.block.get(self.at[v], 0)

    def as_block(self, v: str, b: int) -> str:
        """Value ``v`` (an original name) in block ``b`` (0: NCHW), transformed once per block."""
        name = self.at[v]
        src = self.block.get(name, 0)
        if src == b:
            return name
        key = (name, b)
        if key not in self.forms:
            if v in self.src.consts:
                self.forms[key] = self.g.add_const(f"{v}.nchw{b}c" if b else f"{v}.nchw",
                                                   to_blocks(self.src.consts[v], src, b))
            else:  # a graph output's NCHW form is the output itself (its packed producer was renamed)
                out = f"{v}.nchw{b}c" if b else v if v in self.src.outputs else f"{v}.nchw"
                self.forms[key] = self.g.add_node("layout_transform", [name], name=out, src=src, dst=b)
            if b:
                self.block[self.forms[key]] = b
        return self.forms[key]

    def emit(self, n: Node, op: str, inputs: list[str], attrs: dict[str, Any], block: int) -> None:
        # a graph output keeps its name for the NCHW value the transform back makes (see finish)
        name = self.g.fresh(f"{n.name}.nchwc") if block and n.name in self.src.outputs else n.name
        made = self.g.add_node(op, inputs, name=name, **attrs)
        node = self.g.nodes[-1]
        node.target, node.notes = n.target, dict(n.notes)
        self.at[n.name] = made
        if block:
            self.block[made] = block

    def const(self, name: str, value: np.ndarray) -> str:
        return self.g.add_const(name, value)

    # -- the node kinds ---------------------------------------------------------------------
    def conv(self, n: Node) -> bool:
        if len(n.inputs) < 2 or any(i not in self.src.consts for i in n.inputs[1:]):
            return False
        x, w = self.src.type_of(n.inputs[0]), self.src.consts[n.inputs[1]]
        if x.dtype != "float32" or w.dtype != np.float32 or len(x.shape) != 4:
            return False
        groups, c, oc = int(n.attrs.get("groups", 1)), x.shape[1], w.shape[0]
        bias = self.src.consts[n.inputs[2]].astype(np.float32) if len(n.inputs) == 3 else None
        at = {k: n.attrs[k] for k in ("strides", "padding", "dilation")}
        have = self.blk(n.inputs[0])
        if groups == c and w.shape[1] == 1 and oc == c:  # depthwise, channel multiplier 1
            cb = have if have and c % have == 0 else channel_block(c, self.lanes)
            if cb is None:
                return False
            wt = np.ascontiguousarray(w.reshape(c // cb, cb, *w.shape[2:]).transpose(0, 2, 3, 1))
            ins = [self.as_block(n.inputs[0], cb), self.const(f"{n.inputs[1]}.nchw{cb}c", wt)]
            if bias is not None:
                ins.append(self.const(f"{n.inputs[2]}.nchw{cb}c", bias.reshape(1, c // cb, 1, 1, cb)))
            self.emit(n, "depthwise_conv2d_nchwc", ins, at, cb)
            return True
        if groups != 1:
            return False
        wl = conv_workload(n, x.shape, w.shape)
        tuned = query("llvm", wl) if wl is not None else None  # the record of its direct form, if any
        blocks = self.conv_blocks(n, x.shape, w.shape, have, tuned)
        if blocks is None:
            return False
        cb, ob = blocks
        m = 0 if tuned is not None else self.winograd_tile(n, w.shape)
        if m:
            packed = self.const(f"{n.inputs[1]}.winograd{m}.{cb}i{ob}o", winograd_weight(w, m, cb, ob))
            op, attrs = "conv2d_winograd_nchwc", {"padding": at["padding"], "m": m}
        else:
            packed = self.const(f"{n.inputs[1]}.nchw{cb}i{ob}o", pack_kernel(w, cb, ob))
            op, attrs = "conv2d_nchwc", at
        ins = [self.as_block(n.inputs[0], cb), packed]
        if bias is not None:
            ins.append(self.const(f"{n.inputs[2]}.nchw{ob}c", bias.reshape(1, oc // ob, 1, 1, ob)))
        self.emit(n, op, ins, attrs, ob)
        return True

    def winograd_tile(self, n: Node, ws: tuple[int, ...]) -> int:
        """Winograd's output tile for a 3x3, stride-1, undilated conv the cost rule gives it to
        (:func:`~vdla.compiler.targets.llvm.schedules.winograd.winograd_tile`), else 0. (A conv
        whose direct form has a tuned record stays direct, :meth:`conv`: the log is the user's
        measured choice.)"""
        at = n.attrs
        if not self.winograd or tuple(ws[2:]) != (3, 3) or tuple(at["strides"]) != (1, 1) or \
                tuple(at["dilation"]) != (1, 1):
            return 0
        out = self.src.type_of(n.name).shape
        return winograd_tile(ws[1], ws[0], int(out[2]), int(out[3])) or 0

    def conv_blocks(self, n: Node, xs: tuple[int, ...], ws: tuple[int, ...], have: int,
                    tuned: Any) -> tuple[int, int] | None:
        """(input block, output block): the ``tuned`` record's (of the conv's direct workload, or
        None), else the cost rule's."""
        c, oc = xs[1], ws[0]
        if tuned is not None:
            cb, ob = tuned["tile_ic"].size[-1], tuned["tile_oc"].size[-1]
            if c % cb == 0 and oc % ob == 0:
                return cb, ob
        out = self.src.type_of(n.name).shape
        ob = conv_block(oc, int(out[2]), int(out[3]), self.lanes, self.regs)
        if ob is None:
            return None
        if have and c % have == 0:
            return have, ob
        cb = channel_block(c, self.lanes)
        if cb is None:  # a few channels (an image's three) are one block; many that no block divides stay NCHW
            if c > 2 * self.lanes:
                return None
            cb = c
        return cb, ob

    def elemwise(self, n: Node) -> bool:
        out = n.type
        if out is None or out.dtype != "float32" or len(out.shape) != 4:
            return False
        acts = [i for i in n.inputs if i not in self.src.consts]
        b = next((self.blk(i) for i in acts if self.blk(i)), 0)
        if not b or any(self.src.type_of(i).shape != out.shape for i in acts):
            return False
        ins = []
        for i in n.inputs:
            if i in self.src.consts:
                packed = self.per_channel(self.src.consts[i], out.shape[1], b)
                if packed is None:
                    return False
                ins.append(self.const(f"{i}.nchw{b}c", packed))
            else:
                ins.append(self.as_block(i, b))
        self.emit(n, n.op, ins, dict(n.attrs), b)
        return True

    def per_channel(self, a: np.ndarray, c: int, b: int) -> np.ndarray | None:
        """A constant broadcast against NCHW as a constant broadcast alike against NCHW[b]c, or None."""
        if a.ndim > 4:
            return None
        s = (1,) * (4 - a.ndim) + a.shape
        if a.size == 1:
            return a.reshape((1,) * a.ndim) if a.ndim else a
        if s[0] != 1 or s[2:] != (1, 1) or s[1] != c:
            return None
        return np.ascontiguousarray(a.reshape(1, c // b, 1, 1, b))

    def pool(self, n: Node) -> bool:
        b = self.blk(n.inputs[0])
        if not b:
            return False
        self.emit(n, n.op, [self.at[n.inputs[0]]], dict(n.attrs), b)
        return True

    def concat(self, n: Node) -> bool:
        out = n.type
        if out is None or len(out.shape) != 4 or int(n.attrs["axis"]) % 4 != 1 or out.dtype != "float32":
            return False
        # the smallest block among the packed parts: the others re-block to it
        b = min((self.blk(i) for i in n.inputs if i not in self.src.consts and self.blk(i)), default=0)
        if not b or any(self.src.type_of(i).shape[1] % b for i in n.inputs):
            return False
        self.emit(n, "concat", [self.as_block(i, b) for i in n.inputs], {**n.attrs, "axis": 1}, b)
        return True

    def dense(self, n: Node) -> bool:
        """A constant weight packed once by blocks of output features (the kernel's vector): the
        graph's ``(O, K)`` would be re-packed on every call, or read a column at a time."""
        if n.inputs[1] not in self.src.consts or any(i in self.src.consts for i in n.inputs[:1]):
            return False
        w = self.src.consts[n.inputs[1]]
        bn = next((b for b in (16, 8) if w.shape[0] % b == 0), None)
        if bn is None or w.dtype != np.float32 or self.src.type_of(n.inputs[0]).dtype != "float32":
            return False
        ins = [self.as_block(n.inputs[0], 0), self.const(f"{n.inputs[1]}.blocked{bn}", block_dense_weight(w, bn)),
               *n.inputs[2:]]
        self.emit(n, "dense_blocked", ins, {}, 0)
        return True

    def channel_slice(self, n: Node) -> bool:
        """A slice of whole channel blocks (a ShuffleNet split) on packed data: a slice of the
        block axis (contiguous for one image: a view)."""
        b, x = self.blk(n.inputs[0]), self.src.type_of(n.inputs[0])
        at = n.attrs
        if not b or len(x.shape) != 4 or list(at["step"]) != [1, 1, 1, 1]:
            return False
        begin, end = list(at["begin"]), [min(e, d) for e, d in zip(at["end"], x.shape)]
        if any(begin[a] != 0 or end[a] != x.shape[a] for a in (0, 2, 3)) or begin[1] % b or end[1] % b or \
                not 0 <= begin[1] < end[1]:
            return False
        n5, _, h, w = x.shape
        self.emit(n, "slice", [self.at[n.inputs[0]]], {"begin": [0, begin[1] // b, 0, 0, 0],
                                                        "end": [n5, end[1] // b, h, w, b], "step": [1] * 5}, b)
        return True

    def shuffle(self, n: Node) -> bool:
        """ShuffleNet's reshape (N, g, C/g, H, W) -> transpose (0, 2, 1, 3, 4) -> reshape (N, C, H, W) on
        packed data: one ``channel_shuffle`` that keeps the blocks (the chain would need NCHW)."""
        b = self.blk(n.inputs[0])
        src, mid = self.src.type_of(n.inputs[0]).shape, n.type.shape if n.type else ()
        if not b or len(src) != 4 or len(mid) != 5 or mid[0] != src[0] or mid[1] * mid[2] != src[1] or \
                mid[3:] != src[2:]:
            return False
        t = self.readers.get(n.name, [])
        if len(t) != 1 or t[0].op != "transpose" or tuple(t[0].attrs["perm"]) != (0, 2, 1, 3, 4):
            return False
        r = self.readers.get(t[0].name, [])
        if len(r) != 1 or r[0].op != "reshape" or r[0].type is None or r[0].type.shape != src or \
                {n.name, t[0].name} & set(self.src.outputs):
            return False
        self.skip |= {t[0].name, r[0].name}  # the chain's value is the shuffle's, named as its last reshape
        self.emit(r[0], "channel_shuffle", [self.at[n.inputs[0]]], {"groups": mid[1]}, b)
        return True

    def plain(self, n: Node) -> None:
        ins = [self.as_block(i, 0) if i not in self.src.consts else i for i in n.inputs]
        self.emit(n, n.op, ins, dict(n.attrs), 0)

    def finish(self) -> Graph:
        self.g.outputs = [self.as_block(o, 0) for o in self.src.outputs]
        return self.g.infer_types()


def to_nchwc(graph: Graph, lanes: int | None = None, winograd: bool = True) -> Graph:
    """``graph`` (float32, simplified) with its convolutions, their element-wise tails and the
    pools on NCHW[x]c (see the module doc). ``lanes``: float32 lanes of a vector register (the
    host's by default; the register count follows from it). ``winograd``: 3x3, stride-1 convolutions
    by Winograd's algorithm where the cost rule says so (False: every convolution direct). The
    outputs keep their names, shapes and NCHW layout."""
    from ..targets.llvm.jit import VECTOR_REGISTERS, vector_registers

    if lanes is None:
        lanes = vector_registers()[0]
    g = graph.copy().infer_types()
    rw = _Rewriter(g, lanes, VECTOR_REGISTERS.get(lanes, 16), winograd)
    # op -> the rewrite that may put it on packed data (it says whether it did; else NCHW, as is)
    rewrites = {"conv2d": rw.conv, **dict.fromkeys(_ELEMWISE, rw.elemwise), **dict.fromkeys(_POOLS, rw.pool),
                "dense": rw.dense, "concat": rw.concat, "slice": rw.channel_slice, "reshape": rw.shuffle}
    for n in g.topo_order():
        if n.name in rw.skip:
            continue
        rewrite = rewrites.get(n.op) if n.type is None or n.type.dtype == "float32" else None
        if rewrite is None or not rewrite(n):
            rw.plain(n)
    return rw.finish()
