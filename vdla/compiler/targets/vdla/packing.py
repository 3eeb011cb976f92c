"""Host packing for VDLA's layouts: the one place numpy arrays are blocked for the accelerator.

Layouts (VTA's ``graph_pack``; ``b`` = ``Config.batch``, ``i`` = ``Config.block_in``,
``o`` = ``Config.block_out``):

* activations NCHW -> ``(N/b, C/i, H, W, b, i)``, NC -> ``(N/b, C/i, b, i)``
  (:func:`pack_activation` / :func:`unpack_activation`);
* conv weights OIHW -> ``(O/o, I/i, KH, KW, o, i)``, dense weights OK -> ``(O/o, K/i, o, i)``
  (:func:`pack_weight`);
* a bias ``(O,)`` -> ``(O/o, b, o)``, repeated over the batch rows of an accumulator
  element (:func:`pack_bias`);
* a transposed conv's IOHW weight -> per-phase sub-kernels ``(s, s, O/o, I/i, J, J, o, i)``
  (:func:`pack_transpose_weight`);
* a depthwise conv's weight for CFG's window mode, ``(C/o, K, o, i)``: row ``(cb, ky)`` holds
  channel ``cb*o + r``'s taps ``w[ky, K-1-t]`` at ``[r, t]`` (:func:`pack_window_weight`, from
  the block-diagonal packed weight the graph's layout pass makes, or :func:`window_weight_of`
  from ``(C, 1, K, K)``).

``pad=True`` zero-pads the channels (and batch) to whole blocks, as the graph's layout pass
does; ``pad=False`` requires whole blocks and raises ValueError naming the array, as a
template's caller wants. The graph's layout pass (:mod:`vdla.compiler.graph.layout`), the
graph's ``pack``/``unpack`` operators, the templates, the strategy and the tests all
call these.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "round_up", "packed_shape", "pack_activation", "unpack_activation", "pack_weight", "unpack_weight", "pack_bias",
    "pack_channel_const", "pack_transpose_weight", "unpack_transpose_weight",
    "pack_data", "unpack_data", "pack_dense_data", "unpack_dense_data", "pack_dense_weight",
    "pack_conv2d_transpose_weight", "block_diagonal", "pack_window_weight", "window_weight_of",
]


def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def packed_shape(shape: Sequence[int], batch: int, block: int) -> tuple[int, ...]:
    """Packed shape of an NCHW (or NC) activation."""
    n, c, *hw = shape
    return (round_up(n, batch) // batch, round_up(c, block) // block, *hw, batch, block)


def _whole_blocks(a: np.ndarray, outer: int, inner: int, pad: bool, what: str) -> np.ndarray:
    """``a`` with axes 0 and 1 made multiples of ``outer`` and ``inner``: zero-padded, or checked."""
    if a.ndim not in (2, 4):
        raise ValueError(f"{what} needs a 2-D or 4-D array, got shape {a.shape}")
    if not pad:
        if a.shape[0] % outer or a.shape[1] % inner:
            raise ValueError(f"{what}: shape {a.shape} is not a multiple of the blocks {outer} x {inner}")
        return a
    pads = [(0, 0)] * a.ndim
    pads[0] = (0, round_up(a.shape[0], outer) - a.shape[0])
    pads[1] = (0, round_up(a.shape[1], inner) - a.shape[1])
    return np.pad(a, pads) if any(p[1] for p in pads) else a


def _block(a: np.ndarray, outer: int, inner: int) -> np.ndarray:
    """``(A, B, *rest) -> (A/outer, B/inner, *rest, outer, inner)``."""
    n, c, *rest = a.shape
    y = a.reshape(n // outer, outer, c // inner, inner, *rest)
    perm = (0, 2, 4, 5, 1, 3) if a.ndim == 4 else (0, 2, 1, 3)
    return np.ascontiguousarray(y.transpose(perm))


def pack_activation(x: np.ndarray, batch: int, block: int, pad: bool = False) -> np.ndarray:
    """``(N, C, H, W) -> (N/b, C/c, H, W, b, c)`` or ``(N, C) -> (N/b, C/c, b, c)``."""
    return _block(_whole_blocks(x, batch, block, pad, "pack_activation"), batch, block)


def unpack_activation(xp: np.ndarray, shape: Sequence[int] | None = None) -> np.ndarray:
    """Inverse of :func:`pack_activation`; ``shape`` is the original (unpadded) shape
    (None: keep the padded one)."""
    if xp.ndim == 6:
        nb, cb, h, w, b, c = xp.shape
        x = xp.transpose(0, 4, 1, 5, 2, 3).reshape(nb * b, cb * c, h, w)
    elif xp.ndim == 4:
        nb, cb, b, c = xp.shape
        x = xp.transpose(0, 2, 1, 3).reshape(nb * b, cb * c)
    else:
        raise ValueError(f"unpack_activation needs a 4-D or 6-D array, got shape {xp.shape}")
    if shape is not None:
        x = x[tuple(slice(0, s) for s in tuple(shape))]
    return np.ascontiguousarray(x)


def pack_weight(w: np.ndarray, block_out: int, block_in: int, pad: bool = False) -> np.ndarray:
    """``(O, I, KH, KW) -> (O/o, I/i, KH, KW, o, i)`` or ``(M, K) -> (M/o, K/i, o, i)``."""
    return _block(_whole_blocks(w, block_out, block_in, pad, "pack_weight"), block_out, block_in)


def unpack_weight(wp: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Inverse of :func:`pack_weight`."""
    return unpack_activation(wp, shape)  # same index algebra


def pack_bias(bias: np.ndarray, batch: int, block: int) -> np.ndarray:
    """``(O,)`` int32 -> ``(O/o, b, o)``, repeated over the batch rows of an accumulator element."""
    ob = bias.size // block
    return np.ascontiguousarray(np.broadcast_to(bias.reshape(ob, 1, block), (ob, batch, block))).astype(np.int32)


def pack_channel_const(c: np.ndarray, block: int, rank: int) -> np.ndarray:
    """A per-channel constant broadcastable against a packed tensor of ``rank`` 6 or 4."""
    v = np.asarray(c).reshape(-1)
    v = np.pad(v, (0, round_up(v.size, block) - v.size))
    shape = (1, v.size // block, 1, 1, 1, block) if rank == 6 else (1, v.size // block, 1, block)
    return np.ascontiguousarray(v.reshape(shape))


def pack_transpose_weight(w: np.ndarray, stride: int, padding: int, block_out: int, block_in: int,
                          pad: bool = False) -> np.ndarray:
    """IOHW ``(I, O, k, k)`` -> per-phase sub-kernels ``(s, s, O/o, I/i, J, J, o, i)``
    (``J = ceil(k / s)``): phase ``(ry, rx)`` tap ``(j, jx)`` is
    ``w[:, :, by + s(J-1-j), bx + s(J-1-jx)]`` (zero past the kernel)."""
    if w.ndim != 4:
        raise ValueError(f"pack_transpose_weight needs a 4-D IOHW array, got shape {w.shape}")
    wt = _whole_blocks(w, block_in, block_out, pad, "pack_transpose_weight")
    i, o, kh, kw = wt.shape
    if kh != kw:
        raise ValueError(f"pack_transpose_weight: square kernels only, got {kh}x{kw}")
    s, k = stride, kh
    jt = -(-k // s)
    out = np.zeros((s, s, o, i, jt, jt), wt.dtype)
    woi = wt.transpose(1, 0, 2, 3)  # (O, I, k, k)
    for ry in range(s):
        by = (ry + padding) % s
        for rx in range(s):
            bx = (rx + padding) % s
            for j in range(jt):
                ky = by + s * (jt - 1 - j)
                if ky >= k:
                    continue
                for jx in range(jt):
                    kx = bx + s * (jt - 1 - jx)
                    if kx < k:
                        out[ry, rx, :, :, j, jx] = woi[:, :, ky, kx]
    # each phase's sub-kernel is an OIHW kernel: block them all as conv2d's weights
    blocked = pack_weight(out.reshape(s * s * o, i, jt, jt), block_out, block_in, pad=False)
    return blocked.reshape(s, s, o // block_out, i // block_in, jt, jt, block_out, block_in)


def unpack_transpose_weight(wp: np.ndarray, kernel: int, padding: int) -> np.ndarray:
    """Inverse of :func:`pack_transpose_weight` (channels stay padded): the IOHW ``(I, O, k, k)``
    weight. Tap ``(ky, kx)`` sits in phase ``((ky - p) mod s, (kx - p) mod s)`` at sub-kernel
    index ``(J - 1 - ky // s, J - 1 - kx // s)``."""
    s, _, ob, ib, jt, _, bo, bi = wp.shape
    sub = unpack_weight(wp.reshape(s * s * ob, ib, jt, jt, bo, bi), (s * s * ob * bo, ib * bi, jt, jt))
    sub = sub.reshape(s, s, ob * bo, ib * bi, jt, jt)
    woi = np.zeros((ob * bo, ib * bi, kernel, kernel), wp.dtype)
    for ky in range(kernel):
        for kx in range(kernel):
            ry, rx = (ky % s - padding) % s, (kx % s - padding) % s
            woi[:, :, ky, kx] = sub[ry, rx, :, :, jt - 1 - ky // s, jt - 1 - kx // s]
    return np.ascontiguousarray(woi.transpose(1, 0, 2, 3))


def block_diagonal(wp: np.ndarray) -> bool:
    """Whether a packed grouped weight ``(C/o, 1, KH, KW, o, o)`` is a depthwise conv's: every
    output channel reads only its own input channel (zeros off each block's diagonal)."""
    if wp.ndim != 6 or wp.shape[1] != 1 or wp.shape[4] != wp.shape[5]:
        return False
    return int(np.count_nonzero(wp)) == int(np.count_nonzero(np.einsum("cyxrr->cyxr", wp[:, 0])))


def pack_window_weight(wp: np.ndarray, block_in: int, rows: int = 0) -> np.ndarray:
    """A depthwise conv's block-diagonal packed weight ``(C/o, 1, K, K, o, o)`` (the grouped
    template's, one channel block per group) as the weight rows of CFG's window mode,
    ``(C/o, K, o, block_in)``: ``[cb, ky, r, t] = wp[cb, 0, ky, K-1-t, r, r]`` for ``t < K``, zero
    for the other taps. With ``rows = R`` (a 3x3 kernel, R input rows interleaved per pass:
    :mod:`.window`) one row per block, ``(C/o, 1, o, block_in)``, tap ``m*R + d`` holding
    ``w[2-d, 2-m]``. ValueError if it is not square, or not block-diagonal (a channel
    multiplier), or its taps do not fit ``block_in``."""
    if wp.ndim != 6 or wp.shape[1] != 1 or wp.shape[2] != wp.shape[3] or wp.shape[4] != wp.shape[5]:
        raise ValueError(f"pack_window_weight needs a (C/o, 1, K, K, o, o) weight, got shape {wp.shape}")
    cb, _, k, _, o, _ = wp.shape
    if k > block_in:
        raise ValueError(f"pack_window_weight: a {k}x{k} kernel has more taps than the window's {block_in}")
    if not block_diagonal(wp):
        raise ValueError("pack_window_weight: the weight is not block-diagonal (one input channel per output channel)")
    diag = np.einsum("cyxrr->cyxr", wp[:, 0])  # (C/o, K, K, o)
    if rows:
        if k != 3 or 2 * rows + 3 > block_in:
            raise ValueError(f"pack_window_weight: {rows} interleaved rows need a 3x3 kernel and 2*rows+3 <= {block_in}")
        out = np.zeros((cb, 1, o, block_in), wp.dtype)
        for m in range(3):
            for d in range(3):
                out[:, 0, :, m * rows + d] = diag[:, 2 - d, 2 - m, :]
        return out
    out = np.zeros((cb, k, o, block_in), wp.dtype)
    out[:, :, :, :k] = diag[:, :, ::-1, :].transpose(0, 1, 3, 2)  # [cb, ky, r, t] = diag[cb, ky, K-1-t, r]
    return np.ascontiguousarray(out)


def window_weight_of(w: np.ndarray, block_out: int, block_in: int, rows: int = 0) -> np.ndarray:
    """A depthwise conv's ``(C, 1, K, K)`` weight (C a multiple of ``block_out``) as window rows
    (:func:`pack_window_weight` of its block-diagonal packing)."""
    c, _, k, _ = w.shape
    full = np.zeros((c, block_out, k, k), w.dtype)  # each channel's taps on its own column of its block
    full[np.arange(c), np.arange(c) % block_out] = w[:, 0]
    return pack_window_weight(pack_weight(full, block_out, block_out), block_in, rows)


# -- the templates' names: whole blocks required (no padding) ------------------------------------


def pack_data(x: np.ndarray, b: int, c: int) -> np.ndarray:
    """NCHW -> NCHW{b}n{c}c = ``(N/b, C/c, H, W, b, c)``; the shape must be whole blocks."""
    if x.ndim != 4:
        raise ValueError(f"pack_data needs a 4-D NCHW array, got shape {x.shape}")
    return pack_activation(x, b, c, pad=False)


def unpack_data(x: np.ndarray) -> np.ndarray:
    """Inverse of :func:`pack_data`."""
    return unpack_activation(x)


def pack_dense_data(x: np.ndarray, b: int, c: int) -> np.ndarray:
    """``(N, K) -> (N/b, K/c, b, c)``; the shape must be whole blocks."""
    if x.ndim != 2:
        raise ValueError(f"pack_dense_data needs a 2-D array, got shape {x.shape}")
    return pack_activation(x, b, c, pad=False)


def unpack_dense_data(x: np.ndarray) -> np.ndarray:
    """Inverse of :func:`pack_dense_data`."""
    return unpack_activation(x)


def pack_dense_weight(wt: np.ndarray, co: int, ci: int) -> np.ndarray:
    """``(O, K) -> (O/co, K/ci, co, ci)``; the shape must be whole blocks."""
    if wt.ndim != 2:
        raise ValueError(f"pack_dense_weight needs a 2-D array, got shape {wt.shape}")
    return pack_weight(wt, co, ci, pad=False)


def pack_conv2d_transpose_weight(wt: np.ndarray, stride: int, padding: int, co: int, ci: int) -> np.ndarray:
    """:func:`pack_transpose_weight` for whole blocks (no padding)."""
    return pack_transpose_weight(wt, stride, padding, co, ci, pad=False)
