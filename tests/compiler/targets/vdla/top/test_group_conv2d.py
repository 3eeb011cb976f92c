"""conv2d_transpose (DCGAN) and grouped conv2d (MobileNet-G) on the VDLA target equal numpy
int8 references bit-exactly on the golden simulator; conv2d_transpose skips the zeros its
input dilation inserts (the GEMM work is that of the phase sub-kernels, s^2 times less than
the dilated conv's); grouped conv with fused tails, virtual threads and other Configs."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.templates import conv_operands

from vdla import Device, preset
from vdla.compiler import te
from vdla.compiler.accelerator import build
from vdla.compiler.targets.vdla import VDLAError
from vdla.compiler.targets.vdla.top import (
    Knobs,
    Tail,
    group_conv2d_packed,
    group_conv2d_reference,
    schedule_group_conv2d_packed,
    unpack_data,
)

DEFAULT = preset("default")


def group_case(cfg, ic: int, oc: int, groups: int, size: int, k: int, s: int, p: int, tail: Tail, knobs: Knobs,
               seed: int = 0) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    b, co = cfg.batch, cfg.block_out
    op = conv_operands(cfg, ic, oc, size, k, s, p, tail, seed, groups=groups)
    x, w, bias, res, oh, args, arrays = op.x, op.w, op.bias, op.res, op.oh, op.args, op.arrays
    out = group_conv2d_packed(op.D, op.K, groups, s, p, tail, bias=op.Bt, residual=op.Rt, config=cfg)
    sch = schedule_group_conv2d_packed(out, knobs, config=cfg)
    f = build(sch, [*args, out], config=cfg)
    o = np.zeros(tuple(int(v.value) for v in out.shape), np.int8)
    report = f(Device("fsim", config=cfg), *arrays, o)
    got = unpack_data(o.reshape(o.shape[0], oc // co, oh, oh, b, co))  # 7-D is the 6-D layout
    ref = group_conv2d_reference(x, w, groups, s, p, tail, bias, res)
    return {"got": got, "ref": ref, "report": report, "f": f, "knobs": sch.vdla_knobs}


#: MobileNet-G layers (VTA's tune_group_conv2d mobilenet.D1-D9): 3x3, 16 channels per group,
#: spatial size reduced to at most 8.
MOBILENET_G = [
    ("D1", 32, 112, 2, 1), ("D2", 64, 112, 4, 2), ("D3", 128, 56, 8, 1), ("D4", 128, 56, 8, 2),
    ("D5", 256, 28, 16, 1), ("D6", 256, 28, 16, 2), ("D7", 512, 14, 32, 1), ("D8", 512, 14, 32, 2),
    ("D9", 1024, 7, 64, 1),
]


@pytest.mark.parametrize("c,size,groups,s", [m[1:] for m in MOBILENET_G], ids=[m[0] for m in MOBILENET_G])
def test_mobilenet_g_group_conv2d_bit_exact(c: int, size: int, groups: int, s: int) -> None:
    r = group_case(DEFAULT, c, c, groups, min(size, 8), 3, s, 1, Tail(bias=True, shift=8, clip=(0, 127)), Knobs())
    np.testing.assert_array_equal(r["got"], r["ref"])
    assert r["f"].check_tokens().ok
    oh = (min(size, 8) + 2 - 3) // s + 1
    assert r["report"].counters["gemm_counter"] == (c // 16) * oh * oh * 9  # one block in per group: no cross-group work


@pytest.mark.parametrize(
    "ic,oc,groups,k,s,knobs",
    [(64, 64, 2, 3, 1, Knobs(vthreads=2)), (64, 64, 4, 3, 2, Knobs(oc_nthread=2)), (64, 64, 4, 3, 1, Knobs(h_nthread=2)),
     (64, 128, 2, 1, 1, Knobs(oc_nthread=2)), (128, 128, 2, 3, 1, Knobs(tile_ci=2))],
    ids=["auto2", "groups-threads", "rows-threads", "1x1-oc-threads", "4-blocks-per-group"],
)
def test_group_conv2d_tails_and_threads(ic: int, oc: int, groups: int, k: int, s: int, knobs: Knobs) -> None:
    tail = Tail(bias=True, shift=8, residual=True, clip=(-100, 100))
    r = group_case(DEFAULT, ic, oc, groups, 8, k, s, k // 2, tail, knobs)
    np.testing.assert_array_equal(r["got"], r["ref"])


def test_group_conv2d_two_threads_reduce_cycles() -> None:
    args = (DEFAULT, 256, 256, 16, 8, 3, 1, 1, Tail(shift=8))
    one, two = group_case(*args, Knobs()), group_case(*args, Knobs(vthreads=2))
    np.testing.assert_array_equal(two["got"], two["ref"])
    assert two["report"].cycles < one["report"].cycles


@pytest.mark.parametrize("cfg", ["small", "batch2"])
def test_group_conv2d_other_configs(cfg: str) -> None:
    c = preset(cfg)
    r = group_case(c, 4 * c.block_in, 4 * c.block_out, 2, 6, 3, 1, 1, Tail(bias=True, shift=6), Knobs(vthreads=2))
    np.testing.assert_array_equal(r["got"], r["ref"])


def test_group_conv2d_errors() -> None:
    D = te.placeholder((1, 3, 8, 8, 1, 16), "int8", name="data")
    K = te.placeholder((2, 1, 3, 3, 16, 16), "int8", name="kernel")
    with pytest.raises(VDLAError, match="whole channel blocks per group"):
        group_conv2d_packed(D, K, 2, 1, 1)


@pytest.mark.parametrize("knobs,tile_g", [(Knobs(), None), (Knobs(oc_nthread=2, tile_g=2), 2)],
                         ids=["picked", "2-groups-2-threads"])
def test_depthwise_groups_per_tile(knobs: Knobs, tile_g: int | None) -> None:
    """Depthwise (one block per group): several groups in one tile, one GEMM / ALU op / store
    each for all of them; bit-exact, and fewer cycles than a tile per group."""
    tail = Tail(bias=True, shift=6, residual=True, clip=(0, 96))
    args = (DEFAULT, 256, 256, 16, 7, 3, 1, 1, tail)
    r = group_case(*args, knobs)
    np.testing.assert_array_equal(r["got"], r["ref"])
    assert r["f"].check_tokens().ok
    assert r["knobs"].tile_g == tile_g if tile_g else r["knobs"].tile_g > 1
    assert r["report"].counters["gemm_counter"] == 16 * 7 * 7 * 9
    if knobs == Knobs():
        one = group_case(*args, Knobs(tile_g=1, tile_h=7, tile_w=7))
        assert one["knobs"].tile_g == 1 and r["report"].cycles < one["report"].cycles
