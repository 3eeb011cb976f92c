"""The plan: how each node of a compiled model runs, one :class:`Step` per node.

A step's ``target`` is where it runs:

* ``vdla``: a VDLA kernel on the model's Device (``func`` indexes the model's VDLA
  functions; the ALU chain and packed bias go with it);
* ``llvm``: a host function built by llvm (``kernel``, a :class:`~..strategy.BuiltKernel`);
* ``cuda``: a GPU function (``kernel``), its values in GPU memory;
* ``view``: the input's memory with the node's shape (flatten, reshape): no kernel, no copy;
* ``host``: the graph's numpy kernels (:mod:`..ops`) on the host, with ``host_reason``
  saying why the node is not on a code-generating target;
* ``place``: a channel concat of packed tensors (``concat_packed``, every input but the last
  whole blocks, one batch block) laid out in one buffer: each input made by a VDLA kernel
  (and read by nothing else) is stored by that kernel straight into its block range, so the
  step copies only the other inputs, and none when all are placed (:func:`placements`).

Values stay on the device that made them; the executor copies only where a step on one
device reads a value made on another.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir import Graph, Node
from ..strategy.vdla import AluChain

__all__ = ["Step", "STEP_TARGETS", "HostStepError", "count_macs", "host_warning", "require_device", "plan_placement",
           "placements"]

#: where a step runs (see the module doc)
STEP_TARGETS = ("vdla", "llvm", "cuda", "view", "host", "place")


@dataclass
class Step:
    """How one node runs: ``target`` is one of :data:`STEP_TARGETS` (see the module doc);
    ``kernel`` is an llvm or cuda step's built function (llvm ones are rebuilt on load);
    ``reason`` is the partition's or the VDLA fallback's, ``host_reason`` why a host step is
    not on a code-generating target."""

    node: str
    target: str
    reason: str = ""
    func: int | None = None
    chain: AluChain | None = None
    bias_packed: np.ndarray | None = None
    macs: int = 0
    host_reason: str = ""
    kernel: Any = field(default=None, repr=False, compare=False)
    #: per-channel SHR amounts, packed as the bias (kernels with a ``shrv`` in their chain)
    shifts_packed: np.ndarray | None = None
    #: the weight in the layout its kernel reads when that is not the graph's (the window template's)
    weight_packed: np.ndarray | None = None
    #: a ``view`` step: the element of its input's memory where the view starts (worked out once, by place)
    offset: int = 0

    @property
    def record_reason(self) -> str:
        """The reason shown per layer: the partition's or VDLA fallback's, then the host step's."""
        extra = f"numpy: {self.host_reason}" if self.target == "host" and self.host_reason else ""
        return "; ".join(r for r in (self.reason, extra) if r)


class HostStepError(ValueError):
    """A plan has host steps where the user asked for none (``--no-host-ops``)."""


#: one row of a plan's summary: (node, op or fused pattern, target, reason)
Row = tuple[str, str, str, str]


def _host_rows(rows: Iterable[Row]) -> list[Row]:
    return [r for r in rows if r[2] == "host"]


def _listing(rows: list[Row]) -> str:
    return ", ".join(f"{name} ({op}: {why.removeprefix('numpy: ')})" if why else f"{name} ({op})"
                     for name, op, _, why in rows)


def host_warning(rows: Iterable[Row], copies: int = 0) -> str | None:
    """The one warning line a plan with host steps gets (None without any): how many nodes run on
    the host's numpy kernels, each with its op and reason, and on a GPU the copies they cost."""
    rows = list(rows)
    host = _host_rows(rows)
    if not host:
        return None
    cost = f"; they cost {copies} host<->GPU copies per run" if copies else ""
    return f"{len(host)} of {len(rows)} nodes run on the host's numpy kernels{cost}: {_listing(host)}"


def require_device(rows: Iterable[Row], target: str) -> None:
    """Raise :class:`HostStepError` naming every host step (node, op, reason) if there is one."""
    host = _host_rows(rows)
    if host:
        raise HostStepError(f"{len(host)} node(s) cannot run on {target} (host steps refused): {_listing(host)}")


def count_macs(node: Node, graph: Graph) -> int:
    body = node.attrs.get("body") if node.op == "fused" else None
    g = body if isinstance(body, Graph) else graph
    n = body.topo_order()[0] if isinstance(body, Graph) else node
    if n.op not in ("conv2d", "conv2d_packed", "dense", "dense_packed", "conv2d_transpose", "conv2d_transpose_packed",
                    "matmul", "conv2d_nchwc", "depthwise_conv2d_nchwc", "dense_blocked",
                    "conv2d_winograd_nchwc", "conv2d_winograd", "conv2d_1x1"):
        return 0
    w = g.type_of(n.inputs[1]).shape
    o = n.type.shape if n.type else ()
    if n.op == "conv2d_packed" and "macs" in n.notes:  # counted by the layout pass at the unpadded shapes
        return int(n.notes["macs"])
    if n.op == "conv2d_packed":  # grouped convs merged into whole blocks, spread (dilated) kernels: the real MACs
        real, spread = n.notes.get("taps", (1, 1))
        return int(np.prod(o)) * w[1] * w[2] * w[3] * w[5] * real // spread // int(n.notes.get("group_merge", 1))
    if n.op == "dense_packed":
        return int(np.prod(o)) * w[1] * w[3]
    if n.op == "conv2d_transpose_packed":  # the phase sub-kernels' taps
        return int(np.prod(o)) * w[3] * w[4] * w[5] * w[7]
    if n.op == "conv2d":
        return int(np.prod(o)) * w[1] * w[2] * w[3]
    if n.op == "conv2d_nchwc":  # weight (OC/ob, C/cb, KH, KW, cb, ob)
        return int(np.prod(o)) * w[1] * w[2] * w[3] * w[4]
    if n.op == "conv2d_winograd_nchwc":  # the direct convolution's MACs, as TVM counts a Winograd conv's
        return int(np.prod(o)) * w[2] * w[3] * 9
    if n.op == "conv2d_winograd":  # U (alpha^2, C, OC): the direct convolution's MACs, as TVM counts them
        return int(np.prod(o)) * w[1] * 9
    if n.op == "depthwise_conv2d_nchwc":  # weight (C/cb, KH, KW, cb)
        return int(np.prod(o)) * w[1] * w[2]
    if n.op == "conv2d_transpose":
        return int(np.prod(g.type_of(n.inputs[0]).shape)) * w[1] * w[2] * w[3]
    if n.op == "matmul":  # [..., K, M]: K products per output
        return int(np.prod(o)) * w[-2]
    return int(np.prod(o)) * w[1]


def plan_placement(graph: Graph, kernels: dict[str, Step]) -> None:
    """Turn each host ``concat_packed`` step whose blocks can be placed into a ``place`` step
    (see the module doc): every input but the last whole blocks, one batch block (so each
    input's range is contiguous), and at least one input stored there by a VDLA kernel."""
    for n in graph.topo_order():
        k = kernels[n.name]
        if n.op != "concat_packed" or k.target != "host" or n.type is None or n.type.shape[0] != 1:
            continue
        blk = n.type.shape[-1]
        if any(c % blk for c in n.attrs["channels"][:-1]):  # (the layout pass pads such inputs to whole blocks)
            k.host_reason = "an input that is not whole blocks sits before the last (a gather, not a placement)"
            continue
        k.target, k.host_reason = "place", ""
        placed = placements(graph, kernels).get(n.name, {})
        if not placed:  # nothing a kernel stores in place: a plain host concat
            k.target, k.host_reason = "host", "no input made by a VDLA kernel to place"
            continue
        k.reason = (f"channel concat placed in DRAM: {len(placed)} of {len(n.inputs)} input(s) stored in their "
                    "block range by their VDLA kernel" + ("" if len(placed) == len(n.inputs) else ", the rest copied"))


def placements(graph: Graph, kernels: dict[str, Step]) -> dict[str, dict[str, tuple[int, int]]]:
    """``place`` step -> {input made by a VDLA kernel stored in place: (first block, blocks)}."""
    cons = graph.consumers()
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for n in graph.topo_order():
        if kernels[n.name].target != "place":
            continue
        off, mine = 0, {}
        blk = graph.type_of(n.name).shape[-1]
        gathers = n.attrs.get("gathers") or ((),) * len(n.inputs)
        for i, c, idx in zip(n.inputs, n.attrs["channels"], gathers):
            nb = -(-c // blk)
            k = kernels.get(i)
            if (k is not None and k.target == "vdla" and not idx and [c.name for c in cons.get(i, [])] == [n.name]
                    and i not in graph.outputs and n.inputs.count(i) == 1 and graph.type_of(i).shape[1] == nb):
                mine[i] = (off, nb)
            off += nb
        out[n.name] = mine
    return out
