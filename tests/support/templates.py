"""VDLA template test helpers: build a template for a layer, run it, compare with the numpy reference."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from vdla import Device
from vdla.compiler import te
from vdla.compiler.accelerator import build
from vdla.compiler.targets.vdla.top import (
    Knobs,
    Tail,
    conv2d_packed,
    conv2d_reference,
    pack_bias,
    pack_data,
    pack_weight,
    schedule_conv2d_packed,
    unpack_data,
)
from vdla.config import Config


def conv_operands(cfg: Config, ic: int, oc: int, size: int, k: int, stride: int, pad: int, tail: Tail,
                  seed: int = 0, groups: int = 1) -> SimpleNamespace:
    """Random int8 input and weights (bias, residual when `tail` uses them) for a conv with
    `groups` groups, with the packed placeholders (``args``) and arrays (``arrays``) its VDLA
    kernel takes (the output not included) and the output size ``oh``."""
    b, ci, co = cfg.batch, cfg.block_in, cfg.block_out
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (b, ic, size, size), dtype=np.int8)
    w = rng.integers(-128, 128, (oc, ic // groups, k, k), dtype=np.int8)
    bias = rng.integers(-4000, 4000, (oc,), dtype=np.int32) if tail.bias else None
    oh = (size + 2 * pad - k) // stride + 1
    res = rng.integers(-128, 128, (b, oc, oh, oh), dtype=np.int8) if tail.residual else None
    D = te.placeholder((1, ic // ci, size, size, b, ci), "int8", name="data")
    K = te.placeholder((oc // co, ic // groups // ci, k, k, co, ci), "int8", name="kernel")
    args, arrays = [D, K], [pack_data(x, b, ci), pack_weight(w, co, ci)]
    Bt = Rt = None
    if bias is not None:
        Bt = te.placeholder((oc // co, b, co), "int32", name="bias")
        args.append(Bt)
        arrays.append(pack_bias(bias, b, co))
    if res is not None:
        Rt = te.placeholder((1, oc // co, oh, oh, b, co), "int8", name="residual")
        args.append(Rt)
        arrays.append(pack_data(res, b, co))
    return SimpleNamespace(x=x, w=w, bias=bias, res=res, oh=oh, D=D, K=K, Bt=Bt, Rt=Rt, args=args, arrays=arrays)


def conv_case(cfg: Config, ic: int, oc: int, size: int, k: int, stride: int, pad: int, tail: Tail,
              knobs: Knobs, seed: int = 0) -> dict[str, Any]:
    """Build, run on fsim and compare with numpy; returns result, report and function."""
    op = conv_operands(cfg, ic, oc, size, k, stride, pad, tail, seed)
    out = conv2d_packed(op.D, op.K, stride, pad, tail, bias=op.Bt, residual=op.Rt, config=cfg)
    s = schedule_conv2d_packed(out, knobs, config=cfg)
    f = build(s, [*op.args, out], config=cfg)
    o = np.zeros(tuple(int(v.value) for v in out.shape), np.int8)
    report = f(Device("fsim", config=cfg), *op.arrays, o)
    ref = conv2d_reference(op.x, op.w, stride, pad, tail, bias=op.bias, residual=op.res)
    return {"got": unpack_data(o), "ref": ref, "report": report, "f": f, "s": s, "arrays": [*op.arrays, o]}


def alu_pair_schedule(env: Any, A: te.Tensor, B: te.Tensor, res: te.Tensor, out: te.Tensor) -> Any:
    """The schedule of ``out = cast(res(A, B))`` on the tensor ALU: both operands DMA'd into the
    accumulator buffer, ``res`` computed there by the ALU, ``out`` stored by DMA."""
    s = te.create_schedule(out.op)
    ca = s.cache_read(A, env.acc_scope, [s[res]])
    cb = s.cache_read(B, env.acc_scope, [s[res]])
    s[res].set_scope(env.acc_scope)
    for t in (ca, cb):
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    s[res].pragma(s[res].op.axis[0], env.alu)
    s[out].pragma(s[out].op.axis[0], env.dma_copy)
    return s
