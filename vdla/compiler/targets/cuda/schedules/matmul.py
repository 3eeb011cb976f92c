"""GPU schedule of matrix multiplication and dense layers: shared-memory tiles, register blocking,
cooperative fetch (TVM's topi.cuda dense/matmul shape).

A block computes a ``bm`` x ``bn`` tile of C with (bm/tm) x (bn/tn) threads, each holding a
``tm`` x ``tn`` accumulator tile in registers. The reduction runs in steps of ``bk``: each step
the block's threads copy the bm x bk slice of A and the bk x bn slice of B into shared memory
together (vectorised by ``vec``), a barrier, then every thread multiplies from shared memory.
The tile sizes are the knobs (:class:`MatmulTiles`); they must divide the shapes.
:func:`schedule_dense` schedules topi's dense layer (packed weights, bias) for small batches.
"""

from __future__ import annotations

from dataclasses import dataclass

from .... import te
from ....schedule.primitives import Schedule
from ....topi.util import const_shape
from .common import cooperative_fetch
from .reduction import schedule_reduce


@dataclass(frozen=True)
class MatmulTiles:
    """Block tile bm x bn, thread tile tm x tn, reduction step bk, fetch vector width vec; with
    ``vt`` > 1 each thread's tile is vt x vt strided pieces (virtual threads: neighbouring
    threads read neighbouring shared-memory words, fewer bank conflicts)."""

    bm: int = 64
    bn: int = 64
    bk: int = 16
    tm: int = 4
    tn: int = 4
    vec: int = 4
    vt: int = 1

    def check(self, m: int, n: int, k: int) -> None:
        for what, size, tile in (("rows", m, self.bm), ("columns", n, self.bn), ("reduction", k, self.bk)):
            if size % tile:
                raise ValueError(f"matmul tiles: {what} {size} is not a multiple of the tile {tile}")
        if self.tm % self.vt or self.tn % self.vt:
            raise ValueError(f"matmul tiles: {self.vt} virtual threads must divide the thread tile {self.tm}x{self.tn}")
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


def schedule_matmul(C: te.Tensor, tiles: MatmulTiles = MatmulTiles()) -> Schedule:
    """Schedule ``C = A x B`` or a dense layer (any 2-d sum of products of two 2-d inputs)."""
    op = C.op
    if not isinstance(op, te.ComputeOp) or len(op.reduce_axis) != 1 or len(op.axis) != 2:
        raise ValueError(f"schedule_matmul: {C.name!r} is not a 2-d reduction over one axis")
    a, b = op.input_tensors()[:2]
    m, n = const_shape(C)
    k = int(op.reduce_axis[0].dom.extent.value)
    tiles.check(m, n, k)
    s = te.create_schedule(C.op)
    AA = s.cache_read(a, "shared", [C])
    BB = s.cache_read(b, "shared", [C])
    CL = s.cache_write(C, "local")
    ty_n, tx_n = tiles.bm // tiles.tm, tiles.bn // tiles.tn
    tya, txa = te.thread_axis("threadIdx.y"), te.thread_axis("threadIdx.x")
    by, yi = s[C].split(C.op.axis[0], factor=tiles.bm)
    bx, xi = s[C].split(C.op.axis[1], factor=tiles.bn)
    vy, yi = s[C].split(yi, nparts=tiles.vt)
    vx, xi = s[C].split(xi, nparts=tiles.vt)
    ty, yi = s[C].split(yi, nparts=ty_n)
    tx, xi = s[C].split(xi, nparts=tx_n)
    s[C].reorder(by, bx, vy, vx, ty, tx, yi, xi)
    s[C].bind(by, te.thread_axis("blockIdx.y"))
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    if tiles.vt > 1:
        s[C].bind(vy, te.thread_axis("vthread"))
        s[C].bind(vx, te.thread_axis("vthread"))
    s[C].bind(ty, tya)
    s[C].bind(tx, txa)
    if tiles.tn // tiles.vt in (2, 4):
        s[C].vectorize(xi)
    s[CL].compute_at(s[C], tx)
    yc, xc = s[CL].op.axis
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=tiles.bk)
    s[CL].reorder(ko, ki, yc, xc)
    s[CL].unroll(yc)
    s[CL].unroll(xc)
    for cache in (AA, BB):
        s[cache].compute_at(s[CL], ko)
        cooperative_fetch(s, cache, [(tya, ty_n), (txa, tx_n)], tiles.vec)
    return s


def schedule_dense(outs: te.Tensor | list[te.Tensor], num_thread: int = 128) -> Schedule:
    """topi.dense (any shape, packed weights, bias, fused activations): one thread per output with
    the weight re-layout inlined. For batch-1 layers (a matrix-vector product, bound by reading
    the weights once) this is the shape that matters; large batches use :func:`schedule_matmul`."""
    return schedule_reduce(outs, num_thread, inline=("dense_pack",))
