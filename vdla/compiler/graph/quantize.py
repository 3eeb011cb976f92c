"""Post-training int8 quantisation with power-of-two scales, and QDQ-model import.

VDLA requantises with a shift (VTA's realisation: add ``2**(n-1)``, shift right ``n``,
clip, cast), so every scale is a power of two: a float tensor ``x`` is represented by
``q = clip(round(x / s))`` with ``s = 2**k``.

:func:`quantize` calibrates on a list of inputs (max ``|value|``, a percentile of ``|value|``, or
the least KL divergence of every tensor gives its scale; :func:`calibrate`) and rewrites
the graph (:func:`quantize_graph`):

* conv2d / conv2d_transpose / dense with constant weights: int8 data (``quantize`` from
  float, or a ``requantize`` of an int32 value), int8 weights (per-tensor power-of-two
  scale, or with ``QConfig.per_channel`` one per output channel), int32 accumulation at
  scale ``s_x * s_w``; the bias becomes an int32 ``add``; per-channel scales are then
  aligned to the layer's coarsest one by a per-channel rounding shift (``channel_shift``,
  which VDLA runs as SHR with a tensor operand);
* ReLU / clip run on the integers (clip bounds scaled); hard-sigmoid and hard-swish as
  integer gates and a fixed-point multiply (:meth:`_Quantizer.hard`); a residual ``add`` aligns both
  operands to the finer scale with a left ``shift`` and adds in int32; max-pool runs on int8;
* an int32 value is requantised to int8 (``requantize``, rounding shift + clip to
  ±127) where it leaves the conv/bias/ReLU/add chain: more than one reader, a reader that
  is not element-wise, or a graph output;
* everything else (first conv and the classifier by default, as VTA's
  ``skip_conv_layers=[0]`` / ``skip_dense_layer``, pooling, softmax ...) stays float32,
  with ``dequantize`` at the boundary.

:func:`qdq_to_int` imports a QDQ model (QuantizeLinear/DequantizeLinear pairs around float
ops, as ONNX quantisers write them) into the same integer path, taking the scales from
the Q/DQ nodes (they must be powers of two with zero point 0).

:func:`agreement` compares the int8 graph with the float one: top-1 agreement and SNR;
:func:`layer_snr` gives the SNR of every int8 tensor against the float value it stands for
(the quantiser notes ``quant_of`` and ``scale`` on each ``quantize`` / ``requantize``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .ir import Graph, GraphError, Node
from .reference import run

__all__ = [
    "QConfig",
    "CALIBRATIONS",
    "pow2_scale",
    "calibrate",
    "quantize_graph",
    "quantize",
    "fold_hard_activations",
    "strip_qdq",
    "qdq_to_int",
    "Agreement",
    "agreement",
    "layer_snr",
]

_GEMM = ("conv2d", "conv2d_transpose", "dense")
_INT_ABSORB = ("relu", "clip", "add", "hard_sigmoid", "hard_swish")
_HARD = ("hard_sigmoid", "hard_swish")


@dataclass(frozen=True)
class QConfig:
    """Which layers to quantise and the integer ranges."""

    #: Indices (in topological order, counting conv2d nodes) of convolutions kept in float32.
    skip_conv: tuple[int, ...] = (0,)
    #: Keep dense layers in float32 (VTA's default: the classifier runs on the CPU).
    skip_dense: bool = True
    #: Node names kept in float32.
    skip_nodes: frozenset[str] = field(default_factory=frozenset)
    #: Largest ``|int8|`` value of activations and weights (symmetric, as VTA's clip to ±127).
    qmax: int = 127
    #: Requantise wherever a value has a given scale (QDQ import), not only at chain ends.
    materialize_scaled: bool = False
    #: Quantise only gemms whose weight has an entry in ``weight_scales`` (QDQ import).
    require_weight_scale: bool = False
    #: Requantise to int8 a GEMM result added to another int32 accumulator (ResNet's
    #: downsample shortcut), as VTA does, so both convolutions can run on VDLA (whose
    #: kernels store int8). Off: the shortcut stays int32 (more precise, CPU-only).
    int8_shortcut: bool = False
    #: Weight scales per output channel (conv2d, conv2d_transpose, dense): each channel's
    #: int32 accumulator is brought to the layer's common scale by a per-channel rounding
    #: shift (``channel_shift``, SHR with a tensor operand on VDLA). Off: one power-of-two
    #: scale per weight tensor.
    per_channel: bool = False
    #: Activation calibration: "max" (max ``|x|``), "percentile" (the ``percentile`` of ``|x|``) or
    #: "kl" (the power-of-two scale whose int8 histogram is closest in KL divergence).
    calibration: str = "max"
    percentile: float = 99.99


def pow2_scale(maxabs: float, qmax: int = 127) -> float:
    """Smallest power of two ``s`` with ``maxabs / s <= qmax`` (1.0 for an all-zero tensor)."""
    if not maxabs > 0 or not math.isfinite(maxabs):
        return 1.0
    return 2.0 ** math.ceil(math.log2(maxabs / qmax))


def is_pow2(s: float) -> bool:
    if not s > 0:
        return False
    m, _ = math.frexp(s)
    return m == 0.5


CALIBRATIONS = ("max", "percentile", "kl")
_BINS = 2048


def calibrate(graph: Graph, dataset: Sequence[Any], qmax: int = 127, method: str = "max",
              percentile: float = 99.99) -> dict[str, float]:
    """Power-of-two scale of every float value (inputs and nodes) over ``dataset``.

    ``method`` "max": from max ``|value|``; "percentile": from the ``percentile`` of the
    non-zero ``|value|`` (outliers clip); "kl": the power-of-two scale, max ``|value|``'s or one of
    its halvings, whose clipped and int8-rounded histogram of ``|value|`` has the least KL
    divergence from the float histogram (TensorRT's entropy calibration, on VDLA's grid of
    shift scales; see :func:`_kl_scale`). The histograms (2048 bins up to max ``|value|``,
    exact zeros left out) need a second pass over ``dataset``.
    """
    if method not in CALIBRATIONS:
        raise GraphError(f"calibrate: unknown method {method!r} (one of {', '.join(CALIBRATIONS)})")
    if not 0 < percentile <= 100:
        raise GraphError(f"calibrate: percentile {percentile} is not in (0, 100]")
    if not dataset:
        raise GraphError("calibrate: the calibration set is empty")
    maxabs: dict[str, float] = {}
    for x in dataset:
        for k, v in _float_values(graph, x):
            maxabs[k] = max(maxabs.get(k, 0.0), float(np.abs(v).max(initial=0.0)))
    if method == "max":
        return {k: pow2_scale(m, qmax) for k, m in maxabs.items()}
    hists = {k: np.zeros(_BINS, np.int64) for k in maxabs}
    for x in dataset:
        for k, v in _float_values(graph, x):
            if maxabs[k] > 0:
                # exact zeros (half of a ReLU's output) are exact at every scale: they say
                # nothing about the clip point, and their spike would dominate the KL term
                a = np.abs(v[v != 0])
                hists[k] += np.histogram(a, _BINS, (0.0, maxabs[k]))[0]
    out = {}
    for k, m in maxabs.items():
        h = hists[k]
        if not m > 0 or not h.sum():
            out[k] = pow2_scale(m, qmax)
        elif method == "percentile":
            i = int(np.searchsorted(np.cumsum(h), h.sum() * percentile / 100.0))
            out[k] = pow2_scale(m * min(i + 1, _BINS) / _BINS, qmax)
        else:
            out[k] = _kl_scale(h, m, qmax)
    return out


def _float_values(graph: Graph, x: Any) -> list[tuple[str, np.ndarray]]:
    env = run(graph, x, return_all=True, check=False)
    return [(k, v) for k, v in env.items() if k not in graph.consts and v.dtype == np.float32]


def _kl_scale(hist: np.ndarray, maxabs: float, qmax: int) -> float:
    """The power-of-two scale (max ``|x|``'s and its halvings) with the least KL(P || Q), as
    TensorRT's entropy calibration: P is the histogram up to the clip point with the clipped
    mass added to its last bin; Q is the same range without that mass, rounded to the int8
    levels (each level's mass spread over the non-empty bins it covers), so clipping costs
    what it loses. Only clip points that span at least ``qmax + 1`` bins are tried (on fewer
    bins every level is one bin and Q would copy P)."""
    width = maxabs / len(hist)
    s0 = pow2_scale(maxabs, qmax)
    centres = (np.arange(len(hist)) + 0.5) * width
    best: tuple[float, float] | None = None
    for j in range(12):
        s = s0 / 2**j
        stop = min(len(hist), int(np.ceil(qmax * s / width)))
        if stop <= qmax and best is not None:
            break
        p = hist[:stop].astype(np.float64)
        inside = p.copy()
        p[-1] += hist[stop:].sum()
        level = np.minimum(np.rint(centres[:stop] / s), qmax).astype(np.int64)
        mass = np.bincount(level, weights=inside, minlength=qmax + 1)
        nz = np.bincount(level, weights=(inside > 0).astype(np.float64), minlength=qmax + 1)
        q = np.where(inside > 0, mass[level] / np.maximum(nz[level], 1), 0.0)
        pn, qn = p / p.sum(), q / max(q.sum(), 1e-300)
        m = pn > 0
        kl = float((pn[m] * np.log(pn[m] / np.maximum(qn[m], 1e-12))).sum())
        if best is None or kl < best[0] - 1e-12:
            best = (kl, s)
    assert best is not None
    return best[1]


def _log2_int(r: float, what: str) -> int:
    k = math.log2(r)
    if abs(k - round(k)) > 1e-9:
        raise GraphError(f"{what}: scale ratio {r} is not a power of two (VDLA requantises with shifts)")
    return int(round(k))


class _Quantizer:
    def __init__(self, g: Graph, scales: Mapping[str, float], cfg: QConfig, wscales: Mapping[str, float]) -> None:
        self.g, self.scales, self.cfg, self.wscales = g, scales, cfg, wscales
        self.out = Graph(g.name)
        self.out.inputs = dict(g.inputs)
        self.cons = g.consumers()
        self.rep: dict[str, tuple[str, str, float]] = {k: ("f", k, 1.0) for k in g.inputs}
        self.cmap: dict[str, str] = {}
        self.cache_f: dict[str, str] = {}
        self.cache_q8: dict[str, tuple[str, float]] = {}

    # -- emitting -------------------------------------------------------------------
    def node(self, op: str, ins: list[str], name: str, **attrs: Any) -> str:
        return self.out.add_node(op, ins, name=name, **attrs)

    def const(self, v: str) -> str:
        if v not in self.cmap:
            self.cmap[v] = self.out.add_const(v, self.g.consts[v])
        return self.cmap[v]

    def fval(self, v: str) -> str:
        if v in self.g.consts:
            return self.const(v)
        kind, name, s = self.rep[v]
        if kind == "f":
            return name
        if v not in self.cache_f:
            if v in self.cache_q8:
                name, s = self.cache_q8[v]
            self.cache_f[v] = self.node("dequantize", [name], f"{v}.dq", scale=s)
        return self.cache_f[v]

    def q8val(self, v: str) -> tuple[str, float] | None:
        if v in self.cache_q8:
            return self.cache_q8[v]
        if v in self.g.consts:
            return None
        kind, name, s = self.rep[v]
        if kind == "q8":
            return name, s
        target = self.scales.get(v)
        if target is None:
            return None
        if kind == "f":
            q = self.node("quantize", [name], f"{v}.quant", scale=target, dtype="int8")
        else:
            n = _log2_int(target / s, f"requantize {v!r}")
            q = self.node(
                "requantize", [name], f"{v}.requant", shift=n, min=-self.cfg.qmax, max=self.cfg.qmax, dtype="int8"
            )
        # which float value this int8 tensor stands for, at what scale (for :func:`layer_snr`)
        self.out.nodes[-1].notes.update(quant_of=v, scale=target)
        self.cache_q8[v] = (q, target)
        return self.cache_q8[v]

    def intval(self, v: str) -> tuple[str, str, float] | None:
        """(kind, name, scale) of an integer form of v, quantising a float value if it has a scale."""
        if v in self.g.consts:
            return None
        kind, name, s = self.rep[v]
        if v in self.cache_q8:  # materialised: readers see the stored int8 tensor
            return ("q8", *self.cache_q8[v])
        if kind != "f":
            return kind, name, s
        q = self.q8val(v)
        return ("q8", q[0], q[1]) if q else None

    def i32(self, v: str, iv: tuple[str, str, float], target: float) -> str:
        kind, name, s = iv
        if kind == "q8":
            name = self.node("cast", [name], f"{v}.i32", dtype="int32")
        k = _log2_int(s / target, f"align {v!r}")
        if k:
            name = self.node("shift", [name], f"{v}.align", n=-k)
        return name

    # -- the pass -------------------------------------------------------------------
    def quantizable(self, n: Node, conv_idx: int) -> bool:
        if n.name in self.cfg.skip_nodes or n.inputs[1] not in self.g.consts:
            return False
        if len(n.inputs) == 3 and n.inputs[2] not in self.g.consts:
            return False
        if n.op == "dense" and self.cfg.skip_dense:
            return False
        if n.op == "conv2d" and conv_idx in self.cfg.skip_conv:
            return False
        if self.cfg.require_weight_scale and n.inputs[1] not in self.wscales:
            return False
        return self.g.type_of(n.inputs[0]).dtype == "float32" or self.rep.get(n.inputs[0], ("f",))[0] != "f"

    def gemm(self, n: Node) -> bool:
        xq = self.q8val(n.inputs[0])
        if xq is None:
            return False
        x, sx = xq
        w = self.g.consts[n.inputs[1]].astype(np.float64)
        shape = (1, -1, 1, 1) if n.op != "dense" else (1, -1)
        per_channel = self.cfg.per_channel and n.inputs[1] not in self.wscales
        if per_channel:  # output channels: axis 0 of OIHW and of dense's (M, K), axis 1 of the transpose's IOHW
            wo = w.swapaxes(0, 1) if n.op == "conv2d_transpose" else w
            m = np.abs(wo.reshape(wo.shape[0], -1)).max(axis=1, initial=0.0)
            sw = np.array([pow2_scale(float(v), self.cfg.qmax) for v in m])
            if (m > 0).any():  # an all-zero channel takes the finest scale: it must not set the common one
                sw[m == 0] = sw[m > 0].min()
            sw = sw.reshape((1, -1, 1, 1) if n.op == "conv2d_transpose" else (-1,) + (1,) * (w.ndim - 1))
        else:
            sw = np.float64(self.wscales.get(n.inputs[1]) or pow2_scale(float(np.abs(w).max(initial=0.0)),
                                                                       self.cfg.qmax))
        wq = np.clip(np.rint(w / sw), -self.cfg.qmax, self.cfg.qmax).astype(np.int8)
        wn = self.out.add_const(f"{n.inputs[1]}.q", wq)
        attrs = {k: v for k, v in n.attrs.items()}
        acc = self.node(n.op, [x, wn], n.name, **attrs)
        sacc = sx * sw.reshape(-1)  # per output channel (one value per-tensor)
        if len(n.inputs) == 3:
            b = self.g.consts[n.inputs[2]].astype(np.float64)
            bq = np.rint(b / sacc)
            if np.abs(bq).max(initial=0) >= 2**31:
                raise GraphError(f"quantize: bias of {n.name!r} overflows int32 at scale {sacc.max()}")
            bn = self.out.add_const(f"{n.inputs[2]}.q", bq.astype(np.int32).reshape(shape))
            acc = self.node("add", [acc, bn], f"{n.name}.bias")
        common = float(sacc.max())
        if sacc.min() != common:
            # bring every channel to the coarsest channel's scale: right shifts only, and the
            # int32 accumulator keeps far more precision than the int8 result needs
            k = np.array([_log2_int(common / v, f"channel shift of {n.name!r}") for v in sacc], np.int32)
            kn = self.out.add_const(f"{n.inputs[1]}.shift", k.reshape(shape))
            acc = self.node("channel_shift", [acc, kn], f"{n.name}.chshift")
        self.rep[n.name] = ("q32", acc, common)
        return True

    def hard(self, n: Node) -> bool:
        """hard_sigmoid / hard_swish on the integers (MobileNetV3's activations), from the input
        at its calibrated scale, clamped to the int8 range, as ``q`` at scale ``sx`` (the input's,
        or 2**e finer where it is too coarse for the gate):

        * ``u = clip(q + a, 0, b)`` with ``b = round(1 / (alpha sx))``, ``a = round(beta b)``
          (6 / sx and 3 / sx for PyTorch's 1/6, 1/2 and sx <= 1), so ``hard_sigmoid(x) = u / b``;
        * hard_swish: ``p = q * u`` (``int_hard_swish``), ``hard_swish(x) = sx p / b``;
        * the factor to the output scale, ``1 / (b so)`` or ``sx / (b so)`` (1/6 times a power
          of two for sx <= 1), as a fixed-point multiply: an optional rounding shift ``j`` (so the
          product fits 32 bits), ``mul`` by ``M < 2**14``, and the rounding shift ``P`` left to
          the int8 requantisation (the value's scale is ``so / 2**P``).

        Every step is an int32 ALU operation (ADD, MAX, MIN, MUL, SHR), so VDLA runs it in the
        producer's kernel. False (the node stays float) when a scale is missing or the factor
        does not fit that form."""
        src = n.inputs[0]
        if self.rep.get(src, ("f",))[0] == "f":
            return False
        iv = self.intval(src)
        so = self.scales.get(n.name)
        if iv is None or so is None:
            return False
        kind, name, s = iv
        alpha, beta = (1 / 6, 0.5) if n.op == "hard_swish" else (float(n.attrs["alpha"]), float(n.attrs["beta"]))
        if not alpha > 0:
            return False
        sx = s if kind == "q8" else self.scales.get(src, s)
        # q on a grid 2**e finer than the input's where that is coarse, so the gate's 0..1 has
        # at least 64 steps (and its midpoint an integer): q is the int8 input, shifted left by e
        e = max(0, math.ceil(math.log2(64 * alpha * sx)))
        qmax = self.cfg.qmax << e
        if kind == "q8":
            q = self.node("cast", [name], f"{n.name}.x", dtype="int32")
            if e:
                q = self.node("shift", [q], f"{n.name}.xe", n=-e)
        else:
            # clamped above only: below -offset the gate is 0 and so is the product, whatever q
            q = self.node("requantize", [name], f"{n.name}.x", shift=_log2_int(sx / s, f"requantize {src!r}") - e,
                          min=-(2**31), max=qmax, dtype="int32")
        sx /= 2**e
        # the gate is u / b: exactly 1 where it saturates, whatever b's rounding
        b = int(np.rint(1 / (alpha * sx)))
        a = int(np.rint(beta * b))
        if not 0 < b < 2**20 or abs(a) >= 2**20:
            return False
        if n.op == "hard_swish":
            p = self.node("int_hard_swish", [q], f"{n.name}.gate", offset=a, max=b)
            factor, pmax = sx / (b * so), qmax * b
        else:
            t = self.node("add", [q, self.out.add_const(f"{n.name}.offset", np.array(a, np.int32))], f"{n.name}.add")
            p = self.node("clip", [t], f"{n.name}.gate", min=0, max=b)
            factor, pmax = 1 / (b * so), b
        total = math.floor(math.log2(2**14 / factor))  # the largest shift with M = factor * 2**total <= 2**14
        if total > 15 and factor * 2**15 >= 2**8:
            # a shift of at most 15 keeps the rounding half 2**(P-1) one 16-bit ALU immediate (one
            # ALU operation per element fewer on VDLA), where M keeps 8 bits or more (at most
            # 0.2 % off, a quarter of an int8 step at full scale)
            total = 15
        mult = int(np.rint(factor * 2.0**total))
        j = 0  # pre-shift p so that |p >> j| * M (plus the rounding half) stays in int32
        while ((pmax >> j) + 1) * mult >= 2**30:
            j += 1
        if total < j or mult < 1:
            return False
        if j:
            p = self.node("shift", [p], f"{n.name}.preshift", n=j)
        m = self.node("mul", [p, self.out.add_const(f"{n.name}.mult", np.array(mult, np.int32))], n.name)
        self.rep[n.name] = ("q32", m, so / 2.0 ** (total - j))
        return True

    def elemwise(self, n: Node) -> bool:
        if n.op in _HARD:
            return self.hard(n)
        if n.op in ("relu", "clip", "max_pool2d"):
            iv = self.intval(n.inputs[0]) if self.rep.get(n.inputs[0], ("f",))[0] != "f" else None
            if iv is None:
                return False
            kind, name, s = iv
            if n.op == "max_pool2d":
                q = self.q8val(n.inputs[0])
                if q is None:
                    return False
                self.rep[n.name] = ("q8", self.node("max_pool2d", [q[0]], n.name, **n.attrs), q[1])
                return True
            attrs: dict[str, Any] = {}
            if n.op == "clip":
                lim = 127 if kind == "q8" else 2**31 - 1
                for k in ("min", "max"):
                    if n.attrs[k] is not None:
                        attrs[k] = int(np.clip(np.rint(n.attrs[k] / s), -lim - 1, lim))
            self.rep[n.name] = (kind, self.node(n.op, [name], n.name, **attrs), s)
            return True
        if n.op == "add":
            a, b = n.inputs
            consts = [i for i in (a, b) if i in self.g.consts]
            acts = [i for i in (a, b) if i not in self.g.consts]
            if not any(self.rep.get(i, ("f",))[0] != "f" for i in acts):
                return False
            ivs = [self.intval(i) for i in acts]
            if any(iv is None for iv in ivs):
                return False
            s = min(iv[2] for iv in ivs)  # type: ignore[index]
            ins = [self.i32(i, iv, s) for i, iv in zip(acts, ivs)]  # type: ignore[arg-type]
            for c in consts:
                cq = np.rint(self.g.consts[c].astype(np.float64) / s)
                ins.append(self.out.add_const(f"{c}.q", cq.astype(np.int32)))
            if self.out.type_of(ins[0]).shape != n.type.shape:  # type: ignore[union-attr]
                ins.reverse()
            self.rep[n.name] = ("q32", self.node("add", ins, n.name), s)
            return True
        return False

    def _second_accumulator(self, v: str, reader: Node) -> bool:
        """Is ``reader`` an add whose other operand is an int32 accumulator already?"""
        return reader.op == "add" and any(
            i != v and i not in self.g.consts and i not in self.cache_q8 and self.rep.get(i, ("f",))[0] == "q32"
            for i in reader.inputs
        )

    def run(self) -> Graph:
        conv_idx = -1
        for n in self.g.topo_order():
            if n.op == "conv2d":
                conv_idx += 1
            done = False
            if n.op in _GEMM and self.quantizable(n, conv_idx):
                done = self.gemm(n)
            elif n.op in ("relu", "clip", "add", "max_pool2d", *_HARD):
                done = self.elemwise(n)
            if not done:
                self.rep[n.name] = ("f", self.node(n.op, [self.fval(i) for i in n.inputs], n.name, **n.attrs), 1.0)
                continue
            kind = self.rep[n.name][0]
            readers = self.cons.get(n.name, [])
            if kind == "q32" and (
                n.name in self.g.outputs
                or len(readers) != 1
                or readers[0].op not in _INT_ABSORB
                or (self.cfg.materialize_scaled and n.name in self.scales)
                or (self.cfg.int8_shortcut and self._second_accumulator(n.name, readers[0]))
            ):
                self.q8val(n.name)
        self.out.outputs = [self.fval(o) for o in self.g.outputs]
        return self.out.infer_types()


def _scalar(g: Graph, v: str) -> float | None:
    a = g.consts.get(v)
    return float(a.reshape(-1)[0]) if a is not None and a.size == 1 else None


def _near(v: float | None, want: float) -> bool:
    return v is not None and abs(v - want) <= 1e-6 * abs(want)


class _HardPatterns:
    """The hard-sigmoid / hard-swish patterns of :func:`fold_hard_activations` in one graph."""

    def __init__(self, g: Graph) -> None:
        self.g, self.prod, self.cons, self.outs = g, g.producers(), g.consumers(), set(g.outputs)

    def inner(self, v: str, op: str) -> Node | None:
        """v's producer if it is an ``op`` whose value only one node reads."""
        p = self.prod.get(v)
        ok = p is not None and p.op == op and len(self.cons.get(v, [])) == 1 and v not in self.outs
        return p if ok else None

    def relu6_plus3(self, v: str) -> str | None:
        """x, where v = clip(x + 3, 0, 6)."""
        c = self.inner(v, "clip")
        if c is None or c.attrs["min"] is None or float(c.attrs["min"]) != 0.0 or not _near(c.attrs["max"], 6.0):
            return None
        a = self.inner(c.inputs[0], "add")
        if a is None:
            return None
        x = [i for i in a.inputs if not _near(_scalar(self.g, i), 3.0)]
        return x[0] if len(x) == 1 and len(a.inputs) == 2 else None

    def by_six(self, n: Node) -> str | None:
        """u, where n = u / 6 or u * (1/6)."""
        if n.op == "div" and _near(_scalar(self.g, n.inputs[1]), 6.0):
            return n.inputs[0]
        if n.op == "mul":
            u = [i for i in n.inputs if not _near(_scalar(self.g, i), 1 / 6)]
            return u[0] if len(u) == 1 else None
        return None

    def match(self, n: Node) -> tuple[str, str, dict[str, Any]] | None:
        """(op, input, attrs) that the pattern ending at n computes, or None."""
        if n.op in ("maximum", "minimum") and len(n.inputs) == 2:  # Max / Min with a scalar: a clip
            c = _scalar(self.g, n.inputs[1])
            if c is not None and n.inputs[0] not in self.g.consts and self.g.type_of(n.inputs[0]).dtype == "float32":
                return "clip", n.inputs[0], {"min": c, "max": None} if n.op == "maximum" else {"min": None, "max": c}
        if n.op == "clip":  # clip(relu(x)) or clip(clip(x)): one clip (Min(Relu(x), 6) is ReLU6)
            p = self.inner(n.inputs[0], "relu") or self.inner(n.inputs[0], "clip")
            if p is not None and self.g.type_of(p.inputs[0]).dtype == "float32":
                lo, hi = (0.0, None) if p.op == "relu" else (p.attrs["min"], p.attrs["max"])
                for op, c in (("max", n.attrs["min"]), ("min", n.attrs["max"])):  # as _merge_clamps
                    if c is None:
                        continue
                    if op == "max":
                        lo, hi = c if lo is None else max(lo, c), None if hi is None else max(hi, c)
                    else:
                        lo, hi = None if lo is None else min(lo, c), c if hi is None else min(hi, c)
                return "clip", p.inputs[0], {"min": lo, "max": hi}
        u = self.by_six(n)
        if u is not None:
            x = self.relu6_plus3(u)
            if x is not None:
                return "hard_sigmoid", x, {"alpha": 1 / 6, "beta": 0.5}
            m = self.inner(u, "mul")
            for k in (0, 1) if m is not None else ():
                if self.relu6_plus3(m.inputs[1 - k]) == m.inputs[k]:  # type: ignore[union-attr]
                    return "hard_swish", m.inputs[k], {}  # type: ignore[union-attr]
        if n.op == "mul":
            for k in (0, 1):
                h = self.inner(n.inputs[1 - k], "hard_sigmoid")
                if (h is not None and h.inputs[0] == n.inputs[k] and _near(h.attrs["alpha"], 1 / 6)
                        and _near(h.attrs["beta"], 0.5)):
                    return "hard_swish", n.inputs[k], {}
        return None


def fold_hard_activations(graph: Graph) -> Graph:
    """Activations written out of element-wise ops, as exporters write them, as the nodes the
    quantiser runs on the integers: ``Max`` / ``Min`` with a scalar constant -> ``clip``, and a
    clip of a ReLU or of a clip -> one clip (``Min(Relu(x), 6)``: ReLU6);
    ``clip(x + 3, 0, 6) / 6`` (or ``* (1/6)``) -> ``hard_sigmoid(x)`` (alpha 1/6, beta 1/2);
    ``x * hard_sigmoid(x)`` (that alpha and beta) and ``x * clip(x + 3, 0, 6) / 6`` ->
    ``hard_swish(x)``. The last node of a pattern keeps its name (so calibrated scales still
    apply); its inner nodes must have no other reader. Returns a new graph."""
    g = graph.copy().infer_types()
    changed = True
    while changed:
        changed = False
        pats = _HardPatterns(g)
        for n in g.topo_order():
            new = pats.match(n)
            if new is not None:
                n.op, n.inputs, n.attrs, n.type = new[0], [new[1]], new[2], None
                changed = True
                break
        g.prune()
    return g.infer_types()


def quantize_graph(
    graph: Graph,
    scales: Mapping[str, float],
    config: QConfig | None = None,
    weight_scales: Mapping[str, float] | None = None,
) -> Graph:
    """Rewrite a float graph into the int8 path with the given activation scales
    (``scales[value]``; powers of two) and optional weight scales by constant name."""
    cfg = config or QConfig()
    for k, s in list(scales.items()) + list((weight_scales or {}).items()):
        if not is_pow2(s):
            raise GraphError(f"quantize: scale {s} of {k!r} is not a power of two")
    g = fold_hard_activations(graph)
    return _Quantizer(g, scales, cfg, weight_scales or {}).run()


def quantize(graph: Graph, calibration: Sequence[Any], config: QConfig | None = None) -> Graph:
    """Calibrate on ``calibration`` (a list of input dicts/arrays) and quantise."""
    cfg = config or QConfig()
    return quantize_graph(graph, calibrate(graph, calibration, cfg.qmax, cfg.calibration, cfg.percentile), cfg)


# --------------------------------------------------------------------------- QDQ import


def strip_qdq(graph: Graph) -> tuple[Graph, dict[str, float], dict[str, float]]:
    """Remove Q/DQ pairs, returning (float graph, activation scales, weight scales).

    ``DequantizeLinear(const)`` and ``DequantizeLinear(QuantizeLinear(const))`` become float
    constants whose scale is recorded; ``DequantizeLinear(QuantizeLinear(x))`` becomes ``x``
    with ``scales[x]`` set.
    """
    g = graph.copy().infer_types()
    scales: dict[str, float] = {}
    wscales: dict[str, float] = {}
    prod = g.producers()

    def check(n: Node) -> float:
        s, z = n.attrs["scale"], n.attrs["zero_point"]
        where = f"QDQ node {n.name!r}" + (f" (ONNX node {n.notes['onnx_node']!r})" if "onnx_node" in n.notes else "")
        if z != 0:
            raise GraphError(f"{where}: zero point {z} is not supported (VDLA is symmetric)")
        if not is_pow2(s):
            raise GraphError(
                f"{where}: scale {s} is not a power of two; VDLA's shift requantisation needs power-of-two scales"
            )
        return s

    for n in list(g.topo_order()):
        if n.op != "dequantize":
            continue
        s = check(n)
        src = n.inputs[0]
        q = prod.get(src)
        if src in g.consts:
            w = (g.consts[src].astype(np.float64) * s).astype(np.float32)
            cname = g.add_const(f"{src}.f", w)
            wscales[cname] = s
            g.replace_uses(n.name, cname)
        elif q is not None and q.op == "quantize":
            sq = check(q)
            if sq != s:
                raise GraphError(f"QDQ nodes {q.name!r} and {n.name!r} disagree on the scale ({sq} vs {s})")
            x = q.inputs[0]
            if x in g.consts:
                w = g.consts[x].astype(np.float64)
                wq = np.clip(np.rint(w / s), np.iinfo(q.attrs["dtype"]).min, np.iinfo(q.attrs["dtype"]).max)
                cname = g.add_const(f"{x}.qdq", (wq * s).astype(np.float32))
                wscales[cname] = s
                g.replace_uses(n.name, cname)
            else:
                scales[x] = s
                g.replace_uses(n.name, x)
        else:
            continue
        g.nodes.remove(n)
    return g.prune().infer_types(), scales, wscales


def qdq_to_int(graph: Graph, config: QConfig | None = None) -> Graph:
    """Import a QDQ graph (e.g. from :func:`.onnx_import.from_onnx`) into the int8 path."""
    g, scales, wscales = strip_qdq(graph)
    cfg = config or QConfig(skip_conv=(), skip_dense=False, materialize_scaled=True, require_weight_scale=True)
    return quantize_graph(g, scales, cfg, wscales)


# --------------------------------------------------------------------------- agreement


@dataclass(frozen=True)
class Agreement:
    """How well the int8 graph agrees with float32 on a fixed set."""

    samples: int
    #: Fraction of samples whose arg-max class agrees (None for non-classifier outputs).
    top1: float | None
    #: 10 log10(sum(ref^2) / sum((ref - q)^2)) over all samples, in dB.
    snr_db: float
    max_abs_err: float
    #: Distinct arg-max classes the float model predicts on the set (agreement is only
    #: meaningful when this is > 1).
    fp_classes: int | None

    def __str__(self) -> str:
        t = "n/a" if self.top1 is None else f"{100 * self.top1:.1f}%"
        return (
            f"{self.samples} samples: top-1 agreement {t}, SNR {self.snr_db:.1f} dB, "
            f"max |err| {self.max_abs_err:.4g}, float classes {self.fp_classes}"
        )


def agreement(reference: Graph, quantized: Graph, dataset: Sequence[Any], output: int = 0) -> Agreement:
    """Run both graphs on ``dataset`` and compare output ``output``."""
    refs, qs = [], []
    for x in dataset:
        refs.append(run(reference, x, check=False)[output].astype(np.float64))
        qs.append(run(quantized, x, check=False)[output].astype(np.float64))
    r, q = np.stack(refs), np.stack(qs)
    noise = float(((r - q) ** 2).sum())
    sig = float((r**2).sum())
    snr = float("inf") if noise == 0 else 10 * math.log10(sig / noise) if sig > 0 else float("-inf")
    top1 = classes = None
    if r.ndim == 3:  # samples x batch x classes
        ra, qa = r.argmax(-1), q.argmax(-1)
        top1 = float((ra == qa).mean())
        classes = len(np.unique(ra))
    return Agreement(len(dataset), top1, snr, float(np.abs(r - q).max()), classes)


def _snr_db(ref: np.ndarray, got: np.ndarray) -> float:
    noise = float(((ref - got) ** 2).sum())
    sig = float((ref**2).sum())
    return float("inf") if noise == 0 else 10 * math.log10(sig / noise) if sig > 0 else float("-inf")


def layer_snr(reference: Graph, quantized: Graph, x: Any) -> list[tuple[str, float, float]]:
    """(float value, scale, SNR in dB) of every int8 tensor of ``quantized`` (a graph from
    :func:`quantize_graph`) against the float value it stands for in ``reference`` (the
    float graph it was quantised from, simplified alike), on input ``x``, in graph order."""
    fenv = run(reference, x, return_all=True, check=False)
    qenv = run(quantized, x, return_all=True, check=False)
    out = []
    for n in quantized.topo_order():
        v = n.notes.get("quant_of")
        if v is None or v not in fenv or n.name not in qenv:
            continue
        ref = fenv[v].astype(np.float64)
        got = qenv[n.name].astype(np.float64) * float(n.notes["scale"])
        if ref.shape == got.shape:
            out.append((v, float(n.notes["scale"]), _snr_db(ref, got)))
    return out
