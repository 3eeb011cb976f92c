"""GPU schedule of matrix multiplication and dense layers: shared-memory tiles, register blocking,
cooperative fetch (TVM's topi.cuda dense/matmul shape).

A block computes a ``bm`` x ``bn`` tile of C with (bm/tm) x (bn/tn) threads, each holding a
``tm`` x ``tn`` accumulator tile in registers. The reduction runs in steps of ``bk``: each step
the block's threads copy the bm x bk slice of A and the bk x bn slice of B into shared memory
together (vectorised by ``vec``), a barrier, then every thread multiplies from shared memory.
The tile sizes are the knobs (:class:`MatmulTiles`); they must divide the shapes. With
``double_buffer`` the shared tiles are in two halves, the next step's fetched while this one's is
read. An element-wise tail after the product (a bias, ReLU) is computed from the registers as
they are stored.

:func:`schedule_matmul` is the ``matmul.cuda`` template's schedule and a model's
``conv2d_1x1`` node's (:func:`schedule_conv2d_1x1`: a 1x1 stride-1 convolution of batch 1 as this
GEMM, the ``conv2d_1x1.cuda`` template's, :func:`conv2d_1x1` its declaration); each reads every
knob of a tuned record, ``double_buffer`` included, so a model builds what was measured.
:func:`schedule_dense` schedules topi's dense layer (packed weights, bias) for small batches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .... import te
from ....autotvm.dispatch import query, schedule_knobs
from ....autotvm.space import KnobError
from ....schedule.primitives import Schedule
from ....topi.util import as_list, const_shape, find_tagged, traverse_inline
from .common import cooperative_fetch
from .reduction import schedule_reduce


@dataclass(frozen=True)
class MatmulTiles:
    """Block tile bm x bn, thread tile tm x tn, reduction step bk, fetch vector width vec; with
    ``vt`` > 1 each thread's tile is vt x vt strided pieces (virtual threads: neighbouring
    threads read neighbouring shared-memory words, fewer bank conflicts); ``vx`` > 0 gives the
    columns their own count (the autotvm template's ``tile_x``; 0: ``vt``). ``unroll_step`` (TVM's
    ``auto_unroll_max_step``) unrolls the step's k loop when ``bk * tm * tn`` copies fit in it and
    ``unroll_explicit`` (else LLVM's unroller decides). ``double_buffer``: the shared tiles in two
    halves (the template's knob of that name; records written before it were measured without)."""

    bm: int = 64
    bn: int = 64
    bk: int = 16
    tm: int = 4
    tn: int = 4
    vec: int = 4
    vt: int = 1
    vx: int = 0
    unroll_step: int = 0
    unroll_explicit: bool = True
    double_buffer: bool = False

    @property
    def vcols(self) -> int:
        return self.vx or self.vt

    def check(self, m: int, n: int, k: int) -> None:
        for what, size, tile in (("rows", m, self.bm), ("columns", n, self.bn), ("reduction", k, self.bk)):
            if size % tile:
                raise ValueError(f"matmul tiles: {what} {size} is not a multiple of the tile {tile}")
        if self.tm % self.vt or self.tn % self.vcols:
            raise ValueError(f"matmul tiles: {self.vt}x{self.vcols} virtual threads must divide the thread tile "
                             f"{self.tm}x{self.tn}")
        if self.bm % self.tm or self.bn % self.tn:
            raise ValueError(f"matmul tiles: thread tile {self.tm}x{self.tn} must divide the block {self.bm}x{self.bn}")
        if self.bk % self.vec or self.bn % self.vec:
            raise ValueError(f"matmul tiles: the fetch width {self.vec} must divide bk={self.bk} and bn={self.bn}")
        nthreads = (self.bm // self.tm) * (self.bn // self.tn)
        for name, size in (("A", self.bm * self.bk), ("B", self.bk * self.bn)):
            if size % (nthreads * self.vec):
                raise ValueError(
                    f"matmul tiles: the {name} tile ({size} elements) does not split over {nthreads} threads x {self.vec}"
                )


def define_matmul_space(cfg: Any, m: int, n: int, k: int) -> None:
    """The knobs of the ``matmul.cuda`` template (TVM's dense/matmul splits): ``tile_y = [blocks, vy,
    ty, yi]`` of the rows, ``tile_x`` of the columns, ``tile_k = [steps, bk]``, the fetch width
    ``vec``, ``auto_unroll_max_step`` and ``unroll_explicit``."""
    cfg.define_split("tile_y", m, num_outputs=4, filter=lambda e: e.size[1] <= 4 and e.size[1] * e.size[3] <= 16)
    cfg.define_split("tile_x", n, num_outputs=4, filter=lambda e: e.size[1] <= 4 and e.size[1] * e.size[3] <= 16)
    cfg.define_split("tile_k", k, num_outputs=2, filter=lambda e: e.size[1] <= 64)
    cfg.define_knob("vec", [1, 2, 4])
    cfg.define_knob("auto_unroll_max_step", [0, 512, 1500])
    cfg.define_knob("unroll_explicit", [0, 1])


def matmul_tiles(cfg: Any) -> MatmulTiles:
    """The :class:`MatmulTiles` of a ``matmul.cuda`` (or ``conv2d_1x1.cuda``) config, every knob it
    has: ``double_buffer`` too when the config has it (a record written before the knob existed,
    or a template point before it is defined, has not: measured without)."""
    _, vy, ty, yi = cfg["tile_y"].size
    _, vx, tx, xi = cfg["tile_x"].size
    try:
        double = bool(cfg["double_buffer"].val)
    except KnobError:
        double = False
    return MatmulTiles(bm=vy * ty * yi, bn=vx * tx * xi, bk=cfg["tile_k"].size[1], tm=vy * yi, tn=vx * xi,
                       vec=int(cfg["vec"].val), vt=vy, vx=vx, unroll_step=int(cfg["auto_unroll_max_step"].val),
                       unroll_explicit=bool(cfg["unroll_explicit"].val), double_buffer=double)


def hand_matmul_knobs(m: int, n: int, k: int, t: MatmulTiles = MatmulTiles()) -> dict[str, Any]:
    """The knob values of ``t`` (the defaults: today's hand tiles) in the ``matmul.cuda`` space."""
    return {"tile_y": [m // t.bm, t.vt, t.bm // t.tm, t.tm // t.vt], "tile_x": [n // t.bn, t.vcols, t.bn // t.tn,
                                                                               t.tn // t.vcols],
            "tile_k": [k // t.bk, t.bk], "vec": t.vec, "auto_unroll_max_step": t.unroll_step,
            "unroll_explicit": int(t.unroll_explicit)}


def matmul(m: int, n: int, k: int, dtype: str = "float32") -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    """``C[m, n] = sum_k A[m, k] * B[k, n]`` (the plain declaration the GPU schedule expects)."""
    A = te.placeholder((m, k), dtype, name="A")
    B = te.placeholder((k, n), dtype, name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C", tag="matmul")
    return A, B, C


def dense(data: te.Tensor, weight: te.Tensor) -> te.Tensor:
    """``out[b, o] = sum_k data[b, k] * weight[o, k]`` (no weight packing: the GPU tiles it in shared memory)."""
    r = te.reduce_axis((0, data.shape[1]), name="k")
    return te.compute((data.shape[0], weight.shape[0]), lambda i, j: te.sum(data[i, r] * weight[j, r], axis=r),
                      name="dense", tag="dense")  # fmt: skip


def conv2d_1x1(data: te.Tensor, kernel: te.Tensor, size: tuple[int, int]) -> te.Tensor:
    """A 1x1 stride-1 convolution of batch 1 as a GEMM: ``out[f, p] = sum_c kernel[f, c] * data[c, p]``
    over ``data [C, H*W]`` and ``kernel [OC, C]`` (the memory of NCHW data and OIHW weights; ``size``
    is ``(H, W)``), the ``conv2d_1x1.cuda`` template's declaration and a model's ``conv2d_1x1`` node's."""
    c, hw = const_shape(data)
    oc = const_shape(kernel)[0]
    h, w = size
    if h * w != hw:
        raise ValueError(f"conv2d_1x1: data [{c}, {hw}] is not {h}x{w} pixels")
    r = te.reduce_axis((0, c), name="rc")
    return te.compute((oc, hw), lambda f, p: te.sum(kernel[f, r] * data[r, p], axis=r), name="conv2d_1x1",
                      tag="conv2d_1x1", attrs={"workload": ["conv2d_1x1", [c, h, w, oc]]})


def schedule_matmul(C: te.Tensor | Sequence[te.Tensor], tiles: MatmulTiles | None = None) -> Schedule:
    """Schedule ``C = A x B`` or a dense layer (any 2-d sum of products of two 2-d inputs), or an
    element-wise tail after one (``C`` its output, or a list of it).
    ``tiles``: the knobs (default: a tuned record of ``["matmul.cuda", [m, n, k]]`` under
    ``apply_history_best``, else :class:`MatmulTiles`' defaults)."""
    outs = as_list(C)
    out = outs[0]
    gemm = _gemm_of(out)
    op = gemm.op
    a, b = op.input_tensors()[:2]
    m, n = const_shape(gemm)
    k = int(op.reduce_axis[0].dom.extent.value)
    if tiles is None:
        tuned = query("cuda", ["matmul.cuda", [m, n, k]]) if op.tag == "matmul" else None
        tiles = matmul_tiles(tuned) if tuned is not None else MatmulTiles()
    tiles.check(m, n, k)
    s = te.create_schedule([t.op for t in outs])
    AA = s.cache_read(a, "shared", [gemm])
    BB = s.cache_read(b, "shared", [gemm])
    if out is gemm:
        CL = s.cache_write(gemm, "local")
    else:  # a fused tail: the product in registers, the tail computed as they are stored
        if len(outs) != 1 or const_shape(out) != (m, n):
            raise ValueError(f"schedule_matmul: a fused tail must be one {m}x{n} output, got {out.name!r}")
        traverse_inline(s, outs, lambda _op: None)
        CL = gemm
        s[gemm].set_scope("local")
    so = s[out]
    ty_n, tx_n = tiles.bm // tiles.tm, tiles.bn // tiles.tn
    tya, txa = te.thread_axis("threadIdx.y"), te.thread_axis("threadIdx.x")
    by, yi = so.split(so.op.axis[0], factor=tiles.bm)
    bx, xi = so.split(so.op.axis[1], factor=tiles.bn)
    vy, yi = so.split(yi, nparts=tiles.vt)
    vx, xi = so.split(xi, nparts=tiles.vcols)
    ty, yi = so.split(yi, nparts=ty_n)
    tx, xi = so.split(xi, nparts=tx_n)
    so.reorder(by, bx, vy, vx, ty, tx, yi, xi)
    so.bind(by, te.thread_axis("blockIdx.y"))
    so.bind(bx, te.thread_axis("blockIdx.x"))
    if tiles.vt > 1 or tiles.vcols > 1:  # (both bound, as before the columns had their own count)
        so.bind(vy, te.thread_axis("vthread"))
        so.bind(vx, te.thread_axis("vthread"))
    so.bind(ty, tya)
    so.bind(tx, txa)
    if tiles.tn // tiles.vcols in (2, 4):
        so.vectorize(xi)
    s[CL].compute_at(so, tx)
    yc, xc = s[CL].op.axis
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=tiles.bk)
    s[CL].reorder(ko, ki, yc, xc)
    s[CL].unroll(yc)
    s[CL].unroll(xc)
    if tiles.unroll_step and tiles.unroll_explicit and tiles.bk * tiles.tm * tiles.tn <= tiles.unroll_step:
        s[CL].unroll(ki)
    for cache in (AA, BB):
        s[cache].compute_at(s[CL], ko)
        cooperative_fetch(s, cache, [(tya, ty_n), (txa, tx_n)], tiles.vec)
        if tiles.double_buffer:  # the next step's tile fetched into the other half while this one is read
            s[cache].double_buffer()
    return s


def _gemm_of(out: te.Tensor) -> te.Tensor:
    """The 2-d product behind ``out``: ``out`` itself, or the one reduction an element-wise tail reads."""
    op = out.op
    while isinstance(op, te.ComputeOp) and not op.reduce_axis:
        ins = [t for t in op.input_tensors() if isinstance(t.op, te.ComputeOp)]
        reds = [t for t in ins if t.op.reduce_axis] or ins
        if len(reds) != 1:
            break
        op = reds[0].op
        out = reds[0]
    if not isinstance(op, te.ComputeOp) or len(op.reduce_axis) != 1 or len(op.axis) != 2:
        raise ValueError(f"schedule_matmul: {out.name!r} is not a 2-d reduction over one axis")
    return out


def _tiles_for(m: int, n: int, k: int, tuned: Any) -> MatmulTiles:
    """The tuned record's tiles, else the hand tiles where they divide the shape, else the
    ``matmul.cuda`` space's first point (one element per thread: valid for any shape)."""
    if tuned is not None:
        return matmul_tiles(tuned)
    hand = MatmulTiles()
    if m % hand.bm == 0 and n % hand.bn == 0 and k % hand.bk == 0:
        return hand
    return MatmulTiles(bm=1, bn=1, bk=1, tm=1, tn=1, vec=1)


def schedule_conv2d_1x1(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:
    """A model's ``conv2d_1x1`` node (the GEMM of :func:`conv2d_1x1` and its fused tail): the tiles of
    the best record of its ``conv2d_1x1.cuda`` workload under ``apply_history_best`` (the graph
    strategy chose this implementation because that record is the fastest), else the template's
    fallback tiles."""
    outs = as_list(outs)
    gemm = find_tagged(outs, "conv2d_1x1").output(0)
    tuned = query("cuda", ["conv2d_1x1.cuda", gemm.op.attrs["workload"][1]]) if "workload" in gemm.op.attrs else None
    oc, hw = const_shape(gemm)
    c = int(gemm.op.reduce_axis[0].dom.extent.value)
    return schedule_matmul(outs, _tiles_for(oc, hw, c, tuned))


def schedule_dense(outs: te.Tensor | list[te.Tensor], num_thread: int | None = None) -> Schedule:
    """topi.dense (any shape, packed weights, bias, fused activations): one thread per output with
    the weight re-layout inlined. For batch-1 layers (a matrix-vector product, bound by reading
    the weights once) this is the shape that matters; large batches use :func:`schedule_matmul`.
    The knobs (``dense.cuda``): ``num_thread`` per block and ``tile_k`` (the reduction's inner
    factor, unrolled); the hand pick is 128 threads, nothing unrolled."""
    outs = as_list(outs)
    d = find_tagged(outs, "dense")
    (b, k), o = const_shape(d.input_tensors()[0]), const_shape(d.output(0))[1]
    hand = {"num_thread": num_thread or 128, "tile_k": [k, 1]}

    def define(cfg: Any) -> None:
        cfg.define_knob("num_thread", [32, 64, 128, 256, 512, 1024])
        cfg.define_split("tile_k", k, num_outputs=2, filter=lambda e: e.size[1] in (1, 2, 4, 8, 16))

    workload = ["dense.cuda", [b, k, o, outs[0].op is not d]]
    knobs = hand if num_thread is not None else schedule_knobs("cuda", workload, define, hand)
    s = schedule_reduce(outs, int(knobs["num_thread"]), inline=("dense_pack",))
    ki_n = int(knobs["tile_k"][1])
    if ki_n > 1:
        st = s[d] if outs[0].op is not d else s[outs[0]]
        _, ki = st.split(st.op.reduce_axis[0], factor=ki_n)
        st.unroll(ki)
    return s
