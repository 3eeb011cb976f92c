"""Operators on VDLA's packed layouts: pack/unpack and the packed conv2d, conv2d_transpose and dense the accelerator runs;
the channel plumbing kept on packed int8 tensors (a concat, a channel gather, a max-pool: host steps without unpacking).

Each op registers itself (:func:`.registry.register`) when this module is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...targets.vdla.packing import pack_activation, packed_shape, unpack_activation, unpack_transpose_weight
from ..ir import TensorType
from .nn import conv2d_nchw, conv2d_transpose_nchw, conv_out, exact_matmul
from .pooling import _POOL, _pool_infer
from .registry import _REQUIRED, _err, _wrap32, register


def _pack_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    s = ts[0].shape
    if len(s) not in (2, 4):
        raise _err(f"pack needs an NCHW or NC tensor, got {ts[0]}")
    return TensorType(packed_shape(s, at["batch"], at["block"]), ts[0].dtype)


def _pack(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    return pack_activation(xs[0], at["batch"], at["block"], pad=True)


def _unpack_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    shape = at["shape"]
    s = ts[0].shape
    b, c = (s[-2], s[-1]) if len(s) in (4, 6) else (0, 0)
    if len(s) not in (4, 6) or packed_shape(shape, b, c) != s:
        raise _err(f"unpack: {ts[0]} is not a packed form of shape {shape}")
    return TensorType(shape, ts[0].dtype)


def _unpack(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    return unpack_activation(xs[0], at["shape"])


register("pack", "injective", (1, 1), {"batch": _REQUIRED, "block": _REQUIRED})((_pack_infer, _pack))
register("unpack", "injective", (1, 1), {"shape": _REQUIRED})((_unpack_infer, _unpack))


def _conv_packed_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts
    if len(x.shape) != 6 or len(w.shape) != 6:
        raise _err(f"conv2d_packed needs NCHW{{b}}n{{c}}c data and OIHW{{o}}o{{i}}i weight, got {x} and {w}")
    nb, cb, h, wd, b, ci = x.shape
    ob, wcb, kh, kw, co, wci = w.shape
    g = at.get("groups", 1)
    if cb != wcb * g or ci != wci:
        raise _err(f"conv2d_packed: data {x.shape} and weight {w.shape} disagree on input-channel blocks"
                   + (f" ({g} groups)" if g != 1 else ""))
    if g < 1 or ob % g:
        raise _err(f"conv2d_packed: {ob} output-channel blocks do not split into {g} groups")
    if x.dtype not in ("int8", "uint8") or w.dtype != "int8":
        raise _err(f"conv2d_packed needs int8 operands, got {x.dtype} x {w.dtype}")
    (sh, sw), (pt, pl, pb, pr) = at["strides"], at["padding"]
    oh, ow = conv_out(h, kh, sh, pt, pb), conv_out(wd, kw, sw, pl, pr)
    if oh <= 0 or ow <= 0:
        raise _err("conv2d_packed: input smaller than kernel")
    return TensorType((nb, ob, oh, ow, b, co), "int32")


def _to_nchw(x: np.ndarray) -> np.ndarray:
    """A packed ``(N/b, C/c, H, W, b, c)`` tensor as NCHW (channels and batch still padded)."""
    nb, cb, h, wd, b, c = x.shape
    return x.transpose(0, 4, 1, 5, 2, 3).reshape(nb * b, cb * c, h, wd)


def _from_nchw(acc: np.ndarray, batch: int, block: int) -> np.ndarray:
    n, c, h, wd = acc.shape
    return acc.reshape(n // batch, batch, c // block, block, h, wd).transpose(0, 2, 4, 5, 1, 3)


def _conv_packed(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    # Direct on the packed layout: window over H, W; contract over (C/c, KH, KW, c) per group.
    x, w = xs
    ob, wcb, kh, kw, co, wci = w.shape
    wn = w.transpose(0, 4, 1, 5, 2, 3).reshape(ob * co, wcb * wci, kh, kw)
    acc = conv2d_nchw(_to_nchw(x), wn, at["strides"], at["padding"], groups=at.get("groups", 1))
    return _wrap32(_from_nchw(acc, x.shape[4], co))


register("conv2d_packed", "complex", (2, 2), {"strides": (1, 1), "padding": (0, 0, 0, 0), "groups": 1})(
    (_conv_packed_infer, _conv_packed)
)


def _convt_packed_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts
    (s, s2), pad, (k, k2) = at["strides"], at["padding"], at["kernel"]
    if len(x.shape) != 6 or len(w.shape) != 8:
        raise _err(f"conv2d_transpose_packed needs NCHW{{b}}n{{c}}c data and a per-phase packed weight, got {x} and {w}")
    if s != s2 or k != k2 or len(set(pad)) != 1:
        raise _err(f"conv2d_transpose_packed takes one stride, kernel size and padding, got {at}")
    nb, cb, h, wd, b, ci = x.shape
    jt = -(-k // s)
    if w.shape[:2] != (s, s) or w.shape[3] != cb or w.shape[4:6] != (jt, jt) or w.shape[7] != ci:
        raise _err(f"conv2d_transpose_packed: weight {w.shape} is not the per-phase packing (s, s, O/o, I/i, J, J, o, i) "
                   f"= ({s}, {s}, O/o, {cb}, {jt}, {jt}, o, {ci}) of a {k}x{k} stride-{s} kernel")
    if x.dtype not in ("int8", "uint8") or w.dtype != "int8":
        raise _err(f"conv2d_transpose_packed needs int8 operands, got {x.dtype} x {w.dtype}")
    p = pad[0]
    oh, ow = (h - 1) * s - 2 * p + k, (wd - 1) * s - 2 * p + k
    if oh <= 0 or ow <= 0:
        raise _err("conv2d_transpose_packed: padding leaves an empty output")
    return TensorType((nb, w.shape[2], oh, ow, b, w.shape[6]), "int32")


def _convt_packed(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    # The IOHW weight gathered back from its phases, then the scatter-form reference.
    x, w = xs
    wt = unpack_transpose_weight(w, at["kernel"][0], at["padding"][0])
    acc = conv2d_transpose_nchw(_to_nchw(x), wt, at["strides"], at["padding"])
    return _wrap32(_from_nchw(acc, x.shape[4], w.shape[6]))


register("conv2d_transpose_packed", "complex", (2, 2), {"strides": (1, 1), "padding": (0, 0, 0, 0), "kernel": _REQUIRED})(
    (_convt_packed_infer, _convt_packed)
)


def _dense_packed_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts
    if len(x.shape) != 4 or len(w.shape) != 4 or x.shape[1] != w.shape[1] or x.shape[3] != w.shape[3]:
        raise _err(f"dense_packed needs data[N/b,K/c,b,c] and weight[M/o,K/c,o,c], got {x} and {w}")
    if x.dtype not in ("int8", "uint8") or w.dtype != "int8":
        raise _err(f"dense_packed needs int8 operands, got {x.dtype} x {w.dtype}")
    return TensorType((x.shape[0], w.shape[0], x.shape[2], w.shape[2]), "int32")


def _dense_packed(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x, w = xs
    nb, kb, b, ci = x.shape
    mb, _, co, _ = w.shape
    acc = exact_matmul(
        x.transpose(0, 2, 1, 3).reshape(nb * b, kb * ci), w.transpose(1, 3, 0, 2).reshape(kb * ci, mb * co)
    )
    return _wrap32(acc.reshape(nb, b, mb, co).transpose(0, 2, 1, 3))


register("dense_packed", "complex", (2, 2))((_dense_packed_infer, _dense_packed))


def _channels_first(x: np.ndarray) -> np.ndarray:
    """A packed ``(N/b, C/c, H, W, b, c)`` tensor as ``(N/b, C, H, W, b)`` (channels, padding too, on axis 1)."""
    nb, cb, h, wd, b, c = x.shape
    return x.transpose(0, 1, 5, 2, 3, 4).reshape(nb, cb * c, h, wd, b)


def _to_blocks(y: np.ndarray, channels: int, block: int) -> np.ndarray:
    """``(N/b, C, H, W, b)`` (the first ``channels`` real) back to packed blocks of ``block``, zero-padded."""
    nb, _, h, wd, b = y.shape
    cp = -(-channels // block) * block
    out = np.zeros((nb, cp, h, wd, b), y.dtype)
    out[:, :channels] = y[:, :channels]
    return np.ascontiguousarray(out.reshape(nb, cp // block, block, h, wd, b).transpose(0, 1, 3, 4, 5, 2))


def _gather_packed_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x = ts[0]
    if len(x.shape) != 6:
        raise _err(f"channel_gather_packed needs a packed NCHW{{b}}n{{c}}c tensor, got {x}")
    idx = at["indices"]
    c = x.shape[1] * x.shape[5]
    if not idx or min(idx) < 0 or max(idx) >= c:
        raise _err(f"channel_gather_packed: indices must lie in [0, {c}) (the packed tensor's channels), got "
                   f"{min(idx, default=None)}..{max(idx, default=None)}")
    nb, _, h, wd, b, blk = x.shape
    return TensorType((nb, -(-len(idx) // blk), h, wd, b, blk), x.dtype)


def _gather_packed(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    # channel j of the result is channel indices[j] of the input, on the packed layout
    x = xs[0]
    return _to_blocks(_channels_first(x)[:, list(at["indices"])], len(at["indices"]), x.shape[5])


register("channel_gather_packed", "injective", (1, 1), {"indices": _REQUIRED})((_gather_packed_infer, _gather_packed))


def _concat_packed_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    chans, gathers = at["channels"], at["gathers"] or ((),) * len(ts)
    if len(chans) != len(ts) or len(gathers) != len(ts):
        raise _err(f"concat_packed: {len(ts)} inputs but {len(chans)} channel counts {chans} and {len(gathers)} "
                   "gathers")
    t0 = ts[0]
    for t, c, idx in zip(ts, chans, gathers):
        have = t.shape[1] * t.shape[5] if len(t.shape) == 6 else 0
        if (len(t.shape) != 6 or t.dtype != t0.dtype or t.shape[0] != t0.shape[0] or t.shape[2:] != t0.shape[2:]
                or (have < c if not idx else not len(idx) <= c <= -(-len(idx) // t.shape[5]) * t.shape[5]
                    or max(idx) >= have)):
            raise _err(f"concat_packed: {t} is not a packed tensor of {c} channels matching {t0}"
                       + (f" (gathering {len(idx)} of its channels)" if idx else ""))
    nb, _, h, wd, b, blk = t0.shape
    return TensorType((nb, -(-sum(chans) // blk), h, wd, b, blk), t0.dtype)


def concat_input(at: dict[str, Any], i: int, x: np.ndarray) -> np.ndarray:
    """Input ``i`` of a ``concat_packed`` as it lands in the result: gathered when it has a gather."""
    idx = (at["gathers"] or ((),) * (i + 1))[i]
    return _gather_packed({"indices": idx}, [x]) if idx else x


def _concat_packed(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    chans, blk = at["channels"], xs[0].shape[5]
    xs = [concat_input(at, i, x) for i, x in enumerate(xs)]
    if all(c % blk == 0 for c in chans[:-1]):  # whole blocks: the packed tensors one after the other
        return np.concatenate(xs, axis=1)
    y = np.concatenate([_channels_first(x)[:, :c] for x, c in zip(xs, chans)], axis=1)
    return _to_blocks(y, sum(chans), blk)


# ``gathers``: per input, the channels it contributes (a channel split / shuffle of it, see
# channel_gather_packed), or () for all of them in order; ``channels``: the width each input
# takes in the result (its channel count, or that rounded up to whole blocks: zeros after).
# opaque: never fused into a host group, so that the executor can place its inputs' blocks in
# one buffer as their VDLA kernels store them (the executor's "place" step)
register("concat_packed", "opaque", (1, 1 << 16), {"channels": _REQUIRED, "gathers": ()})((_concat_packed_infer, _concat_packed))


def _maxpool_packed_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x = ts[0]
    if len(x.shape) != 6 or x.dtype not in ("int8", "uint8"):
        raise _err(f"max_pool2d_packed needs a packed int8 NCHW{{b}}n{{c}}c tensor, got {x}")
    nb, cb, h, wd, b, c = x.shape
    t = _pool_infer("max_pool2d")(at, [TensorType((nb, cb * b * c, h, wd), x.dtype)])
    return TensorType((nb, cb, t.shape[2], t.shape[3], b, c), x.dtype)


def _maxpool_packed(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    # The pool over H, W (axes 2, 3 of the packed layout; every block, batch row and lane alike)
    # as a running maximum of the kernel's kh * kw strided views: each view's innermost (b, c)
    # rows stay contiguous, so this is a few vector passes, not a window tensor reduced.
    x = xs[0]
    (kh, kw), (sh, sw), (pt, pl, pb, pr) = at["kernel"], at["strides"], at["padding"]
    nb, cb, h, wd, b, c = x.shape
    low = np.iinfo(x.dtype).min  # padding never wins a window that has a real element
    if any((pt, pl, pb, pr)):
        xp = np.full((nb, cb, h + pt + pb, wd + pl + pr, b, c), low, x.dtype)
        xp[:, :, pt:pt + h, pl:pl + wd] = x
        x = xp
    oh, ow = (x.shape[2] - kh) // sh + 1, (x.shape[3] - kw) // sw + 1
    out = None
    for dy in range(kh):
        for dx in range(kw):
            v = x[:, :, dy:dy + sh * (oh - 1) + 1:sh, dx:dx + sw * (ow - 1) + 1:sw]
            out = v.copy() if out is None else np.maximum(out, v, out=out)
    assert out is not None
    return out


register("max_pool2d_packed", "reduction", (1, 1), _POOL)((_maxpool_packed_infer, _maxpool_packed))


def _avgpool_packed_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x = ts[0]
    if len(x.shape) != 6 or x.dtype not in ("int8", "uint8"):
        raise _err(f"global_avg_pool2d_packed needs a packed int8 NCHW{{b}}n{{c}}c tensor, got {x}")
    if not (at["in_scale"] > 0 and at["out_scale"] > 0):
        raise _err(f"global_avg_pool2d_packed: scales must be positive, got {at['in_scale']} and {at['out_scale']}")
    nb, cb, _, _, b, c = x.shape
    return TensorType((nb, cb, 1, 1, b, c), "int8")


def _avgpool_packed(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    # quantize(mean over H, W of dequantize(x)), block by block: the sum is exact in int64 and the
    # mean is taken once per channel in float64 before the float32 step of the quantiser, so a
    # block's lanes (and its zero padding, which stays 0) need no unpacking
    x = xs[0]
    mean = (x.sum(axis=(2, 3), keepdims=True, dtype=np.int64) * (at["in_scale"] / (x.shape[2] * x.shape[3])))
    q = np.rint(mean.astype(np.float32) / np.float32(at["out_scale"]))
    return np.clip(q, -128, 127).astype(np.int8)


#: The int8 global average pool of a squeeze-excite block (and a classifier head) on the packed
#: tensor: one host step instead of unpack, dequantize, pool, quantize, pack (:mod:`..squeeze`).
register("global_avg_pool2d_packed", "reduction", (1, 1), {"in_scale": _REQUIRED, "out_scale": _REQUIRED})(
    (_avgpool_packed_infer, _avgpool_packed)
)


def _mul_packed_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    a, b = ts
    ok = len(a.shape) == len(b.shape) == 6 and a.dtype == b.dtype == "int8" and all(
        db in (1, da) for da, db in zip(a.shape, b.shape)) and a.shape[4:] == b.shape[4:]
    if not ok:
        raise _err(f"mul_packed needs a packed int8 tensor and one of its shape or with 1x1 maps, got {a} and {b}")
    if min(at["a_scale"], at["b_scale"], at["out_scale"]) <= 0:
        raise _err("mul_packed: scales must be positive")
    return TensorType(a.shape, "int8")


def _mul_packed(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    # the float32 operations of dequantize, mul and quantize element by element, as on the
    # unpacked tensors (a per-channel operand broadcasts over H, W inside each block)
    a = xs[0].astype(np.float32) * np.float32(at["a_scale"])
    b = xs[1].astype(np.float32) * np.float32(at["b_scale"])
    q = np.rint((a * b) / np.float32(at["out_scale"]))
    return np.clip(q, -128, 127).astype(np.int8)


#: The excite of a squeeze-excite block (the map scaled by its per-channel gate) on packed int8
#: tensors (:mod:`..squeeze`).
register("mul_packed", "elemwise", (2, 2), {"a_scale": _REQUIRED, "b_scale": _REQUIRED, "out_scale": _REQUIRED})(
    (_mul_packed_infer, _mul_packed)
)
