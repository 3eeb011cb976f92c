"""Packed int8 conv2d and dense on the VDLA target equal the numpy reference bit-exactly
on the golden simulator: every ResNet-18 layer C2-C12 at reduced spatial size, fused
ALU tails (bias, requantise shift + clip, residual), 1x1/3x3/7x7, other Configs."""
from __future__ import annotations

import numpy as np
import pytest
from support.templates import conv_case

from vdla import preset
from vdla.compiler.targets.vdla.top import (
    Knobs,
    Tail,
)
from vdla.compiler.topi.workloads import OFFLOADED

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
