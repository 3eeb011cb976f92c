"""Packed int8 conv2d and dense on the VDLA target equal the numpy reference bit-exactly
on the golden simulator: every ResNet-18 layer C2-C12 at reduced spatial size, fused
ALU tails (bias, requantise shift + clip, residual), 1x1/3x3/7x7, other Configs."""

from __future__ import annotations

import numpy as np
import pytest

from vdla import Device, preset
from vdla.compiler import te
from vdla.compiler.targets.vdla import build
from vdla.compiler.targets.vdla.resnet import OFFLOADED
from vdla.compiler.targets.vdla.topi import (
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

from .helpers import conv_case

DEFAULT = preset("default")


@pytest.mark.parametrize("layer", OFFLOADED, ids=[lay.name for lay in OFFLOADED])
def test_resnet_layer_bit_exact(layer) -> None:  # type: ignore[no-untyped-def]
    size = 8 if layer.size > 8 else layer.size  # reduced spatial size, full channel counts
    tail = Tail(bias=True, shift=8, clip=(0, 127))  # conv + bias, requantise, ReLU
    r = conv_case(DEFAULT, layer.ic, layer.oc, size, layer.k, layer.stride, layer.pad, tail, Knobs())
    np.testing.assert_array_equal(r["got"], r["ref"])
    assert r["f"].check_tokens().ok


@pytest.mark.parametrize("layer", [OFFLOADED[0], OFFLOADED[5], OFFLOADED[10]], ids=["C2", "C7", "C12"])
@pytest.mark.parametrize("threads", ["oc", "h"])
def test_resnet_layer_two_virtual_threads(layer, threads: str) -> None:  # type: ignore[no-untyped-def]
    size = 8 if layer.size > 8 else layer.size
    oh = (size + 2 * layer.pad - layer.k) // layer.stride + 1
    if threads == "h" and oh % 2:
        pytest.skip(f"{oh} output rows do not split over two threads")
    knobs = Knobs(oc_nthread=2) if threads == "oc" else Knobs(h_nthread=2)
    r = conv_case(DEFAULT, layer.ic, layer.oc, size, layer.k, layer.stride, layer.pad, Tail(shift=9), knobs)
    np.testing.assert_array_equal(r["got"], r["ref"])


@pytest.mark.parametrize(
    "k,stride,pad", [(7, 2, 3), (3, 2, 1), (1, 1, 0), (3, 1, 0)], ids=["7x7s2", "3x3s2", "1x1", "3x3valid"]
)
def test_conv_kernels_and_residual(k: int, stride: int, pad: int) -> None:
    tail = Tail(bias=True, shift=7, residual=True, clip=(-100, 100))
    r = conv_case(DEFAULT, 32, 32, 10, k, stride, pad, tail, Knobs(vthreads=2))
    np.testing.assert_array_equal(r["got"], r["ref"])


@pytest.mark.parametrize("cfg", ["batch2", "small"])
def test_conv_other_configs(cfg: str) -> None:
    c = preset(cfg)
    tail = Tail(bias=True, shift=6, residual=True)
    r = conv_case(c, 2 * c.block_in, 3 * c.block_out, 6, 3, 1, 1, tail, Knobs(vthreads=2))
    np.testing.assert_array_equal(r["got"], r["ref"])


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
