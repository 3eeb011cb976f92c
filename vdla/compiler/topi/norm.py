"""Normalisations over rows of a tensor: layer, instance and group normalisation and
log-softmax (two statistics per row, then an element-wise output), and local response
normalisation (a window over channels per element), with ONNX's semantics in float32.

A *row* is the set of elements one pair of statistics covers (the normalised axes of one
sample, one channel, one group, or the softmax axis). Each statistic is reduced in two
steps: ``parts`` partial results per row (partial ``p`` reduces elements ``p, p + parts,
p + 2 parts, ...``, tag ``norm_partial``), then the partials (tag ``norm_stat``). The second
statistic reads the first (a two-pass variance: the mean first, then the squared
deviations; the row max first, then the sum of exponentials). The output stage (tag
``norm_output``) says in its attrs which of its axes are normalised (``norm_inner``), and
whether its channel axis is split into (group, channel in group) (``norm_split``, the
channels per group, 0 when not): :func:`norm_stages` reads them back for a schedule. A GPU
runs one block per row, a thread per partial (a cross-thread reduction through shared
memory); a CPU one loop iteration per row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .. import te
from ..tir.nodes import Expr
from .util import const_shape, unravel

__all__ = ["NORM_TAG", "group_norm", "instance_norm", "layer_norm", "log_softmax", "lrn", "norm_stages"]

NORM_TAG = "norm_output"
PARTIAL_TAG = "norm_partial"
STAT_TAG = "norm_stat"
#: partials per row at most: the GPU's threads per row
MAX_PARTS = 256

Index = Callable[[Sequence[Expr], Expr], tuple[Expr, ...]]


def _c(v: float) -> Expr:
    return te.const(float(v), "float32")


def _row_reduce(rows: Sequence[int], n: int, parts: int, kind: str, fn: Callable[[Sequence[Expr], Expr], Expr],
                name: str) -> te.Tensor:
    """``kind`` (sum, max) over the ``n`` elements of each row (``fn(row index, k)``, k < n), as
    ``parts`` partials per row, then their reduction: shape ``rows``."""
    red = te.sum if kind == "sum" else te.max
    ident = _c(0.0) if kind == "sum" else te.min_value("float32")
    steps = -(-n // parts)
    j = te.reduce_axis((0, steps), name=f"{name}_j")

    def partial(*i: Expr) -> Expr:
        k = i[-1] + j * parts
        v = fn(i[:-1], k)
        return red(v if n % parts == 0 else te.if_then_else(k < n, v, ident), axis=j)

    pt = te.compute((*rows, parts), partial, name=f"{name}_partial", tag=PARTIAL_TAG)
    q = te.reduce_axis((0, parts), name=f"{name}_q")
    return te.compute(tuple(rows), lambda *r: red(pt[(*r, q)], axis=q), name=name, tag=STAT_TAG)


def _parts(n: int) -> int:
    return min(n, MAX_PARTS)


def _moments(x: te.Tensor, rows: Sequence[int], n: int, index: Index, name: str) -> tuple[te.Tensor, te.Tensor]:
    """The row sums and the row sums of squared deviations from the mean (two passes)."""
    p = _parts(n)
    inv = _c(1.0 / n)
    s1 = _row_reduce(rows, n, p, "sum", lambda r, k: x[index(r, k)], f"{name}_sum")

    def dev2(r: Sequence[Expr], k: Expr) -> Expr:
        d = x[index(r, k)] - s1[tuple(r)] * inv
        return d * d

    return s1, _row_reduce(rows, n, p, "sum", dev2, f"{name}_sqdev")


def _normalised(x: te.Tensor, s1: te.Tensor, s2: te.Tensor, n: int, eps: float, i: Sequence[Expr],
                row: Sequence[Expr]) -> Expr:
    inv = _c(1.0 / n)
    r = tuple(row)
    return (x[tuple(i)] - s1[r] * inv) / te.sqrt(s2[r] * inv + _c(eps))


def _attrs(inner: Sequence[int], split: int = 0) -> dict[str, Any]:
    return {"norm_inner": tuple(inner), "norm_split": split}


def _read(t: te.Tensor | None, shape: Sequence[int], idx: Sequence[Expr]) -> Expr | None:
    """``t`` (numpy-broadcast to ``shape``, trailing-aligned) at index ``idx`` of ``shape``."""
    if t is None:
        return None
    ts = const_shape(t)
    off = len(shape) - len(ts)
    return t[tuple(te.const(0, "int32") if d == 1 and shape[off + k] != 1 else idx[off + k] for k, d in enumerate(ts))]


def layer_norm(x: te.Tensor, scale: te.Tensor, bias: te.Tensor | None = None, axis: int = -1,
               epsilon: float = 1e-5) -> te.Tensor:
    """ONNX LayerNormalization: each sample normalised over the axes from ``axis`` on, then
    ``* scale + bias`` (both broadcast to those axes)."""
    shape = const_shape(x)
    a = axis % len(shape)
    rows, tail = shape[:a] or (1,), shape[a:]
    n = math.prod(tail)

    def index(r: Sequence[Expr], k: Expr) -> tuple[Expr, ...]:
        return (*(r if a else ()), *unravel(k, tail))

    s1, s2 = _moments(x, rows, n, index, "layer_norm")

    def out(*i: Expr) -> Expr:
        row = i[:a] if a else (te.const(0, "int32"),)
        y = _normalised(x, s1, s2, n, epsilon, i, row) * _read(scale, tail, i[a:])
        return y if bias is None else y + _read(bias, tail, i[a:])

    return te.compute(shape, out, name="layer_norm", tag=NORM_TAG, attrs=_attrs(range(a, len(shape))))


def group_norm(x: te.Tensor, scale: te.Tensor, bias: te.Tensor, groups: int, epsilon: float = 1e-5) -> te.Tensor:
    """ONNX GroupNormalization (opset 21): ``x`` ``[N, C, ...]`` normalised over each group of
    ``C / groups`` channels and the spatial axes, then ``* scale[c] + bias[c]`` per channel.
    ``groups = C`` is instance normalisation."""
    shape = const_shape(x)
    c = shape[1]
    if c % groups:
        raise ValueError(f"group_norm: {c} channels do not split into {groups} groups")
    cg = c // groups
    inner = (cg, *shape[2:])
    n = math.prod(inner)

    def index(r: Sequence[Expr], k: Expr) -> tuple[Expr, ...]:
        ci, *sp = unravel(k, inner)
        return (r[0], r[1] * cg + ci, *sp)

    s1, s2 = _moments(x, (shape[0], groups), n, index, "group_norm")

    def out(*i: Expr) -> Expr:
        row = (i[0], i[1] if cg == 1 else te.floordiv(i[1], cg))
        return _normalised(x, s1, s2, n, epsilon, i, row) * scale[i[1]] + bias[i[1]]

    # instance norm: rows (n, c); one group: rows n; else axis 1 splits into (group, channel in group)
    split = cg if 1 < cg < c else 0
    inner_axes = range(2 if cg == 1 else 1, len(shape))
    return te.compute(shape, out, name="group_norm", tag=NORM_TAG, attrs=_attrs(inner_axes, split))


def instance_norm(x: te.Tensor, scale: te.Tensor, bias: te.Tensor, epsilon: float = 1e-5) -> te.Tensor:
    """ONNX InstanceNormalization: each (sample, channel) normalised over the spatial axes."""
    return group_norm(x, scale, bias, const_shape(x)[1], epsilon)


def log_softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    """``x - max - log(sum(exp(x - max)))`` along ``axis``."""
    shape = const_shape(x)
    ax = axis % len(shape)
    n = shape[ax]
    rows = tuple(s for d, s in enumerate(shape) if d != ax) or (1,)
    p = _parts(n)

    def index(r: Sequence[Expr], k: Expr) -> tuple[Expr, ...]:
        r = list(r) if len(shape) > 1 else []
        return (*r[:ax], k, *r[ax:])

    mx = _row_reduce(rows, n, p, "max", lambda r, k: x[index(r, k)], "log_softmax_max")
    sm = _row_reduce(rows, n, p, "sum", lambda r, k: te.exp(x[index(r, k)] - mx[tuple(r)]), "log_softmax_sum")

    def out(*i: Expr) -> Expr:
        row = tuple(v for d, v in enumerate(i) if d != ax) or (te.const(0, "int32"),)
        return x[i] - mx[row] - te.log(sm[row])

    return te.compute(shape, out, name="log_softmax", tag=NORM_TAG, attrs=_attrs((ax,)))


def lrn(x: te.Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, bias: float = 1.0) -> te.Tensor:
    """ONNX LRN: ``x / (bias + alpha / size * sum of x^2 over a window of size channels)^beta``
    (the window from ``floor((size - 1) / 2)`` channels before to ``ceil`` after). The window's
    sum is a reduction per element (tag ``reduce``: each target's ``schedule_reduce``)."""
    from .reduction import REDUCE_TAG
    from .util import INJECTIVE

    shape = const_shape(x)
    c = shape[1]
    lo = (size - 1) // 2
    k = te.reduce_axis((0, size), name="lrn_k")

    def sq(*i: Expr) -> Expr:
        ch = i[1] - lo + k
        v = x[(i[0], ch, *i[2:])]
        return te.sum(te.if_then_else(te.all(ch >= 0, ch < c), v * v, _c(0.0)), axis=k)

    s = te.compute(shape, sq, name="lrn_sqsum", tag=REDUCE_TAG)
    return te.compute(shape, lambda *i: x[i] / te.power(_c(bias) + _c(alpha / size) * s[i], _c(beta)), name="lrn",
                      tag=INJECTIVE)


def norm_stages(t: te.Tensor) -> tuple[tuple[int, ...], int, list[tuple[te.ComputeOp, te.ComputeOp]]]:
    """For a schedule: the (normalised axes, channels per group split off axis 1 or 0, [(partial
    stage, statistic stage) of the first statistic, then of the second]) behind a normalisation's
    output ``t`` (the second statistic's partials read the first statistic)."""
    op = t.op
    if not isinstance(op, te.ComputeOp) or op.tag != NORM_TAG:
        raise ValueError(f"schedule_norm: {t.name!r} is not a normalisation output")
    stats = [u.op for u in op.input_tensors() if isinstance(u.op, te.ComputeOp) and u.op.tag == STAT_TAG]
    pairs = []
    for st in stats:
        pt = st.input_tensors()[0].op
        assert isinstance(pt, te.ComputeOp) and pt.tag == PARTIAL_TAG
        pairs.append((pt, st))
    # the second statistic's partials read the first
    pairs.sort(key=lambda ps: any(u.op.tag == STAT_TAG for u in ps[0].input_tensors()))
    return tuple(op.attrs["norm_inner"]), int(op.attrs["norm_split"]), pairs
