"""Winograd convolution F(m x m, 3 x 3) on NCHW[x]c data (Lavin & Gray, 2016; TVM's
``conv2d_winograd`` templates): a 3x3, stride-1 convolution as three stages.

* the **input transform** ``V = B^T d B`` of each ``alpha x alpha`` input tile (``alpha = m + 2``;
  tiles overlap by 2), one value per tile position ``e = xi * alpha + nu``;
* a **batched GEMM** per position: ``M[e, k, p] = sum_c V[e, c, p] * U[e, k, c]`` over the
  channels, for every tile ``p`` (``U = G g G^T``, the weights transformed once, at compile
  time: :func:`winograd_weight`);
* the **output transform** ``Y = A^T M A``: the ``m x m`` output pixels of each tile.

The GEMM does ``alpha^2 / (9 m^2)`` of the direct convolution's multiplications: 4/9 for
F(2x2, 3x3), 1/4 for F(4x4, 3x3); the transforms are additions (their coefficients are
constants: each transformed value is written as the sum of its nonzero terms, so no
multiplication by zero is ever executed). The layouts are the packed convolution's: ``V``
``[N, alpha, alpha, C/cb, P, cb]`` and ``M`` ``[N, alpha^2, OC/ob, P, ob]`` make the GEMM of each
position a 1x1 convolution over ``P`` pixels, ``U`` ``[alpha^2, OC/ob, C/cb, cb, ob]`` its kernel.
:func:`conv2d_winograd_nchw` is the same on NCHW data (TVM's GPU layout: the tile positions as one
axis, the tiles of the whole batch as another; its kernel ``[alpha^2, C, OC]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from .. import te
from ..tir.nodes import Expr
from .util import const_shape, pad, padding4

__all__ = ["winograd_matrices", "winograd_weight", "conv2d_winograd_NCHWc", "WINOGRAD_TILES", "winograd_weight_nchw",
           "conv2d_winograd_nchw", "unpack_weight_nchw"]

#: the output tile sizes ``m`` with transforms here
WINOGRAD_TILES = (2, 4)


def winograd_matrices(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A^T, G, B^T)`` of F(m x m, 3 x 3) as exact fractions (object arrays): ``A^T`` is
    ``m x alpha``, ``G`` ``alpha x 3``, ``B^T`` ``alpha x alpha``. The interpolation points are
    the usual small ones (0, 1, -1 for m = 2; 0, 1, -1, 2, -2 for m = 4) and infinity, for which
    the float32 error stays near the direct convolution's."""
    f = Fraction
    if m == 2:
        at = [[1, 1, 1, 0], [0, 1, -1, -1]]
        g = [[1, 0, 0], [f(1, 2), f(1, 2), f(1, 2)], [f(1, 2), f(-1, 2), f(1, 2)], [0, 0, 1]]
        bt = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
    elif m == 4:
        at = [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]
        g = [[f(1, 4), 0, 0], [f(-1, 6), f(-1, 6), f(-1, 6)], [f(-1, 6), f(1, 6), f(-1, 6)],
             [f(1, 24), f(1, 12), f(1, 6)], [f(1, 24), f(-1, 12), f(1, 6)], [0, 0, 1]]
        bt = [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
              [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]]
    else:
        raise ValueError(f"winograd: output tile m={m} has no transform here (m in {WINOGRAD_TILES})")
    return tuple(np.array([[f(v) for v in row] for row in x], dtype=object) for x in (at, g, bt))  # type: ignore[return-value]


def winograd_weight(w: np.ndarray, m: int, cb: int, ob: int) -> np.ndarray:
    """OIHW 3x3 float weights -> the GEMM's kernel ``U`` ``[alpha^2, OC/ob, C/cb, cb, ob]``
    (``U[e] = G w G^T``, computed in float64, stored as float32)."""
    oc, c, kh, kw = w.shape
    if (kh, kw) != (3, 3):
        raise ValueError(f"winograd_weight: needs a 3x3 kernel, got {kh}x{kw}")
    if oc % ob or c % cb:
        raise ValueError(f"winograd_weight: {oc}x{c} channels are not multiples of the blocks {ob}x{cb}")
    _, g, _ = winograd_matrices(m)
    g64 = g.astype(np.float64)
    alpha = m + 2
    u = np.einsum("ai,ocij,bj->aboc", g64, w.astype(np.float64), g64)  # (alpha, alpha, OC, C)
    u = u.reshape(alpha * alpha, oc // ob, ob, c // cb, cb).transpose(0, 1, 3, 4, 2)
    return np.ascontiguousarray(u, dtype=np.float32)


def _combination(terms: list[tuple[Fraction, Expr]]) -> Expr:
    """``sum(coef * x)`` over the nonzero terms, a coefficient of +-1 as an addition or a
    subtraction (the transforms are mostly those)."""
    out: Expr | None = None
    for coef, x in terms:
        if coef == 0:
            continue
        mag = abs(coef)
        t = x if mag == 1 else x * te.const(float(mag), "float32")
        if out is None:
            out = -t if coef < 0 else t
        else:
            out = out - t if coef < 0 else out + t
    return out if out is not None else te.const(0.0, "float32")


def _by_constant(index: Expr, values: Sequence[Expr]) -> Expr:
    """``values[index]`` for an ``index`` that unrolling makes a constant (the selects fold away)."""
    out = values[-1]
    for i in range(len(values) - 2, -1, -1):
        out = te.if_then_else(index == i, values[i], out)
    return out


def _unaliased(tiles: int, channels: Sequence[int]) -> int:
    """Tile slots (``tiles`` or a few more) for ``V`` and ``M``, whose ``alpha^2`` planes are read
    or written together: a plane of ``channels x slots`` floats that is a multiple of 4 KiB puts
    every plane's element at the same L1 set (4K aliasing: ResNet's 64-channel 56x56 layer by
    F(2x2) ran 2.4x slower than direct, F(4x4) 2.6x faster). The spare slots repeat the last tile."""
    slots = tiles
    while any(not 256 <= (c * slots * 4) % 4096 <= 4096 - 256 for c in channels):
        slots += 1
    return slots


def _tiling(op: str, h: int, w: int, padding: int | Sequence[int], m: int) -> tuple[int, int, int, int, int, int]:
    """A 3x3 Winograd convolution's geometry over an ``h`` x ``w`` input: ``(oh, ow, th, tw, top,
    left)``, the output size, the tiles of ``m`` x ``m`` outputs down and across, and the padding
    before; the padding after is whatever completes the last (ragged) tiles, ``th * m + 2 - h - top``
    rows and ``tw * m + 2 - w - left`` columns of zeros."""
    pt, pl, pb, pr = padding4(padding)
    oh, ow = h + pt + pb - 2, w + pl + pr - 2
    if oh <= 0 or ow <= 0:
        raise ValueError(f"{op}: input {h}x{w} is smaller than the 3x3 kernel")
    return oh, ow, -(-oh // m), -(-ow // m), pt, pl


def conv2d_winograd_NCHWc(  # noqa: N802 - TVM's naming
    data: te.Tensor,
    kernel: te.Tensor,
    padding: int | Sequence[int] = 1,
    m: int = 2,
) -> te.Tensor:
    """``data[N, C/cb, H, W, cb]`` convolved (3x3, stride 1) with the transformed kernel
    ``kernel[alpha^2, OC/ob, C/cb, cb, ob]`` (:func:`winograd_weight`) -> ``[N, OC/ob, OH, OW, ob]``.
    The output stage is tagged ``conv2d_winograd_NCHWc``; its producers are ``winograd_MA`` (the
    output transform's first pass, tagged ``winograd_output_cols``), ``winograd_M`` (the GEMM,
    ``winograd_gemm``), ``winograd_V`` (the input transform, ``winograd_input``), ``winograd_BTd``
    (its first pass, ``winograd_input_rows``) and ``data_pad``."""
    n, cc, h, w, cb = const_shape(data)
    e2, occ, kcc, kcb, ob = const_shape(kernel)
    alpha = m + 2
    if e2 != alpha * alpha:
        raise ValueError(f"conv2d_winograd_NCHWc: the kernel has {e2} tile positions; F({m}x{m}, 3x3) has "
                         f"{alpha * alpha}")
    if (kcc, kcb) != (cc, cb):
        raise ValueError(f"conv2d_winograd_NCHWc: data channel blocks ({cc} x {cb}) do not match the kernel's "
                         f"({kcc} x {kcb})")
    oh, ow, th, tw, pt, pl = _tiling("conv2d_winograd_NCHWc", h, w, padding, m)
    tiles = th * tw
    slots = _unaliased(tiles, (cc * cb, occ * ob))
    # zero rows and columns past the declared padding complete the last (ragged) tiles
    dp = pad(data, [0, 0, pt, pl, 0], [0, 0, th * m + 2 - h - pt, tw * m + 2 - w - pl, 0], name="data_pad")
    at, _, bt = winograd_matrices(m)

    # each transform in two passes of one dimension (B^T d, then (B^T d) B; M A, then A^T (M A)):
    # a value is a short sum over one index, selected by one other (a few terms each, not alpha^2)
    def rows_in(b: Expr, c: Expr, p: Expr, xi: Expr, j: Expr, ci: Expr) -> Expr:
        p = te.min(p, tiles - 1)  # the spare slots repeat the last tile (see _unaliased)
        y0, x0 = (p // tw) * m, (p % tw) * m
        return _by_constant(xi, [_combination([(bt[r][i], dp[b, c, y0 + i, x0 + j, ci]) for i in range(alpha)])
                                 for r in range(alpha)])

    half_in = te.compute((n, cc, slots, alpha, alpha, cb), rows_in, name="winograd_BTd", tag="winograd_input_rows")

    def transform_in(b: Expr, xi: Expr, nu: Expr, c: Expr, p: Expr, ci: Expr) -> Expr:
        return _by_constant(nu, [_combination([(bt[r][j], half_in[b, c, p, xi, j, ci]) for j in range(alpha)])
                                 for r in range(alpha)])

    # (xi, nu) as two axes: only nu selects, so only nu need be unrolled
    v = te.compute((n, alpha, alpha, cc, slots, cb), transform_in, name="winograd_V", tag="winograd_input")
    rco = te.reduce_axis((0, cc), name="rco")
    rci = te.reduce_axis((0, cb), name="rci")
    mm = te.compute(
        (n, e2, occ, slots, ob),
        lambda b, e, k, p, ki: te.sum(v[b, e // alpha, e % alpha, rco, p, rci] * kernel[e, k, rco, rci, ki],
                                      axis=[rco, rci]),
        name="winograd_M", tag="winograd_gemm")

    def cols_out(b: Expr, k: Expr, p: Expr, xi: Expr, xj: Expr, ki: Expr) -> Expr:
        return _by_constant(xj, [_combination([(at[c][nu], mm[b, xi * alpha + nu, k, p, ki]) for nu in range(alpha)])
                                 for c in range(m)])

    half_out = te.compute((n, occ, tiles, alpha, m, ob), cols_out, name="winograd_MA", tag="winograd_output_cols")

    def transform_out(b: Expr, k: Expr, y: Expr, x: Expr, ki: Expr) -> Expr:
        p = (y // m) * tw + x // m
        return _by_constant(y % m, [_combination([(at[r][xi], half_out[b, k, p, xi, x % m, ki]) for xi in range(alpha)])
                                    for r in range(m)])

    return te.compute((n, occ, oh, ow, ob), transform_out, name="conv2d_winograd_NCHWc",
                      tag="conv2d_winograd_NCHWc", attrs={"winograd_m": m})


def winograd_weight_nchw(w: np.ndarray, m: int) -> np.ndarray:
    """OIHW 3x3 float weights -> the NCHW Winograd kernel ``U`` ``[alpha^2, C, OC]`` of
    :func:`conv2d_winograd_nchw` (TVM's pre-computed ``(alpha, alpha, CI, CO)``, the same memory):
    :func:`winograd_weight` with one block of all channels."""
    oc, c = w.shape[:2]
    return winograd_weight(w, m, c, oc).reshape((m + 2) ** 2, c, oc)


def unpack_weight_nchw(u: np.ndarray, m: int) -> np.ndarray:
    """The OIHW 3x3 weights (float64) a kernel ``U [alpha^2, C, OC]`` of :func:`winograd_weight_nchw`
    came from: ``w = G+ U G+^T`` with ``G+`` the left inverse of ``G`` (exact up to rounding: ``G``
    has full column rank). References check a Winograd kernel against the direct convolution with it."""
    alpha = m + 2
    _, g, _ = winograd_matrices(m)
    gp = np.linalg.pinv(g.astype(np.float64))
    _, c, oc = u.shape
    u4 = u.astype(np.float64).reshape(alpha, alpha, c, oc)
    return np.einsum("ia,abco,jb->ocij", gp, u4, gp)


def conv2d_winograd_nchw(data: te.Tensor, kernel: te.Tensor, padding: int | Sequence[int] = 1,
                         m: int = 2) -> te.Tensor:
    """``data[N, C, H, W]`` convolved (3x3, stride 1) with the transformed kernel
    ``kernel[alpha^2, C, OC]`` (:func:`winograd_weight_nchw`) -> ``[N, OC, OH, OW]``: TVM's
    ``conv2d_nchw_winograd`` with the weight transform done at compile time. The stages are the
    NCHW[x]c declaration's with the tile index ``p`` over the batch and both tile axes (``P = N x
    tiles``) and the tile position ``e`` as one axis, so the GEMM ``winograd_M`` ``[alpha^2, OC, P]``
    reads ``winograd_V`` ``[alpha^2, C, P]`` and the kernel at one position per block: the input
    transform's first pass ``winograd_BTd`` ``[C, P, alpha, alpha]``, the output transform's
    ``winograd_MA`` ``[OC, P, alpha, m]``, the output tagged ``conv2d_winograd_nchw``."""
    n, c, h, w = const_shape(data)
    e2, kc, oc = const_shape(kernel)
    alpha = m + 2
    if e2 != alpha * alpha:
        raise ValueError(f"conv2d_winograd_nchw: the kernel has {e2} tile positions; F({m}x{m}, 3x3) has "
                         f"{alpha * alpha}")
    if kc != c:
        raise ValueError(f"conv2d_winograd_nchw: data has {c} channels, the kernel {kc}")
    oh, ow, th, tw, pt, pl = _tiling("conv2d_winograd_nchw", h, w, padding, m)
    tiles = th * tw
    # zero rows and columns past the declared padding complete the last (ragged) tiles
    dp = pad(data, [0, 0, pt, pl], [0, 0, th * m + 2 - h - pt, tw * m + 2 - w - pl], name="data_pad")
    at, _, bt = winograd_matrices(m)

    def rows_in(ci: Expr, p: Expr, xi: Expr, j: Expr) -> Expr:
        t = p % tiles if n > 1 else p
        b = p // tiles if n > 1 else 0
        y0, x0 = (t // tw) * m, (t % tw) * m
        return _by_constant(xi, [_combination([(bt[r][i], dp[b, ci, y0 + i, x0 + j]) for i in range(alpha)])
                                 for r in range(alpha)])

    half_in = te.compute((c, n * tiles, alpha, alpha), rows_in, name="winograd_BTd", tag="winograd_input_rows")

    def transform_in(e: Expr, ci: Expr, p: Expr) -> Expr:
        # e = xi * alpha + nu: unrolled, xi (an index) and nu (the select's) are constants
        xi = e // alpha
        return _by_constant(e % alpha, [_combination([(bt[nu][j], half_in[ci, p, xi, j]) for j in range(alpha)])
                                        for nu in range(alpha)])

    v = te.compute((e2, c, n * tiles), transform_in, name="winograd_V", tag="winograd_input")
    rc = te.reduce_axis((0, c), name="rc")
    mm = te.compute((e2, oc, n * tiles), lambda e, k, p: te.sum(kernel[e, rc, k] * v[e, rc, p], axis=rc),
                    name="winograd_M", tag="winograd_gemm")

    def cols_out(k: Expr, p: Expr, xi: Expr, xj: Expr) -> Expr:
        return _by_constant(xj, [_combination([(at[col][nu], mm[xi * alpha + nu, k, p]) for nu in range(alpha)])
                                 for col in range(m)])

    half_out = te.compute((oc, n * tiles, alpha, m), cols_out, name="winograd_MA", tag="winograd_output_cols")

    def transform_out(b: Expr, k: Expr, y: Expr, x: Expr) -> Expr:
        p = (y // m) * tw + x // m
        if n > 1:
            p = b * tiles + p
        return _by_constant(y % m, [_combination([(at[r][xi], half_out[k, p, xi, x % m]) for xi in range(alpha)])
                                    for r in range(m)])

    # the workload: the conv2d_nchw_winograd.cuda template's arguments (its tuned records' key)
    workload = ["conv2d_nchw_winograd", [[n, c, h, w], [oc, c, 3, 3], [1, 1], list(padding4(padding)), [1, 1], m]]
    return te.compute((n, oc, oh, ow), transform_out, name="conv2d_winograd_nchw", tag="conv2d_winograd_nchw",
                      attrs={"winograd_m": m, "workload": workload})
