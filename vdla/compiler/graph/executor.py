"""The graph executor: compile a prepared graph node by node onto its targets and run it.

::

    from vdla.compiler.graph import executor, models, passes
    g = passes.prepare(models.resnet18(), calib)         # int8, partitioned, packed, fused
    m = executor.compile_model(g, config)                # VDLA kernels built once
    res = m.run({"data": x}, Device("fsim", config=config))
    res.outputs, res.layers                              # outputs and per-node records
    m.save("resnet18.vdla"); m2 = executor.CompiledModel.load("resnet18.vdla")

Targets. A node placed on ``vdla`` by the partitioner whose (fused) body is a packed
``conv2d_packed`` (grouped too) / ``conv2d_transpose_packed`` / ``dense_packed`` followed by
element-wise integer ops is lowered onto the VDLA templates of :mod:`vdla.compiler.targets.vdla.topi`
and :mod:`vdla.compiler.targets.vdla.topi_ext` (grouped conv2d, conv2d_transpose): the element-wise tail becomes one chain
of tensor-ALU operations on the accumulator (:func:`alu_chain`, exact against the graph's
integer semantics, see there), built with ``vdla.build(..., target="vdla")`` and run on
any :class:`~vdla.runtime.Device` (fsim, pysim, verilator). Every other node — and any
``vdla`` node the templates cannot express, which falls back with the reason recorded —
runs on the host: on the ``llvm`` target when its op (or fused chain) maps onto the topi
operators (:mod:`vdla.compiler.targets.llvm.strategy`: float32 conv2d/dense/pooling/softmax with element-wise tails;
one JIT-built function per distinct signature), else on the ``cpu`` target, the numpy
kernels of :mod:`.ops` (int8 exact), with the reason it was not mapped recorded
(``Kernel.cpu_reason``, shown in the layer records as ``numpy: ...``). An ``llvm`` node's
float32 result is checked against the numpy reference within :data:`FP32_RTOL` (relative to
the output's magnitude); the reference then continues from the llvm value, so integer nodes
downstream are still compared bit-exactly.
``pack`` / ``unpack`` nodes inserted by :mod:`.layout` are the transfers between the two.

File format (one file per compiled model)::

    "VDLAMODL" | u32 version | u32 header length | u32 crc32(rest) | JSON header | blobs

The header holds the graph (nodes, attributes, nested fused bodies), the kernel table and
the offsets of the binary blobs (the graph's constants as an ``.npz`` and every VDLA
function's own versioned bytes). :meth:`CompiledModel.load` checks magic, version, size and
checksum (the framing shared with the other formats, :mod:`vdla.runtime.container`) and
rebuilds no VDLA kernel: the instruction streams are loaded as built. The
``llvm`` CPU kernels are JIT functions that cannot be serialised: loading recompiles them
(cheap: well under a second for ResNet-18's few CPU nodes).
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...config import Config
from ...runtime import container
from .ir import Graph, GraphError, Node, TensorType
from .ops import get_op
from .reference import check_inputs

__all__ = [
    "ExecutorError",
    "ModelFileError",
    "AluChain",
    "alu_chain",
    "CompiledModel",
    "LayerRecord",
    "RunResult",
    "compile_model",
    "MAGIC",
    "VERSION",
    "FP32_RTOL",
]

MAGIC = b"VDLAMODL"
VERSION = 1
#: An llvm node's float32 output agrees with the numpy reference when max |err| <= FP32_RTOL * max(1, max |ref|)
#: (the tolerance the job's fp32 check against onnxruntime uses).
FP32_RTOL = 1e-4
_IMM_MIN, _IMM_MAX = -(1 << 15), (1 << 15) - 1  # the ALU's immediates are 16-bit signed


class ExecutorError(RuntimeError):
    """A node could not be compiled or run; the message names the node."""


class ModelFileError(ValueError):
    """A compiled-model file is truncated, corrupt or of another version."""


# =====================================================================================
# fused body -> ALU chain
# =====================================================================================


@dataclass
class AluChain:
    """A VDLA kernel for one fused node: the GEMM anchor and its ALU tail.

    ``ops`` is the tail in order, each ``(op, value)``: ``("bias", None)`` adds the bias
    tensor, ``("res", None)`` the int8 residual, ``("addi", c)``, ``("shr", n)`` (arithmetic
    shift right), ``("shl", n)``, ``("max", c)``, ``("min", c)``, ``("muli", c)``; the
    result is narrowed to int8.
    """

    anchor: str  # conv2d_packed | conv2d_transpose_packed | dense_packed
    data: str  # outer value names
    weight: str
    residual: str | None
    bias: np.ndarray | None  # int32, one value per (padded) output channel
    ops: list[tuple[str, int | None]]
    strides: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    groups: int = 1  # conv2d_packed: > 1 runs on the grouped template
    kernel: int = 0  # conv2d_transpose_packed: the (square) kernel size

    def key(self, graph: Graph) -> tuple:
        """Two nodes with equal keys share one compiled kernel (the bias is an argument)."""
        shapes = tuple(graph.type_of(v).shape for v in (self.data, self.weight))
        return (self.anchor, shapes, self.strides, self.padding, self.bias is not None, self.residual is not None,
                tuple(self.ops), self.groups, self.kernel)


def _const_vector(a: np.ndarray, channels: int) -> np.ndarray | None:
    """A packed per-channel constant (or scalar) as one int64 value per channel, else None."""
    if a.size == 1:
        return np.full(channels, int(a.reshape(-1)[0]), np.int64)
    shape = a.shape
    if len(shape) in (4, 6) and shape[0] == 1 and all(d == 1 for d in shape[2:-1]) and shape[1] * shape[-1] == channels:
        return a.reshape(-1).astype(np.int64)
    return None


def _push_clamps(ops: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Move min/max past later ``addi`` / ``shr``: for a monotone f, f(max(t, v)) = max(f(t), f(v))."""
    ops = list(ops)
    changed = True
    while changed:
        changed = False
        for i in range(len(ops) - 1):
            (a, va), (b, vb) = ops[i], ops[i + 1]
            if a in ("max", "min") and b in ("addi", "shr"):
                v = va + vb if b == "addi" else va >> vb
                ops[i], ops[i + 1] = (b, vb), (a, v)
                changed = True
    return ops


def _simplify(ops: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for op, v in ops:
        if op in ("shr", "shl") and v == 0:
            continue
        if out and out[-1][0] == op and op in ("max", "min", "shr", "shl"):
            pv = out[-1][1]
            out[-1] = (op, max(pv, v) if op == "max" else min(pv, v) if op == "min" else pv + v)
            continue
        out.append((op, v))
    return out


def alu_chain(node: Node, graph: Graph) -> AluChain | str:
    """Map a fused ``vdla`` node onto a VDLA kernel, or return why it cannot be.

    Exactness: the graph's rounding shift ``(t + 2**(n-1)) >> n`` is ``addi`` then ``shr``;
    ReLU/clip bounds move past it (monotone); a residual aligned with a left shift ``k``
    (``t + (r << k)``, then a rounding shift ``n >= k``) becomes
    ``(((t + 2**(n-1)) >> k) + r) >> (n - k)`` (nested floor division is exact); additive
    constants next to the bias fold into it. Only the int32 wrap-around on overflow, which
    the graph's 32-bit adds and the ALU share up to the reassociation, could differ.
    """
    body = node.attrs.get("body") if node.op == "fused" else None
    if not isinstance(body, Graph):
        return f"{node.op} is not a fused GEMM kernel"
    order = body.topo_order()
    anchor = order[0]
    if anchor.op not in ("conv2d_packed", "conv2d_transpose_packed", "dense_packed"):
        return f"anchor {anchor.op} has no VDLA template"
    groups = int(anchor.attrs.get("groups", 1))
    if anchor.op != "dense_packed" and (groups > 1 or anchor.op == "conv2d_transpose_packed"):
        # the grouped and transpose templates take one padding (and the transpose one stride)
        if len(set(anchor.attrs["padding"])) != 1:
            return f"{anchor.op} padding {anchor.attrs['padding']} is not the same on every side"
        if anchor.op == "conv2d_transpose_packed" and len(set(anchor.attrs["strides"])) != 1:
            return f"{anchor.op} strides {anchor.attrs['strides']} differ"
    x, w = anchor.inputs
    if x not in body.inputs or w not in graph.consts:
        return "the GEMM needs an activation input and a constant weight"
    if body.inputs[x].dtype != "int8" or graph.consts[w].dtype != np.int8:
        return f"{body.inputs[x].dtype} data (the templates take int8)"
    out_t = anchor.type
    assert out_t is not None
    channels = out_t.shape[1] * out_t.shape[-1]
    sym: dict[str, tuple] = {anchor.name: ("chain", 0)}
    ops: list[tuple[str, Any]] = []
    bias: np.ndarray | None = None
    residual: str | None = None
    narrowed = False

    def val(v: str) -> tuple:
        if v in sym:
            return sym[v]
        if v in graph.consts:
            return ("const", graph.consts[v])
        if v in body.inputs:
            return ("act", v, body.inputs[v])
        return ("?", v)

    for n in order[1:]:
        if narrowed:
            return f"{n.op} after the int8 narrowing"
        args = [val(i) for i in n.inputs]
        chains = [k for k, a in enumerate(args) if a[0] == "chain"]
        if not chains:  # a side operand: int8 activation cast to int32, shifted left
            a = args[0]
            if n.op == "cast" and a[0] == "act" and a[2].dtype == "int8" and n.attrs["dtype"] == "int32":
                sym[n.name] = ("res", a[1], 0)
            elif n.op == "shift" and a[0] == "res" and n.attrs["n"] <= 0:
                sym[n.name] = ("res", a[1], a[2] - n.attrs["n"])
            else:
                return f"side operand {n.op} is not an int8 activation aligned by a shift"
            continue
        if len(chains) != 1 or args[chains[0]][1] != len(ops):
            return f"{n.op} {n.name!r} does not extend the accumulator chain"
        other = [a for k, a in enumerate(args) if k != chains[0]]
        if n.op == "add":
            (o,) = other
            if o[0] == "const":
                vec = _const_vector(o[1], channels)
                if vec is None:
                    return f"add of a constant of shape {o[1].shape} that is not per-channel"
                if o[1].size == 1 and _IMM_MIN <= int(vec[0]) <= _IMM_MAX:
                    ops.append(("addi", int(vec[0])))
                elif bias is None or (ops and ops[-1][0] == "bias"):
                    bias = vec if bias is None else bias + vec
                    if not ops or ops[-1][0] != "bias":
                        ops.append(("bias", None))
                else:
                    return "two separate bias additions"
            elif o[0] == "res" or (o[0] == "act" and o[2].dtype == "int8"):
                if residual is not None:
                    return "more than one residual"
                if o[0] == "act":
                    return "an int8 residual added without a cast"
                residual = o[1]
                ops.append(("res", o[2]))
            elif o[0] == "act":
                return f"an {o[2].dtype} residual (VDLA adds int8 residuals)"
            else:
                return f"add operand {o[0]}"
        elif n.op == "relu":
            ops.append(("max", 0))
        elif n.op == "clip":
            if n.attrs["min"] is not None:
                ops.append(("max", int(n.attrs["min"])))
            if n.attrs["max"] is not None:
                ops.append(("min", int(n.attrs["max"])))
        elif n.op in ("shift", "requantize"):
            s = n.attrs["n"] if n.op == "shift" else n.attrs["shift"]
            if s > 0:
                ops += [("addi", 1 << (s - 1)), ("shr", s)]
            elif s < 0:
                ops.append(("shl", -s))
            if n.op == "requantize":
                if n.attrs["dtype"] != "int8":
                    return f"requantize to {n.attrs['dtype']}"
                ops += [("max", int(n.attrs["min"])), ("min", int(n.attrs["max"]))]
                narrowed = True
        elif n.op == "cast":
            if n.attrs["dtype"] == "int8":
                narrowed = True
            elif n.attrs["dtype"] != "int32":
                return f"cast to {n.attrs['dtype']}"
        elif n.op == "mul":
            (o,) = other
            if o[0] != "const" or o[1].size != 1:
                return "mul by a non-scalar"
            ops.append(("muli", int(o[1].reshape(-1)[0])))
        else:
            return f"{n.op} has no VDLA ALU form"
        sym[n.name] = ("chain", len(ops))
    if not narrowed:
        return "int32 result (VDLA stores int8)"
    if sym.get(body.outputs[0], ("?",))[0] != "chain":
        return "the output is not the accumulator chain"
    # residual: (t + (r << k) + c) >> n  ->  (((t + c) >> k) + r) >> (n - k)
    ops = _simplify(_push_clamps(ops))
    if residual is not None:
        i = next(i for i, (o, _) in enumerate(ops) if o == "res")
        k = ops[i][1]
        nxt = ops[i + 1 : i + 3]
        if k == 0:
            ops[i] = ("res", None)
        elif len(nxt) == 2 and nxt[0][0] == "addi" and nxt[1][0] == "shr" and nxt[1][1] >= k:
            c, s = nxt[0][1], nxt[1][1]
            ops[i : i + 3] = [("addi", c), ("shr", k), ("res", None), ("shr", s - k)]
        else:
            return f"residual aligned by << {k} without a following rounding shift >= {k}"
        ops = _simplify(ops)
    # fold additive immediates next to the bias (or at the start) into the bias vector
    folded: list[tuple[str, Any]] = []
    for op, v in ops:
        if op == "addi" and (not folded or folded[-1][0] == "bias"):
            if v == 0:
                continue
            if not folded and _IMM_MIN <= v <= _IMM_MAX and bias is None:
                folded.append((op, v))
                continue
            bias = (np.zeros(channels, np.int64) if bias is None else bias) + v
            if not folded:
                folded.append(("bias", None))
            continue
        folded.append((op, v))
    ops = folded
    for op, v in ops:
        if op in ("addi", "max", "min", "muli") and not _IMM_MIN <= v <= _IMM_MAX:
            return f"ALU immediate {v} of {op} does not fit 16 bits"
        if op in ("shr", "shl") and not 0 < v < 32:
            return f"shift by {v}"
    if bias is not None:
        bias = ((bias + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)  # int32 wrap, as the graph's adds
    strides = tuple(anchor.attrs.get("strides", (1, 1)))
    padding = tuple(anchor.attrs.get("padding", (0, 0, 0, 0)))
    kernel = int(anchor.attrs["kernel"][0]) if anchor.op == "conv2d_transpose_packed" else 0
    return AluChain(anchor.op, x, w, residual, bias, [(o, v) for o, v in ops], strides, padding,  # type: ignore[arg-type]
                    groups, kernel)


def _te_kernel(ch: AluChain, graph: Graph, cfg: Config, vthreads: int, name: str) -> Any:
    """Declare, schedule and build one VDLA kernel; returns the VDLAFunction."""
    from .. import te
    from ..targets.vdla import build, shift_left, shift_right
    from ..targets.vdla import topi as vt
    from ..targets.vdla import topi_ext as vx

    xt, wt = graph.type_of(ch.data), graph.type_of(ch.weight)
    D = te.placeholder(xt.shape, "int8", name="data")
    K = te.placeholder(wt.shape, "int8", name="weight")
    tail = vt.Tail(clip=None)
    if ch.anchor == "conv2d_packed" and ch.groups > 1:
        base = vx.group_conv2d_packed(D, K, ch.groups, ch.strides, ch.padding[0], tail, config=cfg, name=name)
        sched = vx.schedule_group_conv2d_packed
    elif ch.anchor == "conv2d_packed":
        base = vt.conv2d_packed(D, K, ch.strides, ch.padding, tail, config=cfg, name=name)
        sched = vt.schedule_conv2d_packed
    elif ch.anchor == "conv2d_transpose_packed":
        base = vx.conv2d_transpose_packed(D, K, ch.strides[0], ch.padding[0], ch.kernel, tail, config=cfg, name=name)
        sched = vx.schedule_conv2d_transpose_packed
    else:
        base = vt.dense_packed(D, K, tail, config=cfg, name=name)
        sched = vt.schedule_dense_packed
    acc = base.op.input_tensors()[0].op.input_tensors()[0]
    shape = tuple(int(getattr(s, "value", s)) for s in acc.shape)
    nd = len(shape)
    b, co = shape[-2], shape[-1]
    # the grouped template computes (N/b, G, (O/G)/c, H', W', b, c) and the transpose
    # (N/b, O/c, H'/s, s, W'/s, s, b, c): byte for byte the packed 6-D output. The bias is
    # indexed by the packed channel block: group g's block o is g * (O/G)/c + o
    grouped = ch.anchor == "conv2d_packed" and ch.groups > 1
    ob = shape[1] * shape[2] if grouped else shape[1]

    def chan(i: tuple[Any, ...]) -> Any:
        return i[1] * shape[2] + i[2] if grouped else i[1]

    args = [D, K]
    B = R = None
    if ch.bias is not None:
        B = te.placeholder((ob, b, co), "int32", name="bias")
        args.append(B)
    if ch.residual is not None:
        R = te.placeholder(shape, "int8", name="residual")
        args.append(R)
    adt = acc.dtype

    def f(*i: Any) -> Any:
        t = acc[i]
        for op, v in ch.ops:
            if op == "bias":
                t = t + B[chan(i), i[nd - 2], i[nd - 1]]  # type: ignore[index]
            elif op == "res":
                t = t + R[i].astype(adt)  # type: ignore[index]
            elif op == "addi":
                t = t + v
            elif op == "muli":
                t = t * v
            elif op == "shr":
                t = shift_right(t, v)
            elif op == "shl":
                t = shift_left(t, v)
            elif op == "max":
                t = te.max(t, v)
            elif op == "min":
                t = te.min(t, v)
        return t

    alu = te.compute(shape, f, name=f"{name}_alu", tag="vdla_alu")
    out = te.compute(shape, lambda *i: alu[i].astype("int8"), name=f"{name}_out", tag="vdla_out")
    args.append(out)
    s = sched(out, vt.Knobs(vthreads=vthreads), config=cfg)
    return build(s, args, name=name, config=cfg)


def pack_bias(bias: np.ndarray, batch: int, block: int) -> np.ndarray:
    ob = bias.size // block
    return np.ascontiguousarray(np.broadcast_to(bias.reshape(ob, 1, block), (ob, batch, block))).astype(np.int32)


# =====================================================================================
# compiled model
# =====================================================================================


@dataclass
class Kernel:
    """How one node runs: ``target`` "vdla" (``func`` indexes the model's functions), "llvm"
    (``llvm`` is the JIT-built host function; rebuilt on load) or "cpu" (numpy;
    ``cpu_reason`` says why it is not on llvm)."""

    node: str
    target: str
    reason: str = ""
    func: int | None = None
    chain: AluChain | None = None
    bias_packed: np.ndarray | None = None
    macs: int = 0
    cpu_reason: str = ""
    llvm: Any = field(default=None, repr=False, compare=False)

    @property
    def record_reason(self) -> str:
        """The reason shown per layer: the partition's or VDLA fallback's, then numpy's."""
        extra = f"numpy: {self.cpu_reason}" if self.target == "cpu" and self.cpu_reason else ""
        return "; ".join(r for r in (self.reason, extra) if r)


@dataclass
class LayerRecord:
    """One node's execution: target, device cycles or host time, utilisation, bytes."""

    node: str
    op: str
    target: str
    seconds: float  # host wall time (cpu), or cycles at the board clock (vdla)
    cycles: int | None = None
    gemm_util: float | None = None
    bytes_moved: int = 0
    macs: int = 0
    cpu_seconds: float | None = None  # the same node on the CPU path (for the speedup)
    exact: bool | None = None  # against the int8 reference (llvm float32 nodes: within FP32_RTOL)
    max_err: float | None = None  # max |output - reference| (0 when bit-exact)
    reason: str = ""
    wall_s: float = 0.0  # host time spent running (simulation or numpy)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RunResult:
    outputs: list[np.ndarray]
    layers: list[LayerRecord]
    values: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    reference: list[np.ndarray] | None = None  # the reference outputs (run(reference=True))


def _macs(node: Node, graph: Graph) -> int:
    body = node.attrs.get("body") if node.op == "fused" else None
    g = body if isinstance(body, Graph) else graph
    n = body.topo_order()[0] if isinstance(body, Graph) else node
    if n.op not in ("conv2d", "conv2d_packed", "dense", "dense_packed", "conv2d_transpose", "conv2d_transpose_packed",
                    "matmul"):
        return 0
    w = g.type_of(n.inputs[1]).shape
    o = n.type.shape if n.type else ()
    if n.op == "conv2d_packed":  # grouped convs merged into whole blocks: the real MACs, not the zeros
        return int(np.prod(o)) * w[1] * w[2] * w[3] * w[5] // int(n.notes.get("group_merge", 1))
    if n.op == "dense_packed":
        return int(np.prod(o)) * w[1] * w[3]
    if n.op == "conv2d_transpose_packed":  # the phase sub-kernels' taps
        return int(np.prod(o)) * w[3] * w[4] * w[5] * w[7]
    if n.op == "conv2d":
        return int(np.prod(o)) * w[1] * w[2] * w[3]
    if n.op == "conv2d_transpose":
        return int(np.prod(g.type_of(n.inputs[0]).shape)) * w[1] * w[2] * w[3]
    return int(np.prod(o)) * w[1]


class CompiledModel:
    """A prepared graph with a kernel per node; run it on any Device, save it to one file."""

    def __init__(self, graph: Graph, config: Config, kernels: dict[str, Kernel], functions: list[Any],
                 info: dict[str, Any] | None = None) -> None:
        self.graph = graph
        self.config = config
        self.kernels = kernels
        self.functions = functions
        self.info = dict(info or {})

    def __repr__(self) -> str:
        nv = sum(1 for k in self.kernels.values() if k.target == "vdla")
        nl = sum(1 for k in self.kernels.values() if k.target == "llvm")
        return (f"<CompiledModel {self.graph.name!r}: {len(self.kernels)} nodes, {nv} on VDLA "
                f"({len(self.functions)} kernels), {nl} on llvm, config {self.config.name!r}>")

    def summary(self) -> list[tuple[str, str, str, str]]:
        """(node, op/pattern, target, reason) per node."""
        out = []
        for n in self.graph.topo_order():
            k = self.kernels[n.name]
            out.append((n.name, n.attrs.get("pattern") or n.op, k.target, k.record_reason))
        return out

    # -- running ----------------------------------------------------------------------
    def run(self, inputs: Any, device: Any = None, *, reference: bool = False, cpu_timing: bool = False,
            progress: Callable[[str], None] | None = None) -> RunResult:
        """Run on ``device`` (a Device with this model's config; None: a new fsim).

        ``reference``: also evaluate every node with the int8 reference (the CPU path) and
        record per node whether the outputs agree bit-exactly; ``cpu_timing``: time that
        CPU evaluation of the offloaded nodes (for the speedup).
        """
        from ...runtime import Device

        dev = device if device is not None else Device("fsim", config=self.config)
        g = self.graph
        env: dict[str, np.ndarray] = dict(g.consts)
        env.update(check_inputs(g, inputs))
        ref_env: dict[str, np.ndarray] = dict(env)
        layers: list[LayerRecord] = []
        clock = self.config.clock_mhz * 1e6
        order = g.topo_order()
        for idx, n in enumerate(order):
            k = self.kernels[n.name]
            t0 = time.perf_counter()
            if k.target == "vdla":
                if progress:
                    progress(f"[{idx + 1}/{len(order)}] {n.name} on {dev.name}")
                val, rep = self._run_vdla(n, k, env, dev)
                wall = time.perf_counter() - t0
                moved = int(sum(v for c, v in rep.counters.items() if c.endswith("nbytes")))
                rec = LayerRecord(n.name, n.attrs.get("pattern") or n.op, "vdla", rep.cycles / clock, rep.cycles,
                                  rep.gemm_utilisation, moved, k.macs, wall_s=wall)
            else:
                val = self._run_llvm(n, k, env) if k.target == "llvm" else self._run_cpu(n, [env[i] for i in n.inputs])
                wall = time.perf_counter() - t0
                moved = sum(env[i].nbytes for i in n.inputs if i not in g.consts) + val.nbytes
                rec = LayerRecord(n.name, n.attrs.get("pattern") or n.op, k.target, wall, bytes_moved=int(moved),
                                  macs=k.macs, reason=k.record_reason, wall_s=wall)
            env[n.name] = val
            if reference or (cpu_timing and k.target == "vdla"):
                if k.target == "vdla":
                    t1 = time.perf_counter()
                    rv = self._run_cpu(n, [ref_env[i] for i in n.inputs])
                    rec.cpu_seconds = time.perf_counter() - t1
                elif k.target == "llvm":
                    rv = self._run_cpu(n, [ref_env[i] for i in n.inputs])
                else:
                    rv = val if all(np.array_equal(env[i], ref_env[i]) for i in n.inputs if i not in g.consts) \
                        else self._run_cpu(n, [ref_env[i] for i in n.inputs])
                rec.exact, rec.max_err = _agree(val, rv, float_tol=k.target == "llvm")
                # an llvm float result within tolerance: the reference continues from it, so that
                # the integer nodes downstream (quantise, VDLA) are still compared bit-exactly
                ref_env[n.name] = val if rec.exact and k.target == "llvm" else rv
            layers.append(rec)
        ref_out = [ref_env[o] for o in g.outputs] if reference else None
        return RunResult([env[o] for o in g.outputs], layers, env, ref_out)

    def _run_llvm(self, n: Node, k: Kernel, env: Mapping[str, np.ndarray]) -> np.ndarray:
        try:
            return k.llvm(env)
        except Exception as e:
            raise ExecutorError(f"node {n.name!r} ({n.op}) failed on llvm: {type(e).__name__}: {e}") from e

    def _run_cpu(self, n: Node, args: list[np.ndarray]) -> np.ndarray:
        try:
            return get_op(n.op, n.name).compute(n.attrs, args)
        except GraphError:
            raise
        except Exception as e:
            raise ExecutorError(f"node {n.name!r} ({n.op}) failed on the CPU: {type(e).__name__}: {e}") from e

    def _run_vdla(self, n: Node, k: Kernel, env: Mapping[str, np.ndarray], dev: Any) -> tuple[np.ndarray, Any]:
        ch = k.chain
        assert ch is not None and k.func is not None
        f = self.functions[k.func]
        arrays = [np.ascontiguousarray(env[ch.data]), np.ascontiguousarray(env[ch.weight])]
        if k.bias_packed is not None:
            arrays.append(k.bias_packed)
        if ch.residual is not None:
            arrays.append(np.ascontiguousarray(env[ch.residual]))
        out_t = n.type
        assert out_t is not None
        out = np.zeros(out_t.shape, np.int8)
        arrays.append(out)
        # the grouped / transpose kernels see the packed residual and output in their own
        # (byte-identical) shapes: pass views, so the output lands in ``out``
        arrays = [a if a.shape == spec.shape else a.reshape(spec.shape) for a, spec in zip(arrays, f.args)]
        try:
            rep = f(dev, *arrays)
        except Exception as e:
            raise ExecutorError(f"node {n.name!r} failed on {dev.name}: {type(e).__name__}: {e}") from e
        return out, rep

    # -- files ------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        blobs: list[bytes] = []
        buf = io.BytesIO()
        consts = dict(self.graph.consts)
        for name, k in self.kernels.items():
            if k.bias_packed is not None:
                consts[f"__bias__/{name}"] = k.bias_packed
        np.savez(buf, **{f"c{i}": a for i, a in enumerate(consts.values())})
        blobs.append(buf.getvalue())
        for f in self.functions:
            blobs.append(f.to_bytes())
        offs, pos = [], 0
        for b in blobs:
            offs.append([pos, len(b)])
            pos += len(b)
        head = {
            "format": "vdla compiled model",
            "graph": _graph_to_json(self.graph, const_names=False),
            "const_names": list(consts),
            "config": self.config.to_dict(),
            "config_name": self.config.name,
            "kernels": [_kernel_to_json(k) for k in self.kernels.values()],
            "blobs": offs,
            "info": {k: v for k, v in self.info.items() if isinstance(v, int | float | str)},
        }
        return container.pack(MAGIC, VERSION, head, b"".join(blobs))

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        p.write_bytes(self.to_bytes())
        return p

    @classmethod
    def from_bytes(cls, blob: bytes, source: str = "model") -> CompiledModel:
        from ..targets.vdla.module import VDLAFileError, VDLAFunction

        head, data = container.unpack(
            blob, magic=MAGIC, version=VERSION, what="compiled vdla model", source=source, error=ModelFileError,
            payload_size=_blobs_size, version_hint="; rebuild it with `vdla build`",
        )
        try:
            blobs = [data[o : o + n] for o, n in head["blobs"]]
            if any(len(b) != n for b, (_, n) in zip(blobs, head["blobs"])):
                raise ModelFileError(f"{source}: truncated blob")
            with np.load(io.BytesIO(blobs[0]), allow_pickle=False) as z:
                arrays = [z[f"c{i}"] for i in range(len(head["const_names"]))]
            consts = dict(zip(head["const_names"], arrays))
            config = _config_from_json(head)
            graph = _graph_from_json(head["graph"], consts)
            functions = [VDLAFunction.from_bytes(b, f"{source}: kernel {i}") for i, b in enumerate(blobs[1:])]
            kernels = {}
            for kj in head["kernels"]:
                k = _kernel_from_json(kj, consts)
                kernels[k.node] = k
        except ModelFileError:
            raise
        except (VDLAFileError, ValueError, KeyError, TypeError, IndexError, GraphError) as e:
            raise ModelFileError(f"{source}: corrupt compiled model: {type(e).__name__}: {e}") from None
        missing = [n.name for n in graph.nodes if n.name not in kernels]
        if missing:
            raise ModelFileError(f"{source}: no kernel for node(s) {', '.join(missing[:5])}")
        for f in functions:
            diff = f.config.architecture_differences(config)
            if diff:
                raise ModelFileError(f"{source}: kernel {f.name!r} was built for another configuration: {'; '.join(diff)}")
        # the llvm CPU kernels are JIT functions (not serialisable): rebuild them here
        for k in kernels.values():
            if k.target == "llvm":
                k.target = "cpu"
        info = dict(head.get("info", {}))
        info["llvm_compile_s"] = compile_llvm(graph, kernels)
        return cls(graph, config, kernels, functions, info)

    @classmethod
    def load(cls, path: str | Path) -> CompiledModel:
        p = Path(path)
        return cls.from_bytes(p.read_bytes(), str(p))


def _blobs_size(head: Mapping[str, Any]) -> int:
    """The payload bytes a model header promises: its blobs are written back to back."""
    return sum(int(n) for _, n in head["blobs"])


def is_model_file(path: str | Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(8) == MAGIC
    except OSError:
        return False


# -- serialisation helpers ----------------------------------------------------------------


def _attr_to_json(v: Any) -> Any:
    if isinstance(v, Graph):
        return {"__graph__": _graph_to_json(v, const_names=True)}
    if isinstance(v, tuple):
        return {"__tuple__": [_attr_to_json(x) for x in v]}
    if isinstance(v, np.generic):
        return v.item()
    return v


def _attr_from_json(v: Any, consts: Mapping[str, np.ndarray]) -> Any:
    if isinstance(v, dict) and "__graph__" in v:
        return _graph_from_json(v["__graph__"], consts)
    if isinstance(v, dict) and "__tuple__" in v:
        return tuple(_attr_from_json(x, consts) for x in v["__tuple__"])
    return v


def _graph_to_json(g: Graph, const_names: bool) -> dict[str, Any]:
    return {
        "name": g.name,
        "inputs": [[k, list(t.shape), t.dtype] for k, t in g.inputs.items()],
        "consts": list(g.consts),
        "nodes": [
            {"name": n.name, "op": n.op, "inputs": n.inputs, "target": n.target,
             "attrs": {k: _attr_to_json(v) for k, v in n.attrs.items()},
             "notes": {k: v for k, v in n.notes.items() if isinstance(v, str | int | float | list)}}
            for n in g.nodes
        ],
        "outputs": g.outputs,
    }


def _graph_from_json(d: Mapping[str, Any], consts: Mapping[str, np.ndarray]) -> Graph:
    g = Graph(d["name"])
    for k, shape, dtype in d["inputs"]:
        g.inputs[k] = TensorType(tuple(shape), dtype)
    for k in d["consts"]:
        if k not in consts:
            raise ModelFileError(f"constant {k!r} missing")
        g.consts[k] = consts[k]
    for nd in d["nodes"]:
        attrs = {k: _attr_from_json(v, consts) for k, v in nd["attrs"].items()}
        g.nodes.append(Node(nd["name"], nd["op"], list(nd["inputs"]), attrs, nd["target"], dict(nd["notes"])))
    g.outputs = list(d["outputs"])
    return g.infer_types()


def _kernel_to_json(k: Kernel) -> dict[str, Any]:
    d: dict[str, Any] = {"node": k.node, "target": k.target, "reason": k.reason, "func": k.func, "macs": k.macs,
                         "cpu_reason": k.cpu_reason}
    if k.chain is not None:
        c = k.chain
        d["chain"] = {"anchor": c.anchor, "data": c.data, "weight": c.weight, "residual": c.residual,
                      "ops": [[o, v] for o, v in c.ops], "strides": list(c.strides), "padding": list(c.padding),
                      "groups": c.groups, "kernel": c.kernel}
    return d


def _kernel_from_json(d: Mapping[str, Any], consts: Mapping[str, np.ndarray]) -> Kernel:
    ch = None
    bias = consts.get(f"__bias__/{d['node']}")
    if d.get("chain"):
        c = d["chain"]
        ch = AluChain(c["anchor"], c["data"], c["weight"], c["residual"], None,
                      [(o, v) for o, v in c["ops"]], tuple(c["strides"]), tuple(c["padding"]),
                      int(c.get("groups", 1)), int(c.get("kernel", 0)))
    return Kernel(d["node"], d["target"], d["reason"], d["func"], ch, bias, d.get("macs", 0), d.get("cpu_reason", ""))


def _config_from_json(head: Mapping[str, Any]) -> Config:
    from ...config import preset

    d = head.get("config")
    if d:
        try:
            return Config.from_dict(d)
        except Exception as e:
            raise ModelFileError(f"bad configuration in the file: {e}") from None
    return preset(head["config_name"])


# =====================================================================================
# compiling
# =====================================================================================


def compile_model(
    graph: Graph,
    config: Config | None = None,
    *,
    vthreads: int = 2,
    llvm: bool = True,
    progress: Callable[[str], None] | None = None,
) -> CompiledModel:
    """Compile every ``vdla`` node of a prepared graph (see :func:`.passes.prepare`) into a
    VDLA kernel (shared between nodes of equal shape and tail); other nodes run on the CPU:
    built for ``llvm`` where they map onto topi (see :func:`compile_llvm`; ``llvm=False``
    keeps them all on numpy), else numpy."""
    from ..targets.vdla import VDLAError

    cfg = config or Config()
    g = graph.copy().infer_types()
    kernels: dict[str, Kernel] = {}
    functions: list[Any] = []
    cache: dict[tuple, int] = {}
    t0 = time.perf_counter()
    order = g.topo_order()
    todo = [n for n in order if n.target == "vdla"]
    done = 0
    for n in order:
        macs = _macs(n, g)
        if n.target != "vdla":
            kernels[n.name] = Kernel(n.name, "cpu", n.notes.get("reason", ""), macs=macs)
            continue
        ch = alu_chain(n, g)
        if isinstance(ch, str):
            kernels[n.name] = Kernel(n.name, "cpu", f"fallback: {ch}", macs=macs)
            continue
        if ch.bias is not None:
            blk = g.type_of(n.name).shape[-1]
            if ch.bias.size % blk:
                kernels[n.name] = Kernel(n.name, "cpu", "fallback: bias does not fill the blocks", macs=macs)
                continue
        key = ch.key(g)
        done += 1
        if key not in cache:
            if progress:
                progress(f"compiling {done}/{len(todo)} {n.name} ({n.attrs.get('pattern', n.op)})")
            func = None
            err = ""
            for vt in dict.fromkeys((vthreads, 1)):
                try:
                    func = _te_kernel(ch, g, cfg, vt, n.name.replace(".", "_"))
                    break
                except VDLAError as e:
                    err = str(e)
            if func is None:
                kernels[n.name] = Kernel(n.name, "cpu", f"fallback: {err}", macs=macs)
                continue
            cache[key] = len(functions)
            functions.append(func)
        bias = None if ch.bias is None else pack_bias(ch.bias, cfg.batch, g.type_of(n.name).shape[-1])
        kernels[n.name] = Kernel(n.name, "vdla", "", cache[key], ch, bias, macs)
    info = {"compile_s": time.perf_counter() - t0, "kernels": len(functions)}
    info["llvm_compile_s"] = compile_llvm(g, kernels, llvm=llvm)
    info["compile_s"] = time.perf_counter() - t0
    return CompiledModel(g, cfg, kernels, functions, info)


def compile_llvm(graph: Graph, kernels: Mapping[str, Kernel], *, llvm: bool = True) -> float:
    """Put every ``cpu`` node that maps onto topi on the ``llvm`` target (one build per
    signature); the rest keep numpy with ``cpu_reason`` set. Returns the seconds spent."""
    from ..targets.llvm.strategy import LlvmCache

    t0 = time.perf_counter()
    cache = LlvmCache()
    for n in graph.topo_order():
        k = kernels[n.name]
        if k.target != "cpu":
            continue
        if not llvm:
            k.cpu_reason = "llvm disabled"
            continue
        built = cache.get(n, graph)
        if isinstance(built, str):
            k.cpu_reason = built
        else:
            k.target, k.llvm, k.cpu_reason = "llvm", built, ""
    return time.perf_counter() - t0


def _agree(val: np.ndarray, ref: np.ndarray, float_tol: bool) -> tuple[bool, float]:
    """(agrees, max |err|): bit-exact, or for float32 with ``float_tol`` within FP32_RTOL."""
    if np.array_equal(val, ref):
        return True, 0.0
    if val.shape != ref.shape:
        return False, float("inf")
    if not (float_tol and val.dtype.kind == "f"):
        return False, float(np.abs(val.astype(np.float64) - ref.astype(np.float64)).max())
    err = float(np.abs(val.astype(np.float64) - ref).max()) if val.size else 0.0
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    return bool(err <= FP32_RTOL * max(1.0, scale)), err
