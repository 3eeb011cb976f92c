"""The VDLA strategy: a fused graph node -> one accelerator kernel.

A node the partitioner placed on ``vdla`` whose (fused) body is a packed ``conv2d_packed``
(grouped too), ``conv2d_transpose_packed`` or ``dense_packed`` followed by element-wise
integer ops becomes an :class:`AluChain` (:func:`alu_chain`): the anchor, its operands and
the tail as one chain of tensor-ALU operations on the accumulator, exact against the
graph's integer semantics (or the reason it cannot be). :func:`build_kernel` declares the
matching template of the VDLA target (:mod:`vdla.compiler.targets.vdla.top`: conv2d,
group_conv2d, conv2d_transpose, dense), schedules it and builds it for ``vdla``; a depthwise
node (``AluChain.depthwise``) that CFG's window mode can compute on the Config
(:func:`~vdla.compiler.targets.vdla.top.depthwise_window.window_layer`) gets the window
template instead, whose function reads the weight in the window layout (its ``info``'s
``weight_layout``; the executor packs it, :func:`~vdla.compiler.targets.vdla.packing.pack_window_weight`).
The executor's compile step (:mod:`vdla.compiler.graph.executor.compile`) calls both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ....config import Config
from ... import te
from ...driver import build
from ...targets.vdla.env import shift_left, shift_right
from ...targets.vdla.packing import block_diagonal
from ...targets.vdla.top import (
    Knobs,
    Tail,
    conv2d_packed,
    conv2d_transpose_packed,
    dense_packed,
    depthwise_window,
    group_conv2d_packed,
    schedule_conv2d_packed,
    schedule_conv2d_transpose_packed,
    schedule_dense_packed,
    schedule_group_conv2d_packed,
)
from ..ir import Graph, Node

__all__ = ["AluChain", "alu_chain", "build_kernel", "IMM_MIN", "IMM_MAX"]

IMM_MIN, IMM_MAX = -(1 << 15), (1 << 15) - 1  # the ALU's immediates are 16-bit signed


@dataclass
class AluChain:
    """A VDLA kernel for one fused node: the GEMM anchor and its ALU tail.

    ``ops`` is the tail in order, each ``(op, value)``: ``("bias", None)`` adds the bias
    tensor, ``("res", None)`` the int8 residual (``("res", m)``: the residual shifted left by
    ``m``, in place in its accumulator buffer, then added), ``("addi", c)``, ``("shr", n)`` (arithmetic
    shift right), ``("shrv", None)`` (shift right by the per-channel ``shifts`` tensor: SHR
    with a tensor operand; negative amounts shift left), ``("shl", n)``, ``("max", c)``, ``("min", c)``, ``("muli", c)``,
    ``("hswish", (offset, max))`` (``t * clip(t + offset, 0, max)``: the gate on a copy of the
    accumulator, then MUL with it); the result is narrowed to int8.
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
    shifts: np.ndarray | None = None  # int32 per (padded) output channel, for ("shrv", None)
    depthwise: bool = False  # grouped, one channel block per group, block-diagonal weight (the window's layers)

    def __post_init__(self) -> None:
        # a model file keeps ("hswish", (offset, max)) as a JSON list: a tuple again, for key()
        self.ops = [(o, tuple(v) if isinstance(v, list) else v) for o, v in self.ops]

    def key(self, graph: Graph) -> tuple:
        """Two nodes with equal keys share one compiled kernel (the bias is an argument)."""
        shapes = tuple(graph.type_of(v).shape for v in (self.data, self.weight))
        return (self.anchor, shapes, self.strides, self.padding, self.bias is not None, self.residual is not None,
                tuple(self.ops), self.groups, self.kernel, self.depthwise)


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


def _merge_clamps(ops: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Each run of consecutive ``max`` / ``min`` as at most one ``max`` then one ``min``.

    A run is ``t -> min(max(t, lo), hi)`` with ``lo <= hi`` (None: unbounded). By the lattice
    identity max(min(a, b), c) = min(max(a, c), max(b, c)), a further ``max c`` gives
    ``lo, hi = max(lo, c), max(hi, c)``, and a further ``min c`` gives ``lo, hi = min(lo, c),
    min(hi, c)`` (``min(max(t, lo), c)`` with ``c < lo`` is the constant ``c``). So a clip bound
    far outside int8, ReLU6's 6 moved past the requantising shift (``6 / s_out`` when the
    calibrated range is small), folds into the int8 narrowing's ``min 127`` instead of needing
    an immediate the ALU does not have.
    """
    out: list[tuple[str, Any]] = []
    i = 0
    while i < len(ops):
        if ops[i][0] not in ("max", "min"):
            out.append(ops[i])
            i += 1
            continue
        lo: int | None = None
        hi: int | None = None
        while i < len(ops) and ops[i][0] in ("max", "min"):
            op, c = ops[i]
            if op == "max":
                lo = c if lo is None else max(lo, c)
                hi = None if hi is None else max(hi, c)
            else:
                hi = c if hi is None else min(hi, c)
                lo = None if lo is None else min(lo, c)
            i += 1
        if lo is not None and lo > -(1 << 31):  # a clamp at int32's limits is no clamp
            out.append(("max", lo))
        if hi is not None and hi < (1 << 31) - 1:
            out.append(("min", hi))
    return out


def _simplify(ops: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for op, v in ops:
        if op in ("shr", "shl") and v == 0:
            continue
        if out and out[-1][0] == op and op in ("shr", "shl"):
            out[-1] = (op, out[-1][1] + v)
            continue
        out.append((op, v))
    return _merge_clamps(out)


def _split_rounding(ops: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``addi c, shr s`` with ``c`` beyond 16 bits but a multiple of ``2**e`` (a rounding half
    ``2**(s-1)`` after a product, away from the bias) as ``shr e, addi c >> e, shr s - e``:
    floor((t + c) / 2**s) == floor((floor(t / 2**e) + c / 2**e) / 2**(s - e)), nested floor
    division being exact. ``e`` is the least that makes ``c >> e`` fit."""
    ops = list(ops)
    out: list[tuple[str, Any]] = []
    for k, (op, v) in enumerate(ops):
        nxt = ops[k + 1] if k + 1 < len(ops) else None
        if op == "addi" and not IMM_MIN <= v <= IMM_MAX and nxt is not None and nxt[0] == "shr":
            e = next((e for e in range(1, nxt[1] + 1) if v % (1 << e) == 0 and IMM_MIN <= v >> e <= IMM_MAX), None)
            if e is not None:
                out += [("shr", e), ("addi", v >> e)]
                ops[k + 1] = ("shr", nxt[1] - e)
                continue
        out.append((op, v))
    return [(op, v) for op, v in out if not (op == "shr" and v == 0)]


_MONOTONE = ("addi", "shr", "shl", "max", "min")
_SCALAR_OPS = {"addi": lambda x, v: x + v, "shr": lambda x, v: x >> v, "shl": lambda x, v: x << v,
               "muli": lambda x, v: x * v, "max": max, "min": min}  # on Python ints: exact, no wrap


def _tighten(ops: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """A clamp bound beyond 16 bits that cannot move past what follows it (a left shift: the
    requantisation to a finer scale) as the 16-bit limit, where that changes no result: if the
    ops between it and the final clamp to ``[lo, hi]`` are non-decreasing scalar ops ``f``
    (add, shifts, clamps, a positive multiply) with ``f(32767) >= hi`` (``min``; ``max``:
    ``f(-32768) <= lo``), every value the two bounds treat differently clamps to ``hi`` either
    way. Both ``f(bound)`` and ``f(limit)`` are checked to stay in int32 (no wrap, so ``f`` is
    monotone there)."""
    ops = list(ops)
    end = len(ops)
    while end > 0 and ops[end - 1][0] in ("max", "min"):
        end -= 1
    lo = max((v for o, v in ops[end:] if o == "max"), default=None)
    hi = min((v for o, v in ops[end:] if o == "min"), default=None)

    def f(x: int, mid: list[tuple[str, Any]]) -> int | None:
        for o, v in mid:
            x = _SCALAR_OPS[o](x, v)
            if not -(1 << 31) <= x < (1 << 31):
                return None
        return x

    for i, (op, c) in enumerate(ops[:end]):
        mid = ops[i + 1 : end]
        if not all(o in _MONOTONE or (o == "muli" and v > 0) for o, v in mid):
            continue
        if op == "min" and c > IMM_MAX and hi is not None:
            fc, fl = f(c, mid), f(IMM_MAX, mid)
            if fc is not None and fl is not None and fl >= hi:
                ops[i] = ("min", IMM_MAX)
        elif op == "max" and c < IMM_MIN and lo is not None:
            fc, fl = f(c, mid), f(IMM_MIN, mid)
            if fc is not None and fl is not None and fl <= lo:
                ops[i] = ("max", IMM_MIN)
    return ops


_I32 = (-(1 << 31), (1 << 31) - 1)


def _hswish_range(lo: int, hi: int, a: int, b: int) -> tuple[int, int]:
    """The range of q * clip(q + a, 0, b) over the integers q in [lo, hi]: 0 below -a, the
    parabola q (q + a) (least at -a/2) up to b - a, then q b; so its extremes are at the ends
    or those points."""
    pts = {lo, hi} | {q for q in (-a, (-a) // 2, -(a // 2), b - a) if lo <= q <= hi}
    vals = [q * min(max(q + a, 0), b) for q in pts]
    return min(vals), max(vals)


def _drop_idle_clamps(ops: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Drop the clamps that change no value, by the range of the value at each step (unknown,
    all of int32, after a tensor operand; a step that could wrap makes it unknown again): e.g.
    after hard-swish's product and rescale, whose range is within int8 already. Exact: a
    ``max c`` with every value >= c, or a ``min c`` with every value <= c, is the identity."""
    lo, hi = _I32
    out: list[tuple[str, Any]] = []
    for op, v in ops:
        if op == "max" and lo >= v or op == "min" and hi <= v:
            continue
        if op == "max":
            lo, hi = max(lo, v), max(hi, v)
        elif op == "min":
            lo, hi = min(lo, v), min(hi, v)
        elif op in _SCALAR_OPS:
            ends = (_SCALAR_OPS[op](lo, v), _SCALAR_OPS[op](hi, v))
            lo, hi = min(ends), max(ends)  # monotone (muli by a negative reverses the ends)
        elif op == "hswish":  # the gate's add may wrap too: then unknown
            lo, hi = _hswish_range(lo, hi, *v) if _I32[0] <= lo + v[0] and hi + v[0] <= _I32[1] else _I32
        else:  # bias, residual, per-channel shift: a tensor operand
            lo, hi = _I32
        if lo < _I32[0] or hi > _I32[1]:
            lo, hi = _I32
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
    shifts: np.ndarray | None = None
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
                if o[1].size == 1 and IMM_MIN <= int(vec[0]) <= IMM_MAX:
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
        elif n.op == "channel_shift":
            (o,) = other
            vec = _const_vector(o[1], channels) if o[0] == "const" else None
            if vec is None or shifts is not None:
                return "channel_shift needs one constant per-channel shift vector"
            if np.abs(vec).max(initial=0) > 31:
                return f"per-channel shift by {int(np.abs(vec).max())} (SHR takes -31..31)"
            # the rounding half 2**(n-1) is a per-channel add: it joins the bias vector
            rnd = np.where(vec > 0, np.left_shift(np.int64(1), np.maximum(vec - 1, 0)), 0)
            if ops and ops[-1][0] != "bias":
                return "channel_shift after other ALU operations (it must follow the GEMM or its bias)"
            bias = rnd if bias is None else bias + rnd
            if not ops:
                ops.append(("bias", None))
            ops.append(("shrv", None))
            shifts = vec
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
                if n.attrs["dtype"] not in ("int8", "int32"):
                    return f"requantize to {n.attrs['dtype']}"
                ops += [("max", int(n.attrs["min"])), ("min", int(n.attrs["max"]))]
                narrowed = n.attrs["dtype"] == "int8"  # int32: clamped, the chain goes on
        elif n.op == "cast":
            if n.attrs["dtype"] == "int8":
                narrowed = True
            elif n.attrs["dtype"] != "int32":
                return f"cast to {n.attrs['dtype']}"
        elif n.op == "int_hard_swish":
            if any(o == "hswish" for o, _ in ops):
                return "more than one int_hard_swish (one gate per kernel)"
            ops.append(("hswish", (int(n.attrs["offset"]), int(n.attrs["max"]))))
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
        if not 0 <= k < 32:
            return f"residual aligned by << {k} (SHR shifts by at most 31)"
        nxt = ops[i + 1 : i + 3]
        if k == 0:
            ops[i] = ("res", None)
        elif len(nxt) == 2 and nxt[0][0] == "addi" and nxt[1][0] == "shr" and nxt[1][1] >= k:
            c, s = nxt[0][1], nxt[1][1]
            ops[i : i + 3] = [("addi", c), ("shr", k), ("res", None), ("shr", s - k)]
        elif len(nxt) == 2 and nxt[0][0] == "addi" and nxt[1][0] == "shr":
            # a shift s < k: (t + c + (r << k)) >> s == ((t + c) >> s) + (r << (k - s)), as
            # r << k is a multiple of 2**s; the residual tensor is shifted left on the ALU
            c, s = nxt[0][1], nxt[1][1]
            ops[i : i + 3] = [("addi", c), ("shr", s), ("res", k - s)]
        else:
            ops[i] = ("res", k)  # no shift follows: add r << k as it is
        ops = _simplify(ops)
    # fold additive immediates next to the bias (or at the start) into the bias vector
    folded: list[tuple[str, Any]] = []
    for op, v in ops:
        if op == "addi" and (not folded or folded[-1][0] == "bias"):
            if v == 0:
                continue
            if not folded and IMM_MIN <= v <= IMM_MAX and bias is None:
                folded.append((op, v))
                continue
            bias = (np.zeros(channels, np.int64) if bias is None else bias) + v
            if not folded:
                folded.append(("bias", None))
            continue
        folded.append((op, v))
    ops = _drop_idle_clamps(_tighten(_split_rounding(folded)))
    for op, v in ops:
        if op in ("addi", "max", "min", "muli") and not IMM_MIN <= v <= IMM_MAX:
            return f"ALU immediate {v} of {op} does not fit 16 bits"
        if op == "hswish" and not all(IMM_MIN <= c <= IMM_MAX for c in v):
            return f"int_hard_swish offset/max {v} do not fit the ALU's 16-bit immediates"
        if op in ("shr", "shl") and not 0 < v < 32:
            return f"shift by {v}"
    if bias is not None:
        bias = ((bias + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)  # int32 wrap, as the graph's adds
    strides = tuple(anchor.attrs.get("strides", (1, 1)))
    padding = tuple(anchor.attrs.get("padding", (0, 0, 0, 0)))
    kernel = int(anchor.attrs["kernel"][0]) if anchor.op == "conv2d_transpose_packed" else 0
    return AluChain(anchor.op, x, w, residual, bias, [(o, v) for o, v in ops], strides, padding,  # type: ignore[arg-type]
                    groups, kernel, None if shifts is None else shifts.astype(np.int32),
                    anchor.op == "conv2d_packed" and _block_diagonal(graph.consts[w], groups))


def _block_diagonal(wp: np.ndarray, groups: int) -> bool:
    """Whether a packed (grouped) weight ``(O/c, 1, KH, KW, c, c)`` is a depthwise conv's: one
    channel block per group (a single block: a conv of at most one block's channels), each
    output channel reading only its own input channel (:func:`~vdla.compiler.targets.vdla.packing.block_diagonal`)."""
    return wp.ndim == 6 and wp.shape[0] == groups and block_diagonal(wp)


def _epilogue_tail(ch: AluChain) -> Tail | None:
    """The chain as the GEMM epilogue's tail ``clip((acc [+ bias]) >> shift, lo, hi)``, or None."""
    if ch.residual is not None or ch.shifts is not None:
        return None
    ops = list(ch.ops)
    bias = bool(ops) and ops[0][0] == "bias"
    ops = ops[bias:]
    shift = ops.pop(0)[1] if ops and ops[0][0] == "shr" else 0
    if [o for o, _ in ops] != ["max", "min"]:
        return None
    return Tail(bias=bias, shift=shift, clip=(ops[0][1], ops[1][1]))


def window_choice(ch: AluChain, graph: Graph, cfg: Config) -> Any:
    """The window template's layer (:class:`~vdla.compiler.targets.vdla.window.WindowConv`) for
    a depthwise node on ``cfg``, or why it keeps the grouped template."""
    if not depthwise_window.ENABLED:
        return "the window template is off"
    tail = _epilogue_tail(ch) if ch.depthwise and ch.anchor == "conv2d_packed" else None
    if tail is None:
        return "not a depthwise conv with an epilogue tail"
    return depthwise_window.window_layer(cfg, graph.type_of(ch.data).shape, graph.type_of(ch.weight).shape,
                                         ch.groups, ch.strides, ch.padding, tail)


def _tell_workload_the_tail(acc_op: Any, ch: AluChain) -> None:
    """Mark the tail inputs this kernel loads in its ``workload`` (the template arguments ``bias``
    and ``residual``, the last but two and last but one of every VDLA template's): the chain's
    ALU stage is built here, after the declaration, which saw neither. A tuned record is then
    looked up by the workload that was measured with the same buffers in use (a per-channel
    shift vector counts as a bias: one accumulator row per channel block, as the bias)."""
    wl = acc_op.attrs.get("workload")
    if wl is None:
        return
    args = list(wl[1])
    args[-3] = ch.bias is not None or ch.shifts is not None
    args[-2] = ch.residual is not None
    acc_op.attrs["workload"] = [wl[0], args]


def build_kernel(ch: AluChain, graph: Graph, cfg: Config, vthreads: int, name: str) -> Any:
    """Declare, schedule and build one VDLA kernel; returns the VDLAFunction."""
    conv = window_choice(ch, graph, cfg)
    if not isinstance(conv, str):
        return depthwise_window.build_depthwise_window(conv, cfg, name, nthread=max(1, vthreads))
    xt, wt = graph.type_of(ch.data), graph.type_of(ch.weight)
    D = te.placeholder(xt.shape, "int8", name="data")
    K = te.placeholder(wt.shape, "int8", name="weight")
    tail = Tail(clip=None)
    if ch.anchor == "conv2d_packed" and ch.groups > 1:
        base = group_conv2d_packed(D, K, ch.groups, ch.strides, ch.padding[0], tail, config=cfg, name=name)
        sched = schedule_group_conv2d_packed
    elif ch.anchor == "conv2d_packed":
        base = conv2d_packed(D, K, ch.strides, ch.padding, tail, config=cfg, name=name)
        sched = schedule_conv2d_packed
    elif ch.anchor == "conv2d_transpose_packed":
        base = conv2d_transpose_packed(D, K, ch.strides[0], ch.padding[0], ch.kernel, tail, config=cfg, name=name)
        sched = schedule_conv2d_transpose_packed
    else:
        base = dense_packed(D, K, tail, config=cfg, name=name)
        sched = schedule_dense_packed
    acc = base.op.input_tensors()[0].op.input_tensors()[0]
    _tell_workload_the_tail(acc.op, ch)
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
    B = R = S = None
    if ch.bias is not None:
        B = te.placeholder((ob, b, co), "int32", name="bias")
        args.append(B)
    if ch.shifts is not None:
        S = te.placeholder((ob, b, co), "int32", name="shifts")
        args.append(S)
    if ch.residual is not None:
        R = te.placeholder(shape, "int8", name="residual")
        args.append(R)
    adt = acc.dtype

    def apply(t: Any, i: tuple[Any, ...], ops: list[tuple[str, Any]]) -> Any:
        for op, v in ops:
            if op == "bias":
                t = t + B[chan(i), i[nd - 2], i[nd - 1]]  # type: ignore[index]
            elif op == "res":
                r = R[i].astype(adt)  # type: ignore[index]
                t = t + (r if v is None else shift_left(r, v))  # v: the residual's own alignment
            elif op == "addi":
                t = t + v
            elif op == "muli":
                t = t * v
            elif op == "shrv":
                t = shift_right(t, S[chan(i), i[nd - 2], i[nd - 1]])  # type: ignore[index]
            elif op == "shr":
                t = shift_right(t, v)
            elif op == "shl":
                t = shift_left(t, v)
            elif op == "max":
                t = te.max(t, v)
            elif op == "min":
                t = te.min(t, v)
        return t

    cut = next((k for k, (op, _) in enumerate(ch.ops) if op == "hswish"), None)
    if cut is None:
        alu = te.compute(shape, lambda *i: apply(acc[i], i, ch.ops), name=f"{name}_alu", tag="vdla_alu")
    else:
        # hard-swish: x * clip(x + offset, 0, max) needs x twice. Three ALU stages: x (in place
        # on the accumulator); the gate on a copy of it (ADD, MAX, MIN); x times the gate (MUL
        # with a tensor operand, in place on x) and the rest of the tail
        offset, top = ch.ops[cut][1]
        x = te.compute(shape, lambda *i: apply(acc[i], i, ch.ops[:cut]), name=f"{name}_alu_x", tag="vdla_alu")
        gate = te.compute(shape, lambda *i: te.min(te.max(x[i] + offset, 0), top), name=f"{name}_alu_gate",
                          tag="vdla_alu")
        alu = te.compute(shape, lambda *i: apply(x[i] * gate[i], i, ch.ops[cut + 1:]), name=f"{name}_alu",
                         tag="vdla_alu")
    out = te.compute(shape, lambda *i: alu[i].astype("int8"), name=f"{name}_out", tag="vdla_out")
    args.append(out)
    s = sched(out, Knobs(vthreads=vthreads), config=cfg)
    return build(s, args, target="vdla", name=name, config=cfg)
