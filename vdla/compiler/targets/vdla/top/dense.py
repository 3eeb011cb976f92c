"""Packed int8 dense on VDLA: ``dense_packed`` (data ``(N/b, K/c, b, c)``, weights
``(O/c, K/c, c_o, c_i)``) with its fused ALU tail, and its schedule.
"""

from __future__ import annotations

from typing import Any

from .... import te
from ....schedule.primitives import Schedule
from ....topi.util import const_shape
from ..env import VDLAError, get_env
from .common import (
    Knobs,
    Tail,
    _blocks_match,
    _buffer_stages,
    _epilogue,
    _place_loads_and_gemm,
    _place_tail,
    _stages,
    _tail_inputs,
)
from .tiling import _pick_dense_tiles
from .tuning import define_dense_space, record_fallback, resolve

__all__ = ["dense_packed", "schedule_dense_packed"]


def dense_packed(
    data: te.Tensor,
    weight: te.Tensor,
    tail: Tail | None = None,
    bias: te.Tensor | None = None,
    residual: te.Tensor | None = None,
    config: Any = None,
    name: str = "dense",
) -> te.Tensor:
    """Packed int8 dense ``(N/b, K/c, b, c) x (O/c, K/c, c_o, c_i) -> (N/b, O/c, b, c_o)``."""
    env = get_env(config)
    tail = tail or Tail()
    nb, kb, b, ci = const_shape(data)
    ob, kkb, co, kci = const_shape(weight)
    if not _blocks_match(env, b, ci, co, kci) or kkb != kb:
        raise VDLAError(f"dense_packed: data {tuple(data.shape)} / weight {tuple(weight.shape)} do not match the config")
    rk = te.reduce_axis((0, kb), name="rk")
    rci = te.reduce_axis((0, ci), name="rci")
    adt = env.acc_dtype
    acc = te.compute(
        (nb, ob, b, co),
        lambda n, o, bi, oi: te.sum(
            data[n, rk, bi, rci].astype(adt) * weight[o, rk, oi, rci].astype(adt), axis=[rk, rci]
        ),
        name=name,
        tag="vdla_dense",
        attrs={"workload": ["dense_packed.vdla", [list(const_shape(data)), list(const_shape(weight)),
                                                  bias is not None, residual is not None, env.config.name]]},
    )
    return _epilogue(env, acc, tail, bias, residual, name)


def schedule_dense_packed(out: te.Tensor, knobs: Knobs | None = None, config: Any = None) -> Schedule:
    env = get_env(config)
    k = knobs or Knobs()
    acc_op, alu_op, extra = _stages(out)
    s = te.create_schedule(out.op)
    data, weight = acc_op.input_tensors()
    shape = const_shape(out)
    kb = const_shape(data)[1]
    cfg, tuned = resolve(acc_op, knobs, lambda cfg: define_dense_space(cfg, shape[1], kb))
    k = _pick_dense_tiles(env, shape, kb, tuned or k, *_tail_inputs(extra, out))
    record_fallback(cfg, k, {"tile_co": shape[1], "tile_ci": kb})
    cdata, cwgt, cextra = _buffer_stages(s, env, acc_op, alu_op, data, weight, extra)
    so = s[out]
    n, o, bi, oi = so.op.axis
    n0, n1 = so.split(n, factor=k.tile_b)
    o0, o1 = so.split(o, factor=k.tile_co)
    so.reorder(n0, o0, n1, o1, bi, oi)
    if k.oc_nthread > 1:
        o0, vt = so.split(o0, factor=k.oc_nthread)
        so.reorder(vt, n0, o0)
        so.bind(vt, te.thread_axis("cthread"))
    _place_tail(s, env, so, o0, n1, acc_op, alu_op, cextra)
    sc = s[acc_op]
    cn, co_, cbi, coi = sc.op.axis
    rk, rci = sc.op.reduce_axis
    rk0, rk1 = sc.split(rk, factor=k.tile_ci)
    sc.reorder(rk0, cn, co_, rk1, cbi, coi, rci)
    _place_loads_and_gemm(s, env, sc, rk0, (cdata, cwgt), cbi)
    s.vdla_knobs = k  # type: ignore[attr-defined]
    return s
