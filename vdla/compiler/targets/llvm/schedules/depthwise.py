"""CPU schedule of the depthwise 2-D convolution (MobileNet's), with its autotvm knobs.

The declaration is :func:`vdla.compiler.topi.depthwise_conv2d_nchw`; its ``workload``
attribute names the ``depthwise_conv2d_nchw.x86`` template (:mod:`vdla.compiler.autotvm.templates.llvm`),
whose space these knobs are:

* ``tile_x`` -- the vector width along output columns (a register row of outputs);
* ``tile_f`` -- output channels computed together (unrolled: more independent accumulators
  where a row is short, as in MobileNet's 7x7 layers);
* ``par`` -- which loops run in parallel: ``nf`` (images x channel groups) or ``nfy`` (rows too);
* ``ann_reduce`` -- unroll the kernel's rows and/or columns.

Untuned (and as the template's fallback) it is the hand-picked schedule: 16 lanes, one
channel, ``(n, f)`` in parallel, the kernel's columns unrolled.

:func:`schedule_depthwise_conv2d_NCHWc` runs the NCHW[x]c form (TVM's x86 depthwise): a register
tile of ``tile_ow`` output columns x one channel block (the vector), the window unrolled, the
padded input computed once at root or read through bounds checks (``inline_pad``: strided and
small layers, :func:`inline_pad`); knobs ``tile_ow``, ``unroll_kw`` and ``inline_pad`` (the
``depthwise_conv2d_NCHWc.x86`` template's space).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .... import te
from ....autotvm.dispatch import schedule_knobs
from ....schedule.primitives import Schedule
from ....topi.util import as_list, const_shape, find_tagged
from .conv2d import _blocked_pad_at_root, _inline_pad, _reg_n, _tail, register_tile_cap

__all__ = ["schedule_depthwise_conv2d_nchw", "schedule_depthwise_conv2d_NCHWc", "inline_pad"]


def _define(ow: int, hand_x: int) -> Any:
    def define(cfg: Any) -> None:
        cfg.define_knob("tile_x", sorted({v for v in (4, 8, 16, 32) if v <= ow} | {hand_x}))
        cfg.define_knob("tile_f", [1, 2, 4])
        cfg.define_knob("par", ["nf", "nfy"])
        cfg.define_annotate("ann_reduce", ["ry", "rx"], policy="try_unroll")
    return define


def schedule_depthwise_conv2d_nchw(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:
    """Default CPU schedule: rows vectorised along ``x`` with the kernel window unrolled,
    ``(n, f)`` in parallel, padding inlined (or the knobs of a template point / a tuned record)."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    conv = find_tagged(outs, "depthwise_conv2d_nchw")
    out, acc = _tail(s, outs, conv)
    _inline_pad(s, conv)
    _, channels, _, ow = const_shape(conv.output(0))
    hand = {"tile_x": min(16, ow), "tile_f": 1, "par": "nf", "ann_reduce": ["none", "unroll"]}
    k = schedule_knobs("llvm", conv.attrs.get("workload"), _define(ow, hand["tile_x"]), hand)
    vw, fb = int(k["tile_x"]), int(k["tile_f"])
    if channels % fb:
        raise ValueError(f"depthwise tile_f={fb} does not divide the {channels} output channels")
    n, f, y, x = out.op.axis
    fo, fi = out.split(f, factor=fb) if fb > 1 else (f, None)
    xo, xi = out.split(x, factor=vw)
    if fi is not None:
        out.reorder(n, fo, y, xo, fi, xi)
    out.vectorize(xi)
    out.parallel(out.fuse(n, fo) if k["par"] == "nf" else out.fuse(n, fo, y))
    st = out if acc is None else acc
    if acc is not None:
        acc.compute_at(out, xo)
        fi = acc.op.axis[1] if fi is not None else None
        xi = acc.op.axis[3]
        acc.vectorize(xi)
    elif fi is not None:
        out.unroll(fi)
    ry, rx = st.op.reduce_axis
    if fi is not None:
        st.reorder(ry, rx, fi, xi)
        if acc is not None:
            acc.unroll(fi)
    else:
        st.reorder(ry, rx, xi)
    for ax, ann in zip((ry, rx), k["ann_reduce"]):
        if ann == "unroll":
            st.unroll(ax)
    return s


def _define_nchwc(ow: int, cap: int, hand: int) -> Any:
    def define(cfg: Any) -> None:
        cfg.define_knob("tile_ow", sorted({r for r in range(1, min(ow, 2 * cap) + 1) if ow % r == 0} | {hand}))
        cfg.define_knob("unroll_kw", [True, False])
        # added after the first logs (whose records padded at root)
        cfg.define_knob("inline_pad", [False, True], absent=False)
    return define


def inline_pad(stride: int, ow: int) -> bool:
    """The hand pick of the ``inline_pad`` knob: read the input through the padding's bounds checks
    rather than copy it padded first, for strided and small layers. A depthwise layer does 9 FMAs per
    output vector, so the padded copy (a pass over the input and one more launch) costs as much as
    the convolution: on this project's Zen 3 machine (2 threads, AVX2) the copy's kernels took
    2-3x as long as inline checks at stride 2 (MobileNet's 112 -> 56 layer: 206 vs 93 us) and
    1.5-2x at 14 and 7 columns, the same at 28, and 1.2-3x less at 56 and 112 columns, stride 1."""
    return stride > 1 or ow <= 28


def schedule_depthwise_conv2d_NCHWc(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:  # noqa: N802
    """Depthwise convolution on NCHW[x]c data: ``tile_ow`` output columns x one block of channels
    (the vector) accumulated in registers over the unrolled window; ``(n, c.outer, rows)`` in
    parallel; the padded input at root (a parallel, vectorised loop of its own), as TVM does, or
    inlined (:func:`inline_pad`)."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    conv = find_tagged(outs, "depthwise_conv2d_NCHWc")
    out, acc = _tail(s, outs, conv)
    ct = conv.output(0)
    _, _, _, ow, cb = const_shape(ct)
    cap = register_tile_cap(cb)
    stride = int(conv.attrs["workload"][1][2][1]) if "workload" in conv.attrs else 1
    hand = {"tile_ow": _reg_n(ow, cap), "unroll_kw": True, "inline_pad": inline_pad(stride, ow)}
    k = schedule_knobs("llvm", conv.attrs.get("workload"), _define_nchwc(ow, cap, hand["tile_ow"]), hand)
    reg_n = int(k["tile_ow"])
    if acc is None:
        acc = s[s.cache_write(ct, "local")]
        out = s[conv] if conv in s.stage_map else s[ct]
    n, c, y, x, kb = out.op.axis
    xo, xi = out.split(x, factor=reg_n)
    out.reorder(n, c, y, xo, xi, kb)
    out.parallel(out.fuse(n, c, y))
    out.vectorize(kb)
    out.unroll(xi)
    acc.compute_at(out, xo)
    _, _, _, xa, ka = acc.op.axis
    ry, rx = acc.op.reduce_axis
    acc.reorder(ry, rx, xa, ka)
    acc.vectorize(ka)
    acc.unroll(xa)
    if k["unroll_kw"]:
        acc.unroll(rx)
    if k["inline_pad"]:
        _inline_pad(s, conv)
    else:
        _blocked_pad_at_root(s, conv)
    return s
