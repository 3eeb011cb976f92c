"""CPU/VDLA partitioning: mark every node ``target = "cpu"`` or ``"vdla"``.

VDLA computes int8 x int8 -> int32 GEMMs (conv2d, grouped conv2d, conv2d_transpose,
dense) and int32 element-wise ALU ops (add, shift, min/max, mul: bias, ReLU/clip, residual add,
requantise, the integer hard-sigmoid / hard-swish). The default :class:`PartitionPolicy` follows VTA's ResNet-18 flow: every int8
convolution goes to VDLA except the first convolution of the model, and max-pool, global
pool, the classifier (dense) and all float / (de)quantise / shape ops stay on the CPU.
Element-wise integer ops go to VDLA when they read a value VDLA produced (so they fuse into
its kernel).

A GEMM goes to VDLA only when its shape fits a VDLA template with the Config's blocks
(:func:`.layout.vdla_plan`): grouped convolutions (MobileNet's depthwise ones) as groups of
whole channel blocks, merging groups where needed; conv2d_transpose (DCGAN) with a square
kernel, one stride and padding, and an output that splits into stride phases. A shape that
does not fit stays on the CPU with the constraint it breaks as the reason
(``"unsupported on VDLA: ..."``). A dilated conv2d goes to VDLA with its kernel spread out
(zeros between the taps: the same integers out, more taps multiplied;
``PartitionPolicy.undilate``), where the spread kernel fits.

Each node's ``notes["reason"]`` says why it landed where it did; :func:`report` lists them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ...config import Config
from .ir import Graph, GraphError, Node
from .layout import VdlaPlan, vdla_plan

__all__ = ["PartitionPolicy", "partition", "report", "UNSUPPORTED"]

_GEMM_OPS = ("conv2d", "conv2d_packed", "conv2d_transpose", "conv2d_transpose_packed", "dense", "dense_packed")
#: The reason of a GEMM whose shape fits no VDLA template starts with this.
UNSUPPORTED = "unsupported on VDLA: "
_ALU_OPS = ("add", "relu", "clip", "shift", "channel_shift", "requantize", "cast", "max_pool2d", "mul",
            "int_hard_swish")
#: why GEMM-like operators VDLA has no template for stay on the CPU
_CPU_WHY = {
    "conv_nd": "not a VDLA operation (3-D convolution: the VDLA conv templates are 2-D)",
    "conv_transpose_nd": "not a VDLA operation (grouped, dilated or 3-D transposed convolution)",
    "matmul": "not a VDLA operation (a product of two computed tensors: VDLA's dense takes a constant weight)",
    "pool_nd": "not a VDLA operation (1-D/3-D, dilated, Lp or ceil-mode average pooling)",
}


@dataclass(frozen=True)
class PartitionPolicy:
    """What may run on VDLA. Node names in ``cpu_nodes`` / ``vdla_nodes`` override the rules."""

    #: Complex ops VDLA may run (with int8 operands).
    gemm_ops: tuple[str, ...] = ("conv2d", "conv2d_packed", "conv2d_transpose", "conv2d_transpose_packed")
    #: Offload dense/classifier layers (VTA keeps them on the CPU).
    offload_dense: bool = False
    #: Keep the first convolution of the graph on the CPU (shallow, 3 input channels).
    skip_first_conv: bool = True
    #: Element-wise integer ops VDLA's ALU runs after a VDLA producer.
    alu_ops: tuple[str, ...] = ("add", "relu", "clip", "shift", "channel_shift", "requantize", "cast", "mul",
                                "int_hard_swish")
    #: Run grouped/depthwise convolutions on VDLA (as grouped GEMMs) or keep them on the CPU.
    offload_grouped: bool = True
    #: Run a dilated int8 conv2d on VDLA with its kernel spread out (zeros between the taps:
    #: the same result, (k-1)*d+1 taps per axis multiplied) instead of on the CPU.
    undilate: bool = True
    cpu_nodes: frozenset[str] = field(default_factory=frozenset)
    vdla_nodes: frozenset[str] = field(default_factory=frozenset)


def _first_conv(g: Graph) -> str | None:
    for n in g.topo_order():
        if n.op in ("conv2d", "conv2d_packed") or (
            n.op == "fused" and n.attrs.get("anchor") in ("conv2d", "conv2d_packed")
        ):
            return n.name
    return None


def _undilated(n: Node, g: Graph, config: Config | None, why: str) -> tuple[VdlaPlan | str, str]:
    """Rewrite a dilated conv2d ``n`` (in place, in ``g``) to a dilation-1 conv whose kernel
    has zeros between the taps, when that fits a VDLA template; else leave it and say why."""
    if not g.is_const(n.inputs[1]):
        return why, ""
    w = g.consts[n.inputs[1]]
    dh, dw = n.attrs["dilation"]
    o, c, kh, kw = w.shape
    spread = np.zeros((o, c, (kh - 1) * dh + 1, (kw - 1) * dw + 1), w.dtype)
    spread[:, :, ::dh, ::dw] = w
    trial = Node(n.name, n.op, [n.inputs[0], "__spread__", *n.inputs[2:]], {**n.attrs, "dilation": (1, 1)})
    g.consts["__spread__"] = spread
    try:
        plan = vdla_plan(trial, g, config)
    finally:
        del g.consts["__spread__"]
    if isinstance(plan, str):
        return why, ""
    n.inputs = [n.inputs[0], g.add_const(f"{n.inputs[1]}.spread", spread), *n.inputs[2:]]
    n.attrs = {**n.attrs, "dilation": (1, 1)}
    n.notes["taps"] = (kh * kw, spread.shape[2] * spread.shape[3])  # real vs multiplied (for MAC counts)
    return plan, f"; dilation ({dh}, {dw}) as a spread {spread.shape[2]}x{spread.shape[3]} kernel"


def _alu_form(n: Node, g: Graph) -> bool:
    """Has the element-wise op an ALU form? A mul only by a scalar constant (MUL's immediate)."""
    return n.op != "mul" or any(g.is_const(i) and g.consts[i].size == 1 for i in n.inputs)


def partition(graph: Graph, policy: PartitionPolicy | None = None, config: Config | None = None,
              **overrides) -> Graph:
    """Return a copy with ``target`` and ``notes["reason"]`` set on every node.

    ``config`` (default ``Config()``) is the VDLA configuration whose templates must fit a
    GEMM's shape; ``overrides`` are :class:`PartitionPolicy` fields (e.g. ``cpu_nodes={"conv5"}``).
    """
    pol = policy or PartitionPolicy()
    if overrides:
        fixed = {k: frozenset(v) if k in ("cpu_nodes", "vdla_nodes") else v for k, v in overrides.items()}
        pol = PartitionPolicy(**{**pol.__dict__, **fixed})
    g = graph.copy().infer_types()
    names = {n.name for n in g.nodes}
    for s in pol.cpu_nodes | pol.vdla_nodes:
        if s not in names:
            raise GraphError(f"partition: no node named {s!r} in graph {g.name!r}")
    first = _first_conv(g) if pol.skip_first_conv else None
    gemm = set(pol.gemm_ops) | ({"dense", "dense_packed"} if pol.offload_dense else set())
    prod = g.producers()
    for n in g.topo_order():
        ins = [g.type_of(i) for i in n.inputs]
        if n.name in pol.cpu_nodes:
            n.target, reason = "cpu", "policy: cpu_nodes"
        elif n.name in pol.vdla_nodes:
            n.target, reason = "vdla", "policy: vdla_nodes"
        elif n.op in _GEMM_OPS:
            if n.op not in gemm:
                n.target, reason = "cpu", f"{n.op} not offloaded by the policy"
            elif ins[0].dtype not in ("int8", "uint8") or ins[1].dtype != "int8":
                n.target, reason = "cpu", f"{ins[0].dtype} operands (VDLA needs int8)"
            elif n.name == first:
                n.target, reason = "cpu", "first convolution stays on the CPU"
            elif n.op == "conv2d" and n.attrs["groups"] != 1 and not pol.offload_grouped:
                n.target, reason = "cpu", "grouped convolution not offloaded by the policy"
            else:
                plan = vdla_plan(n, g, config) if n.op in ("conv2d", "conv2d_transpose", "dense") else None
                note = ""
                if isinstance(plan, str) and pol.undilate and n.op == "conv2d" and n.attrs["dilation"] != (1, 1):
                    plan, note = _undilated(n, g, config, plan)
                if isinstance(plan, str):
                    n.target, reason = "cpu", UNSUPPORTED + plan
                else:
                    n.target, reason = "vdla", (plan.describe() if isinstance(plan, VdlaPlan) else "int8 GEMM") + note
        elif (
            n.op in pol.alu_ops
            and all(t.dtype == "int32" for t in ins)
            and any(i in prod and prod[i].target == "vdla" for i in n.inputs)
            and _alu_form(n, g)
        ):
            n.target, reason = "vdla", "int32 ALU op after a VDLA producer"
        elif not _alu_form(n, g) and n.op in pol.alu_ops and all(t.dtype == "int32" for t in ins):
            n.target, reason = "cpu", "an int32 mul by a tensor (the ALU multiplies by an immediate)"
        else:
            n.target, reason = "cpu", _CPU_WHY.get(n.op, "not a VDLA operation") if n.op not in _ALU_OPS \
                else "no VDLA producer / dtype"
        n.notes["reason"] = reason
    # integer element-wise ops whose every reader is on VDLA (a residual's cast/shift) join it
    cons = g.consumers()
    for n in reversed(g.topo_order()):
        readers = cons.get(n.name, [])
        if (
            n.target == "cpu"
            and n.name not in pol.cpu_nodes
            and n.op in pol.alu_ops
            and _alu_form(n, g)
            and readers
            and n.name not in g.outputs
            and all(r.target == "vdla" for r in readers)
            and all(g.type_of(i).dtype in ("int8", "int32") for i in n.inputs)
            and n.type is not None
            and n.type.dtype == "int32"
        ):
            n.target = "vdla"
            n.notes["reason"] = "integer ALU op feeding a VDLA kernel"
    return g


def report(graph: Graph) -> list[tuple[str, str, str, str]]:
    """(node, op, target, reason) per node, in topological order."""
    return [(n.name, n.op, n.target or "-", n.notes.get("reason", "")) for n in graph.topo_order()]


def targets(graph: Graph) -> dict[str, str | None]:
    return {n.name: n.target for n in graph.nodes}


def count(graph: Graph, target: str, ops: Iterable[str] | None = None) -> int:
    want = set(ops) if ops else None
    return sum(1 for n in graph.nodes if n.target == target and (want is None or n.op in want))
