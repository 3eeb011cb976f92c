"""What the VDLA templates share: the ALU tail (:class:`Tail`, applied by the epilogue after
the int32 accumulation), the schedule knobs (:class:`Knobs`), and placing loads, GEMM and
the tail in a schedule.

The tail runs on the tensor ALU, in this order::

    t = conv + bias;  t = t >> shift;  t = t + residual;  t = clip(t, lo, hi);  out = int8(t)

A caller may build the tail as more than one ALU stage (the graph strategy's hard-swish: a gate
computed on a copy of the accumulator, then multiplied with it); the schedules place every
``vdla_alu`` stage behind the output on the tile and count a tile of accumulator for each
stage after the first.

Knobs: output tile sizes in blocks/rows/columns, the input-channel chunk loaded at a
time, and virtual threads over output channels or rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .... import te
from ....schedule.primitives import Schedule, Stage
from ....tir.nodes import Expr
from ....topi.util import const_shape
from ..env import Env, VDLAError, shift_right

__all__ = ["Tail", "Knobs"]


@dataclass(frozen=True)
class Tail:
    """The ALU tail: ``clip(((acc + bias) >> shift) + residual, lo, hi)`` (each part optional)."""

    bias: bool = False
    shift: int = 0
    residual: bool = False
    clip: tuple[int, int] | None = (-128, 127)


@dataclass(frozen=True)
class Knobs:
    """Schedule knobs; None picks a value that fits the buffers."""

    tile_b: int = 1  # batch blocks per tile
    tile_co: int | None = None  # output-channel blocks per tile
    tile_h: int | None = None  # output rows per tile
    tile_w: int | None = None  # output columns per tile
    tile_ci: int | None = None  # input-channel blocks per load
    oc_nthread: int = 1  # virtual threads over output-channel tiles
    h_nthread: int = 1  # virtual threads over row tiles
    vthreads: int = 1  # >1: that many threads over channels or rows, whichever the model prefers
    tile_g: int | None = None  # groups per tile (depthwise: one channel block per group; None picks)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def replace(self, **kw: Any) -> Knobs:
        return replace(self, **kw)


def _blocks_match(env: Env, b: int, ci: int, co: int, kci: int) -> bool:
    """Whether packed operands' inner blocks are the GEMM's: data ``b x ci``, weights ``co x kci``."""
    c = env.config
    return (b, ci, co, kci) == (c.batch, c.block_in, c.block_out, c.block_in)


def _check_tail_inputs(op: str, tail: Tail, bias: te.Tensor | None, residual: te.Tensor | None) -> None:
    if (bias is not None) != tail.bias or (residual is not None) != tail.residual:
        raise VDLAError(f"{op}: pass bias/residual tensors exactly when the tail uses them")


def _conv_reduce_axes(cb: int, kh: int, kw: int, ci: int) -> list[te.IterVar]:
    """A conv's reduction, in the order the schedules split it: input-channel blocks (loaded a
    chunk at a time), kernel rows and columns, then the channel within a block (the GEMM's)."""
    return [te.reduce_axis((0, cb), name="ric"), te.reduce_axis((0, kh), name="rky"),
            te.reduce_axis((0, kw), name="rkx"), te.reduce_axis((0, ci), name="rci")]


def _epilogue(env: Env, acc: te.Tensor, tail: Tail, bias: te.Tensor | None, residual: te.Tensor | None,
              name: str, packed_index: Callable[[tuple[Expr, ...]], tuple[Expr, ...]] | None = None) -> te.Tensor:
    """The ALU tail on the accumulator, then the int8 output; returns the output.

    ``packed_index`` maps an output index to the index of the packed ``(N/b, O/c, ..., b, c)``
    output that the bias ``(O/c, b, c)`` and the residual are laid out in, for outputs computed
    in another shape (grouped conv's separate group axis); by default they are the same."""
    adt = env.acc_dtype
    shape = const_shape(acc)
    at = packed_index or (lambda i: i)

    def f(*i: Expr) -> Expr:
        t = acc[i]
        if bias is not None:
            p = at(i)
            t = t + bias[p[1], p[-2], p[-1]]
        if tail.shift:
            t = shift_right(t, tail.shift)
        if residual is not None:
            t = t + residual[at(i)].astype(adt)
        if tail.clip is not None:
            t = te.min(te.max(t, tail.clip[0]), tail.clip[1])
        return t

    alu = te.compute(shape, f, name=f"{name}_alu", tag="vdla_alu")
    return te.compute(shape, lambda *i: alu[i].astype(env.out_dtype), name=f"{name}_out", tag="vdla_out")


def _is_alu(op: Any) -> bool:
    return "vdla_alu" in getattr(op, "tag", "").split(",")


def _alu_ops(alu: te.ComputeOp) -> list[te.ComputeOp]:
    """The ALU stages behind the last one, ``alu`` included, producers first. A tail is one
    stage, or more when part of it works on a copy of the accumulator (hard-swish's gate, then
    multiplied with the accumulator): each stage is an element-wise ``vdla_alu`` compute."""
    seen: list[te.ComputeOp] = []
    todo = [alu]
    while todo:
        op = todo.pop()
        if any(op is x for x in seen):
            continue
        seen.append(op)
        todo += [t.op for t in op.input_tensors() if _is_alu(t.op)]
    ordered: list[te.ComputeOp] = []
    while len(ordered) < len(seen):  # topological: a stage after the ALU stages it reads
        for op in seen:
            if not any(op is x for x in ordered) and all(
                any(t.op is x for x in ordered) for t in op.input_tensors() if _is_alu(t.op)
            ):
                ordered.append(op)
    return ordered


def _stages(out: te.Tensor) -> tuple[te.ComputeOp, te.ComputeOp, list[te.Tensor]]:
    """(accumulation, last ALU stage, the tail's other inputs: bias, shifts and/or residual)
    behind an output."""
    alu = out.op.input_tensors()[0].op
    alus = _alu_ops(alu)
    acc = alus[0].input_tensors()[0].op
    extra: list[te.Tensor] = []
    for a in alus:
        extra += [t for t in a.input_tensors()
                  if t.op is not acc and not _is_alu(t.op) and not any(t is e for e in extra)]
    return acc, alu, extra


def _tail_inputs(extra: Sequence[te.Tensor], out: te.Tensor | None = None) -> tuple[int, int]:
    """(per-channel vectors, output-sized tiles besides the accumulator's): the bias and the
    per-channel shift amounts are the 3-D tail inputs (``(O/c, b, c)``, one accumulator row per
    block each); the residual has the output's layout, which has more dimensions; each ALU
    stage of ``out`` after the first may need a tile of its own (a copy of the accumulator)."""
    scratch = len(_alu_ops(out.op.input_tensors()[0].op)) - 1 if out is not None else 0
    return sum(len(t.shape) == 3 for t in extra), int(any(len(t.shape) != 3 for t in extra)) + scratch


def _buffer_stages(s: Schedule, env: Env, acc_op: te.ComputeOp, alu_op: te.ComputeOp, data: te.Tensor,
                   weight: te.Tensor, extra: Sequence[te.Tensor]) -> tuple[te.Tensor, te.Tensor, list[te.Tensor]]:
    """Put the accumulation and its tail in the accumulator and read the operands into their
    on-chip buffers; returns (data, weight, tail inputs) as the buffers hold them."""
    s[acc_op].set_scope(env.acc_scope)
    alus = _alu_ops(alu_op)
    for a in alus:
        s[a].set_scope(env.acc_scope)
    if isinstance(data.op, te.ComputeOp) and "pad" in data.op.tag.split(","):
        # the padding stage itself lives in the input buffer: its load is a DMA that fills the pad
        s[data.op].set_scope(env.inp_scope)
        cdata = data
    else:
        cdata = s.cache_read(data, env.inp_scope, [s[acc_op]])
    cweight = s.cache_read(weight, env.wgt_scope, [s[acc_op]])
    cextra = [s.cache_read(t, env.acc_scope, [s[a] for a in alus if any(t is x for x in a.input_tensors())])
              for t in extra]
    return cdata, cweight, cextra


def _place_tail(s: Schedule, env: Env, so: Stage, store_at: Any, store_rows: Any, acc_op: te.ComputeOp,
                alu_op: te.ComputeOp, cextra: Sequence[te.Tensor]) -> None:
    """Store the output tile with a DMA from ``store_rows`` inward; compute the accumulation, the
    tail's loaded inputs and the tail (on the ALU) per tile at ``store_at``."""
    so.pragma(store_rows, env.dma_copy)
    alus = _alu_ops(alu_op)
    for t in [acc_op.output(0), *(a.output(0) for a in alus), *cextra]:
        s[t].compute_at(so, store_at)
    for t in cextra:
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    for a in alus:
        sa = s[a]
        sa.pragma(sa.op.axis[0], env.alu)


def _place_loads_and_gemm(s: Schedule, env: Env, sc: Stage, chunk: Any, loads: Sequence[te.Tensor],
                          lane: Any) -> None:
    """Load the operand buffers (DMA) once per input-channel ``chunk``; the GEMM intrinsic from
    the batch ``lane`` inward."""
    for t in loads:
        s[t].compute_at(sc, chunk)
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    sc.tensorize(lane, env.gemm)


def _conv_stride(acc_op: te.ComputeOp) -> tuple[int, int]:
    """conv2d_packed's strides, read back from its data index ``y * sh + ky``."""
    sh = sw = 1
    body = acc_op.body
    idx = body.source.a.value.indices if hasattr(body.source.a, "value") else None
    if idx is not None:
        from ....tir.arith import linear

        ly, lx = linear(idx[2]), linear(idx[3])
        yv, xv = acc_op.axis[2].var, acc_op.axis[3].var
        sh = next((c for a, c in ly.terms.values() if a is yv), 1)
        sw = next((c for a, c in lx.terms.values() if a is xv), 1)
    return sh, sw
