"""VDLA templates: the packed int8 conv2d, grouped conv2d, conv2d_transpose and dense.

Their arguments are what the declarations record as their workload (so a model's kernels
and a tuning task agree on it): packed operand shapes, strides/padding, whether the ALU
tail adds a bias / a residual, and the configuration preset. The knobs are defined by the
schedules (:mod:`vdla.compiler.targets.vdla.top.tuning`), whose hand pick (the fallback) is
the graph compiler's (:func:`~vdla.compiler.targets.vdla.top.tuning.schedule_hand`: two virtual
threads where tiles fit); the tail is ``+bias >> 8`` (``+ residual``) then the int8 clip.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....config import Config, preset
from ... import te
from ...targets.vdla import packing
from ...targets.vdla import top as T
from ...targets.vdla.top.tuning import schedule_hand
from ..dispatch import get_config
from ..registry import template

__all__ = ["conv2d_packed", "group_conv2d_packed", "conv2d_transpose_packed", "dense_packed"]


def _tail(bias: bool, residual: bool) -> T.Tail:
    return T.Tail(bias=bias, shift=8 if bias else 0, residual=residual)


def _extras(out_shape: tuple[int, ...], ob: int, b: int, co: int, bias: bool, residual: bool) -> tuple[Any, Any]:
    B = te.placeholder((ob, b, co), "int32", name="bias") if bias else None
    R = te.placeholder(out_shape, "int8", name="residual") if residual else None
    return B, R


def _out_shape(out: te.Tensor) -> tuple[int, ...]:
    return tuple(int(getattr(v, "value", v)) for v in out.shape)


def _flop(cfg: Any, out: te.Tensor, reduce: int) -> None:
    cfg.add_flop(2.0 * float(np.prod(_out_shape(out))) * reduce)


def _task(s: Any, cfg_hw: Config, *tensors: Any) -> tuple[Any, list[Any]]:
    """A template's result: the schedule, marked with the configuration that measurement builds
    for, and its arguments without the absent bias / residual."""
    s.vdla_config = cfg_hw
    return s, [t for t in tensors if t is not None]


def _unbias(p: np.ndarray) -> np.ndarray:
    """(O/c, b, c) packed bias -> (O,)."""
    return np.ascontiguousarray(p[:, 0, :]).reshape(-1)


def _conv_reference(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    data, kernel, stride, padding, bias, residual, _ = args
    pt, pl, pb, pr = padding
    if (pt, pl) != (pb, pr) or pt != pl or stride[0] != stride[1]:
        return []  # the numpy reference takes one padding and one stride: unchecked
    x = packing.unpack_data(inputs[0])
    nb, cb, h, w, b, ci = data
    ob, _, kh, kw, co, _ = kernel
    wt = packing.unpack_weight(inputs[1], (ob * co, cb * ci, kh, kw))
    rest = inputs[2:]
    bv = _unbias(rest.pop(0)) if bias else None
    rv = packing.unpack_data(rest.pop(0)) if residual else None
    y = T.conv2d_reference(x, wt, stride[0], pt, _tail(bias, residual), bias=bv, residual=rv)
    return [packing.pack_data(y, b, co)]


@template("conv2d_packed.vdla", reference=_conv_reference)
def conv2d_packed(data: list[int], kernel: list[int], stride: list[int], padding: list[int], bias: bool = False,
                  residual: bool = False, config: str = "default") -> tuple[Any, list[Any]]:
    cfg_hw = preset(config)
    D = te.placeholder(tuple(data), "int8", name="data")
    K = te.placeholder(tuple(kernel), "int8", name="kernel")
    nb, _, h, w, b, _ = data
    ob, cb, kh, kw, co, ci = kernel
    oh = (h + padding[0] + padding[2] - kh) // stride[0] + 1
    ow = (w + padding[1] + padding[3] - kw) // stride[1] + 1
    B, R = _extras((nb, ob, oh, ow, b, co), ob, b, co, bias, residual)
    out = T.conv2d_packed(D, K, tuple(stride), tuple(padding), _tail(bias, residual), bias=B, residual=R,
                          config=cfg_hw)
    _flop(get_config(), out, cb * kh * kw * ci)
    s = schedule_hand(T.schedule_conv2d_packed, out, cfg_hw)
    return _task(s, cfg_hw, D, K, B, R, out)


def _group_reference(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    data, kernel, groups, stride, padding, bias, residual, _ = args
    if stride[0] != stride[1]:
        return []
    nb, cb, h, w, b, ci = data
    ob, gcb, kh, kw, co, _ = kernel
    x = packing.unpack_data(inputs[0])
    wt = packing.unpack_weight(inputs[1], (ob * co, gcb * ci, kh, kw))
    rest = inputs[2:]
    bv = _unbias(rest.pop(0)) if bias else None
    rv = packing.unpack_data(rest.pop(0)) if residual else None
    y = T.group_conv2d_reference(x, wt, groups, stride[0], padding, _tail(bias, residual), bias=bv, residual=rv)
    return [packing.pack_data(y, b, co).reshape(_group_out(data, kernel, groups, stride, padding))]


def _group_out(data: list[int], kernel: list[int], groups: int, stride: list[int], padding: int) -> tuple[int, ...]:
    nb, _, h, w, b, _ = data
    ob, _, kh, kw, co, _ = kernel
    oh, ow = (h + 2 * padding - kh) // stride[0] + 1, (w + 2 * padding - kw) // stride[1] + 1
    return (nb, groups, ob // groups, oh, ow, b, co)


@template("group_conv2d_packed.vdla", reference=_group_reference)
def group_conv2d_packed(data: list[int], kernel: list[int], groups: int, stride: list[int], padding: int,
                        bias: bool = False, residual: bool = False, config: str = "default") -> tuple[Any, list[Any]]:
    cfg_hw = preset(config)
    D = te.placeholder(tuple(data), "int8", name="data")
    K = te.placeholder(tuple(kernel), "int8", name="kernel")
    nb, _, _, _, b, _ = data
    ob, gcb, kh, kw, co, ci = kernel
    shp = _group_out(data, kernel, groups, stride, padding)
    B, R = _extras((nb, ob, shp[3], shp[4], b, co), ob, b, co, bias, residual)
    out = T.group_conv2d_packed(D, K, groups, tuple(stride), padding, _tail(bias, residual), bias=B, residual=R,
                                config=cfg_hw)
    _flop(get_config(), out, gcb * kh * kw * ci)
    s = schedule_hand(T.schedule_group_conv2d_packed, out, cfg_hw)
    return _task(s, cfg_hw, D, K, B, R, out)


def _transpose_reference(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    data, kernel, stride, padding, ksize, bias, residual, _ = args
    if residual:
        return []
    b, co = data[4], kernel[6]
    x = packing.unpack_data(inputs[0])
    wt = packing.unpack_transpose_weight(inputs[1], ksize, padding)
    bv = _unbias(inputs[2]) if bias else None
    y = T.conv2d_transpose_reference(x, wt, stride, padding, _tail(bias, False), bias=bv)
    return [packing.pack_data(y, b, co)]


def _transpose_inputs(args: list[Any], rng: np.random.Generator) -> list[np.ndarray]:
    """A real IOHW weight packed per phase (random packed bytes would fill taps no weight has)."""
    data, kernel, stride, padding, ksize, bias, residual, _ = args
    b, ci, co = data[4], kernel[7], kernel[6]
    x = rng.integers(-128, 128, tuple(data), dtype=np.int8)
    wt = rng.integers(-128, 128, (data[1] * ci, kernel[2] * co, ksize, ksize), dtype=np.int8)
    got = [x, packing.pack_conv2d_transpose_weight(wt, stride, padding, co, ci)]
    if bias:
        got.append(rng.integers(-4000, 4000, (kernel[2], b, co), dtype=np.int32))
    if residual:
        raise ValueError("conv2d_transpose_packed.vdla: the template has no residual input")
    return got


@template("conv2d_transpose_packed.vdla", reference=_transpose_reference, inputs=_transpose_inputs)
def conv2d_transpose_packed(data: list[int], kernel: list[int], stride: int, padding: int, ksize: int,
                            bias: bool = False, residual: bool = False,
                            config: str = "default") -> tuple[Any, list[Any]]:
    cfg_hw = preset(config)
    D = te.placeholder(tuple(data), "int8", name="data")
    K = te.placeholder(tuple(kernel), "int8", name="kernel")
    geo = T.transpose_geometry(data[2], data[3], ksize, stride, padding)
    ob, co, b = kernel[2], kernel[6], data[4]
    out_shape = (data[0], ob, geo["q_h"], stride, geo["q_w"], stride, b, co)
    B, R = _extras(out_shape, ob, b, co, bias, residual)
    out = T.conv2d_transpose_packed(D, K, stride, padding, ksize, _tail(bias, residual), bias=B, residual=R,
                                    config=cfg_hw)
    _flop(get_config(), out, kernel[3] * kernel[4] * kernel[5] * kernel[7])
    s = schedule_hand(T.schedule_conv2d_transpose_packed, out, cfg_hw)
    return _task(s, cfg_hw, D, K, B, R, out)


def _dense_reference(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    data, weight, bias, residual, _ = args
    nb, kb, b, ci = data
    ob, _, co, _ = weight
    x = packing.unpack_dense_data(inputs[0])
    wt = packing.unpack_weight(inputs[1], (ob * co, kb * ci))
    rest = inputs[2:]
    bv = _unbias(rest.pop(0)) if bias else None
    rv = packing.unpack_dense_data(rest.pop(0)) if residual else None
    y = T.dense_reference(x, wt, _tail(bias, residual), bias=bv, residual=rv)
    return [packing.pack_dense_data(y, b, co)]


@template("dense_packed.vdla", reference=_dense_reference)
def dense_packed(data: list[int], weight: list[int], bias: bool = False, residual: bool = False,
                 config: str = "default") -> tuple[Any, list[Any]]:
    cfg_hw = preset(config)
    D = te.placeholder(tuple(data), "int8", name="data")
    W = te.placeholder(tuple(weight), "int8", name="weight")
    nb, kb, b, ci = data
    ob, _, co, _ = weight
    B, R = _extras((nb, ob, b, co), ob, b, co, bias, residual)
    out = T.dense_packed(D, W, _tail(bias, residual), bias=B, residual=R, config=cfg_hw)
    _flop(get_config(), out, kb * ci)
    s = schedule_hand(T.schedule_dense_packed, out, cfg_hw)
    return _task(s, cfg_hw, D, W, B, R, out)
