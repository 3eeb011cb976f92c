"""Helpers shared by the operator library: constant shapes, padding, tags and inlining.

Tags classify operations the way TVM's topi does: ``injective`` stages (element-wise,
broadcast, pad) can be inlined into their consumers; complex operators carry their own
tag (``conv2d_NCHWc``, ``dense`` ...) so a schedule can find them behind fused tails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import te
from ..schedule.primitives import Schedule
from ..tir.nodes import Expr, IntImm, convert

INJECTIVE = "injective"


def const_int(e: Any, what: str = "size") -> int:
    """The Python int of a constant size (raises for symbolic sizes)."""
    e = convert(e)
    if not isinstance(e, IntImm):
        raise ValueError(f"{what} must be a constant, got {e}")
    return e.value


def const_shape(t: te.Tensor) -> tuple[int, ...]:
    return tuple(const_int(s, f"shape of {t.name!r}") for s in t.shape)


def conv_out(size: int, k: int, stride: int, pad_lo: int, pad_hi: int, dilation: int = 1) -> int:
    """Output extent of a convolution or pooling window along one axis: the one formula every
    operator, template and shape inference uses (<= 0 when the input is too small: callers
    say why in their own terms)."""
    return (size + pad_lo + pad_hi - ((k - 1) * dilation + 1)) // stride + 1


def pair(v: int | Sequence[int], what: str) -> tuple[int, int]:
    if isinstance(v, int):
        return v, v
    v = tuple(v)
    if len(v) != 2:
        raise ValueError(f"{what}: expected an int or a pair, got {v!r}")
    return int(v[0]), int(v[1])


def padding4(padding: int | Sequence[int]) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from an int, (h, w) or (top, left, bottom, right)."""
    if isinstance(padding, int):
        return padding, padding, padding, padding
    p = tuple(int(x) for x in padding)
    if len(p) == 2:
        return p[0], p[1], p[0], p[1]
    if len(p) == 4:
        return p  # type: ignore[return-value]
    raise ValueError(f"padding must be an int, (h, w) or (top, left, bottom, right), got {padding!r}")


def slice_range(begin: int, end: int, step: int, extent: int) -> range:
    """The indices a graph ``slice`` keeps along an axis of ``extent``: Python's slice, with an end
    of -1 under a negative step meaning "through index 0" (as the importer normalises it)."""
    return range(*slice(begin, None if (step < 0 and end < 0) else end, step).indices(extent))


def ravel(idx: Sequence[Expr], dims: Sequence[int]) -> Expr:
    """The flat position of ``idx`` in a C-ordered array of shape ``dims``."""
    out: Expr = convert(0)
    for k, (i, d) in enumerate(zip(idx, dims)):
        out = i if k == 0 else out * d + i
    return out


def unravel(p: Expr, dims: Sequence[int]) -> list[Expr]:
    """The indices of flat (row-major) position ``p`` in an array of shape ``dims`` (the outermost
    not reduced modulo its extent: ``p`` is in range)."""
    out: list[Expr] = []
    for k in range(len(dims) - 1, -1, -1):
        d = dims[k]
        if k == 0:
            out.append(p)
        else:
            out.append(te.floormod(p, d))
            p = te.floordiv(p, d)
    return list(reversed(out))


def is_injective(op: Any) -> bool:
    return isinstance(op, te.ComputeOp) and not op.reduce_axis and INJECTIVE in op.tag.split(",")


def pad(
    data: te.Tensor,
    before: Sequence[int],
    after: Sequence[int] | None = None,
    value: float | None = 0.0,
    name: str = "pad",
) -> te.Tensor:
    """Zero- (or ``value``-) padding; returns ``data`` itself when nothing is padded."""
    after = list(before) if after is None else list(after)
    if len(before) != data.ndim or len(after) != data.ndim:
        raise ValueError(f"pad: {data.name!r} has {data.ndim} dimensions; give that many pad sizes")
    if not any(before) and not any(after):
        return data
    shape = [convert(s) + b + a for s, b, a in zip(data.shape, before, after, strict=True)]
    fill = te.min_value(data.dtype) if value is None else te.const(value, data.dtype)

    def fcompute(*idx: Expr) -> Expr:
        conds = []
        src = []
        for d, (i, b) in enumerate(zip(idx, before, strict=True)):
            if b or after[d]:
                conds.append(i >= b)
                conds.append(i < convert(data.shape[d]) + b)
            src.append(i - b if b else i)
        return te.if_then_else(te.all(*conds), data[tuple(src)], fill)

    return te.compute(shape, fcompute, name=name, tag=f"{INJECTIVE},pad")


def as_list(outs: te.Tensor | Sequence[te.Tensor]) -> list[te.Tensor]:
    return [outs] if isinstance(outs, te.Tensor) else list(outs)


def traverse_inline(s: Schedule, outs: Sequence[te.Tensor], callback: Callable[[te.ComputeOp], None]) -> None:
    """Inline every non-output injective stage reachable from ``outs``; call ``callback`` on every
    compute op (outputs first, then producers)."""
    out_ops = {t.op for t in outs}
    seen: set[Any] = set()

    def visit(op: Any) -> None:
        if op in seen or not isinstance(op, te.ComputeOp):
            return
        seen.add(op)
        if is_injective(op) and op not in out_ops:
            s[op].compute_inline()
        callback(op)
        for t in op.input_tensors():
            visit(t.op)

    for t in outs:
        visit(t.op)


def find_tagged(outs: Sequence[te.Tensor], tag: str) -> te.ComputeOp:
    """The one compute op tagged ``tag`` among the producers of ``outs`` (a schedule's anchor
    behind its fused tails); a clear error when there is none or more than one."""
    found: list[te.ComputeOp] = []
    todo = [t.op for t in outs]
    seen: set[Any] = set()
    while todo:
        op = todo.pop()
        if op in seen or not isinstance(op, te.ComputeOp):
            continue
        seen.add(op)
        if op.tag == tag:
            found.append(op)
        todo.extend(t.op for t in op.input_tensors())
    if len(found) != 1:
        raise ValueError(f"schedule: expected one {tag!r} operation among the producers of "
                         f"{[t.name for t in outs]}, found {len(found)}")
    return found[0]


def vector_split(extent: int, lanes: int = 16) -> int:
    """A vector width that divides ``extent`` (16, 8, 4, ...) or ``lanes`` if none does."""
    for w in (lanes, 8, 4, 2):
        if w <= lanes and extent % w == 0:
            return w
    return lanes


def get_const_tuple(shape: Sequence[Any]) -> tuple[int, ...]:
    """The constant sizes of a shape (TVM's ``topi.utils.get_const_tuple``)."""
    return tuple(const_int(s) for s in shape)
