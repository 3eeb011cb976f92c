"""CPU schedules of the 2-D convolutions (NCHW, NCHW[x]c as TVM's x86 schedules, transposed; depthwise is in :mod:`.depthwise`).

The declarations are in :mod:`vdla.compiler.topi.conv2d`; each ``schedule_*`` takes the output
tensor(s) and returns a :class:`~vdla.compiler.schedule.primitives.Schedule` for ``vdla.build(..., "llvm")``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .... import te
from ....autotvm.dispatch import current_config, query
from ....autotvm.space import ConfigSpace
from ....schedule.primitives import Schedule, Stage
from ....topi.util import as_list, const_shape, find_tagged, traverse_inline, vector_split


def _tail(s: Schedule, outs: Sequence[te.Tensor], conv: te.ComputeOp) -> tuple[Stage, Stage | None]:
    """(the stage writing the result, the accumulator stage) with injective tails inlined."""
    traverse_inline(s, outs, lambda op: None)
    if conv in {t.op for t in outs}:
        return s[conv], None
    if len(outs) != 1:
        raise ValueError("schedule: a fused conv2d tail must have exactly one output")
    return s[outs[0]], s[conv]


def _inline_pad(s: Schedule, conv: te.ComputeOp) -> None:
    for t in conv.input_tensors():
        if isinstance(t.op, te.ComputeOp) and "pad" in t.op.tag.split(","):
            s[t.op].compute_inline()


def _blocked_pad_at_root(s: Schedule, conv: te.ComputeOp, parallel: bool = True) -> None:
    """An NCHW[x]c convolution's padded input computed once, before it (TVM's x86 schedules): the
    block vectorised, ``(n, c.outer, rows)`` in parallel."""
    for t in conv.input_tensors():
        if isinstance(t.op, te.ComputeOp) and "pad" in t.op.tag.split(","):
            ps = s[t.op]
            ps.compute_root()
            pn, pc, py, _, pcb = ps.op.axis
            ps.vectorize(pcb)
            if parallel:
                ps.parallel(ps.fuse(pn, pc, py))


def schedule_conv2d_nchw(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:
    """Default CPU schedule: output rows vectorised along ``x``, 4 output channels unrolled,
    ``(n, f.outer)`` in parallel, padding inlined."""
    return _schedule_nchw(as_list(outs), "conv2d_nchw")


def schedule_group_conv2d_nchw(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:
    """Grouped convolution (:func:`~vdla.compiler.topi.group_conv2d_nchw`): the NCHW schedule, each
    unrolled output channel reading its own group's input channels."""
    return _schedule_nchw(as_list(outs), "group_conv2d_nchw")


def _schedule_nchw(outs: list[te.Tensor], tag: str) -> Schedule:
    s = te.create_schedule([t.op for t in outs])
    conv = find_tagged(outs, tag)
    out, acc = _tail(s, outs, conv)
    _inline_pad(s, conv)
    ow = const_shape(conv.output(0))[3]
    vw, fb = _nchw_knobs(conv, ow, min(16, ow), 4)
    if acc is None:
        st = out
        n, f, y, x = st.op.axis
        rc, ry, rx = st.op.reduce_axis
        fo, fi = st.split(f, factor=fb)
        xo, xi = st.split(x, factor=vw)
        st.reorder(n, fo, y, xo, rc, ry, rx, fi, xi)
        st.unroll(fi)
        st.vectorize(xi)
        st.parallel(st.fuse(n, fo))
        return s
    n, f, y, x = out.op.axis
    fo, fi = out.split(f, factor=fb)
    xo, xi = out.split(x, factor=vw)
    out.reorder(n, fo, y, xo, fi, xi)
    out.vectorize(xi)
    out.parallel(out.fuse(n, fo))
    acc.compute_at(out, xo)
    _, fa, _, xa = acc.op.axis
    rc, ry, rx = acc.op.reduce_axis
    acc.reorder(rc, ry, rx, fa, xa)
    acc.vectorize(xa)
    return s


def _nchw_knobs(conv: te.ComputeOp, ow: int, vw: int, fb: int) -> tuple[int, int]:
    """(vector width along x, output channels unrolled): an autotvm template's point, the best
    record of this workload under ``apply_history_best``, or the hand pick ``(vw, fb)``."""
    cfg = current_config()
    if cfg is not None:
        cfg.define_knob("tile_x", sorted({v for v in (4, 8, 16, 32) if v <= ow} | {vw}))
        cfg.define_knob("tile_f", [1, 2, 4, 8])
        cfg.workload = conv.attrs.get("workload")
        if cfg.is_fallback:
            cfg.set("tile_x", vw)
            cfg.set("tile_f", fb)
        elif not isinstance(cfg, ConfigSpace):
            return int(cfg["tile_x"].val), int(cfg["tile_f"].val)
        return vw, fb
    tuned = query("llvm", conv.attrs.get("workload"))
    if tuned is not None:
        return int(tuned["tile_x"].val), int(tuned["tile_f"].val)
    return vw, fb


@dataclass
class NCHWcConfig:
    """Knobs of :func:`schedule_conv2d_NCHWc` (None: chosen from the shape)."""

    reg_n: int | None = None  # output columns per register tile (accumulators = reg_n vectors)
    unroll_kw: bool = False
    parallel: bool = True
    #: output rows per iteration of the parallel loop, which fuses (n, oc-chunk, rows // tile_oh):
    #: 1 gives the most, smallest tasks; the output height runs each (n, oc-chunk) as one task
    tile_oh: int = 1
    #: output rows of the register tile (``rows x reg_n`` columns x one ``ob`` block of accumulators;
    #: each weight vector is reused ``rows x reg_n`` times). Above 1 the parallel loop takes one
    #: block of ``rows`` rows per task (``tile_oh`` is not used)
    rows: int = 1


def _reg_n(ow: int, cap: int = 14) -> int:
    for r in range(min(cap, ow), 0, -1):
        if ow % r == 0 and (r >= 4 or r == ow):
            return r
    return min(cap, ow)


def _host_registers(lanes: int | None, regs: int | None) -> tuple[int, int]:
    if lanes is None or regs is None:
        from ..jit import vector_registers

        hl, hr = vector_registers()
        lanes, regs = lanes or hl, regs or hr
    return lanes, regs


def channel_block(channels: int, lanes: int | None = None) -> int | None:
    """The block of an input's ``channels`` channels when its producer gives none: one vector of
    ``lanes`` (the host's by default), else two, else half of one; None when no such block
    divides the channels."""
    lanes, _ = _host_registers(lanes, 16)
    for b in (lanes, 2 * lanes, lanes // 2):
        if b >= 4 and channels % b == 0:
            return b
    return None


def register_tile(oh: int, ow: int, ob: int, lanes: int | None = None, regs: int | None = None) -> tuple[int, int]:
    """(rows, columns) of output pixels in the register tile of ``ob`` output channels: the most
    accumulators (``rows x columns x ob / lanes`` vectors) that fit in half the vector registers, the
    rest left to the weights, the broadcast input and LLVM (on AVX2 a tile of 16 accumulators in
    16 registers spilled, and ran ResNet-18's 3x3 layers at 60 % of the speed of 8); then the
    fewest loads per FMA (each weight vector reused by every pixel of the tile); then a tile that
    divides the row; then one row. Rows divide the output height; columns need not divide the
    width: the last tile of a row is ragged, its guards split off by loop partitioning
    (:mod:`vdla.compiler.tir.passes.partition`). On this project's Zen 3 machine (AVX2, 2 threads)
    a ragged 16-channel x 4-column tile ran ResNet's 7-column layers at 58-80 % of peak where the
    8-channel x 7-column one ran at 47-64 %, and SqueezeNet's 55-, 27- and 13-column layers at
    72-89 % (the dividing tiles: 42-76 %). Only where no tile reaches a quarter of the registers,
    the whole row when it fits them."""
    lanes, regs = _host_registers(lanes, regs)
    v = -(-ob // lanes)
    cap = max(1, regs // 2)

    def key(t: tuple[int, int]) -> tuple[int, float, bool, int]:
        px = t[0] * t[1]
        return px * v, -(v + px) / (v * px), ow % t[1] == 0, -t[0]

    tiles = [(rows, cols) for rows in (1, 2, 4) for cols in range(1, ow + 1)
             if oh % rows == 0 and rows * cols * v <= cap]
    best = max(tiles, key=key, default=(1, 1))
    if best[0] * best[1] * v < cap // 2 and ow * v <= regs - 2:
        # a row too short for a tile of a quarter of the registers: the whole row, as one tile
        best = (1, ow)
    return best


def conv_block(oc: int, oh: int, ow: int, lanes: int | None = None, regs: int | None = None) -> int | None:
    """The output block of a conv of ``oc`` channels and an ``oh x ow`` output by the cost rule: of
    one or two vectors (or half of one), the block whose register tile (:func:`register_tile`)
    holds the most accumulators, then the fewest loads per FMA (the wider block: a weight vector
    more, broadcast inputs fewer); None when none divides ``oc``."""
    lanes, regs = _host_registers(lanes, regs)

    cap = max(1, regs // 2)

    def score(ob: int) -> tuple[int, float]:
        v = -(-ob // lanes)
        rows, cols = register_tile(oh, ow, ob, lanes, regs)
        px = rows * cols
        acc = px * v  # a whole-row tile beyond half the registers counts what it spills against it
        return acc if acc <= cap else 2 * cap - acc, -(v + px) / (v * px)

    blocks = [b for b in (lanes, 2 * lanes, lanes // 2) if b >= 4 and oc % b == 0]
    return max(blocks, key=score, default=None)


def register_tile_cap(ob: int) -> int:
    """The most output columns of ``ob`` channels whose accumulators fit the host's vector
    registers, two kept for the weights and the broadcast input (the depthwise schedule's tile:
    14 with AVX-512 and 16-channel blocks; 7 with AVX2 and 8-channel ones)."""
    lanes, regs = _host_registers(None, None)
    return max(1, min(14, (regs - 2) // max(1, -(-ob // lanes))))


def _tuned(c: Any) -> NCHWcConfig:
    """The schedule's knobs from a template point or a tuned record."""
    return NCHWcConfig(reg_n=c["tile_ow"].size[-1], unroll_kw=c["unroll_kw"].val, tile_oh=c["tile_oh"].size[-1],
                       rows=int(c["tile_rows"].val))


def schedule_conv2d_NCHWc(  # noqa: N802
    outs: te.Tensor | Sequence[te.Tensor], cfg: NCHWcConfig | None = None
) -> Schedule:
    """TVM's x86 NCHWc schedule: a register tile of ``rows x reg_n`` output pixels x one ``ob``
    block accumulated in a local cache over (c.outer, ky, kx, c.inner); one parallel loop,
    the outermost, over (n, output channel block, blocks of ``tile_oh`` rows); padding
    computed once at root (a parallel loop of its own before it, vectorised), as TVM does."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    conv = find_tagged(outs, "conv2d_NCHWc")
    out, acc = _tail(s, outs, conv)
    ct = conv.output(0)
    _, _, oh, ow, ob = const_shape(ct)
    tcfg = current_config()  # an autotvm template's config: its knobs replace the hand pick
    if tcfg is not None:
        tcfg.define_split("tile_ow", ow, num_outputs=2, filter=lambda e: e.size[-1] <= 32)
        # the parallel granularity: rows per task, from one row to the whole height
        tcfg.define_split("tile_oh", oh, num_outputs=2, filter=lambda e: e.size[-1] in (1, 2, 4, 8, oh))
        tcfg.define_knob("unroll_kw", [False, True])
        # rows of the register tile (added after the first logs: their records had one row)
        tcfg.define_knob("tile_rows", [r for r in (1, 2, 4) if oh % r == 0], absent=1)
        if not tcfg.is_fallback and not isinstance(tcfg, ConfigSpace):
            cfg = _tuned(tcfg)
    elif tcfg is None and cfg is None:  # a tuned record of this workload (its blocks must be these)
        tuned = query("llvm", conv.attrs.get("workload"))
        if tuned is not None and (tuned["tile_ic"].size[-1], tuned["tile_oc"].size[-1]) == (
                next(const_shape(t)[4] for t in conv.input_tensors() if len(t.shape) == 6), ob):  # the kernel's cb
            cfg = _tuned(tuned)
    if cfg is None:  # the hand pick: the cost rule's register tile
        rows, cols = register_tile(oh, ow, ob)
        cfg = NCHWcConfig(reg_n=cols, rows=rows)
    reg_n = cfg.reg_n or register_tile(oh, ow, ob)[1]
    if oh % cfg.tile_oh:
        raise ValueError(f"schedule_conv2d_NCHWc: tile_oh={cfg.tile_oh} does not divide the output height {oh}")
    if tcfg is not None and tcfg.is_fallback:
        tcfg.set("tile_ow", [-(-ow // reg_n), reg_n])
        tcfg.set("tile_oh", [oh // cfg.tile_oh, cfg.tile_oh])
        tcfg.set("unroll_kw", cfg.unroll_kw)
        tcfg.set("tile_rows", cfg.rows)
    if acc is None:
        acc_t = s.cache_write(ct, "local")
        acc = s[acc_t]
        out = s[conv] if conv in s.stage_map else s[ct]
    n, f, y, x, fb = out.op.axis
    xo, xi = out.split(x, factor=reg_n)
    # one parallel loop, outermost: (n, oc-chunk, row blocks) fused; the rows of a block run inside
    if cfg.rows > 1:
        if oh % cfg.rows:
            raise ValueError(f"schedule_conv2d_NCHWc: rows={cfg.rows} does not divide the output height {oh}")
        yo, yr = out.split(y, factor=cfg.rows)
        out.reorder(n, f, yo, xo, yr, xi, fb)
        par = out.fuse(n, f, yo)
        out.unroll(yr)
    elif cfg.tile_oh == 1:
        out.reorder(n, f, y, xo, xi, fb)
        par = out.fuse(n, f, y)
    elif cfg.tile_oh == oh:
        out.reorder(n, f, y, xo, xi, fb)
        par = out.fuse(n, f)
    else:
        yo, yi = out.split(y, factor=cfg.tile_oh)
        out.reorder(n, f, yo, yi, xo, xi, fb)
        par = out.fuse(n, f, yo)
    if cfg.parallel:
        out.parallel(par)
    out.vectorize(fb)
    out.unroll(xi)
    acc.compute_at(out, xo)
    _, _, ya, xa, fa = acc.op.axis
    rco, ry, rx, rci = acc.op.reduce_axis
    acc.reorder(rco, ry, rx, rci, ya, xa, fa)
    acc.vectorize(fa)
    acc.unroll(xa)
    acc.unroll(ya)
    acc.unroll(rci)
    if cfg.unroll_kw:
        acc.unroll(rx)
    _blocked_pad_at_root(s, conv, cfg.parallel)
    return s


def schedule_conv2d_transpose_nchw(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:
    """Default CPU schedule: the dilated/padded input at root (parallel), the convolution
    vectorised along ``x`` with ``(n, f)`` in parallel."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    conv = find_tagged(outs, "conv2d_transpose_nchw")
    out, acc = _tail(s, outs, conv)
    for t in conv.input_tensors():
        if isinstance(t.op, te.ComputeOp) and "pad" in t.op.tag.split(","):
            ps = s[t.op]
            ps.compute_root()
            ps.parallel(ps.fuse(ps.op.axis[0], ps.op.axis[1]))
    ow = const_shape(conv.output(0))[3]
    vw = vector_split(ow) if ow >= 16 else ow
    n, f, y, x = out.op.axis
    xo, xi = out.split(x, factor=vw)
    out.vectorize(xi)
    out.parallel(out.fuse(n, f))
    st = out
    if acc is not None:
        acc.compute_at(out, xo)
        st = acc
        xi = acc.op.axis[3]
        acc.vectorize(xi)
    rc, ry, rx = st.op.reduce_axis
    st.reorder(rc, ry, rx, xi)
    return s
