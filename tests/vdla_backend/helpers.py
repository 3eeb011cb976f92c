"""Build-and-run helpers for the VDLA back-end tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from vdla import Device
from vdla.compiler import te
from vdla.compiler.vdla import build
from vdla.compiler.vdla.topi import (
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


def conv_case(cfg: Config, ic: int, oc: int, size: int, k: int, stride: int, pad: int, tail: Tail,
              knobs: Knobs, seed: int = 0) -> dict[str, Any]:
    """Build, run on fsim and compare with numpy; returns result, report and function."""
    b, ci, co = cfg.batch, cfg.block_in, cfg.block_out
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (b, ic, size, size), dtype=np.int8)
    w = rng.integers(-128, 128, (oc, ic, k, k), dtype=np.int8)
    bias = rng.integers(-4000, 4000, (oc,), dtype=np.int32) if tail.bias else None
    oh = (size + 2 * pad - k) // stride + 1
    res = rng.integers(-128, 128, (b, oc, oh, oh), dtype=np.int8) if tail.residual else None
    D = te.placeholder((1, ic // ci, size, size, b, ci), "int8", name="data")
    K = te.placeholder((oc // co, ic // ci, k, k, co, ci), "int8", name="kernel")
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
    out = conv2d_packed(D, K, stride, pad, tail, bias=Bt, residual=Rt, config=cfg)
    s = schedule_conv2d_packed(out, knobs, config=cfg)
    f = build(s, [*args, out], config=cfg)
    o = np.zeros(tuple(int(v.value) for v in out.shape), np.int8)
    report = f(Device("fsim", config=cfg), *arrays, o)
    ref = conv2d_reference(x, w, stride, pad, tail, bias=bias, residual=res)
    return {"got": unpack_data(o), "ref": ref, "report": report, "f": f, "s": s, "arrays": [*arrays, o]}
