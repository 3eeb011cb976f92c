"""conv2d_transpose (DCGAN) and grouped conv2d (MobileNet-G) on the VDLA target equal numpy
int8 references bit-exactly on the golden simulator; conv2d_transpose skips the zeros its
input dilation inserts (the GEMM work is that of the phase sub-kernels, s^2 times less than
the dilated conv's); grouped conv with fused tails, virtual threads and other Configs."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from vdla import Device, preset
from vdla.compiler import te
from vdla.compiler.accelerator import build
from vdla.compiler.targets.vdla import VDLAError
from vdla.compiler.targets.vdla.top import (
    Knobs,
    Tail,
    conv2d_reference,
    conv2d_transpose_packed,
    conv2d_transpose_reference,
    pack_bias,
    pack_conv2d_transpose_weight,
    pack_data,
    schedule_conv2d_transpose_packed,
    transpose_geometry,
    unpack_data,
)

DEFAULT = preset("default")


def transpose_case(cfg, ic: int, oc: int, size: int, k: int, s: int, p: int, tail: Tail, knobs: Knobs,
                   seed: int = 0) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    b, ci, co = cfg.batch, cfg.block_in, cfg.block_out
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (b, ic, size, size), dtype=np.int8)
    w = rng.integers(-128, 128, (ic, oc, k, k), dtype=np.int8)  # IOHW, as PyTorch/ONNX
    bias = rng.integers(-4000, 4000, (oc,), dtype=np.int32) if tail.bias else None
    geo = transpose_geometry(size, size, k, s, p)
    wp = pack_conv2d_transpose_weight(w, s, p, co, ci)
    D = te.placeholder((1, ic // ci, size, size, b, ci), "int8", name="data")
    K = te.placeholder(wp.shape, "int8", name="kernel")
    args, arrays = [D, K], [pack_data(x, b, ci), wp]
    Bt = None
    if bias is not None:
        Bt = te.placeholder((oc // co, b, co), "int32", name="bias")
        args.append(Bt)
        arrays.append(pack_bias(bias, b, co))
    out = conv2d_transpose_packed(D, K, s, p, k, tail, bias=Bt, config=cfg)
    sch = schedule_conv2d_transpose_packed(out, knobs, config=cfg)
    f = build(sch, [*args, out], config=cfg)
    o = np.zeros(tuple(int(v.value) for v in out.shape), np.int8)
    report = f(Device("fsim", config=cfg), *arrays, o)
    got = unpack_data(o.reshape(o.shape[0], o.shape[1], geo["oh"], geo["ow"], b, co))  # 8-D is the 6-D layout
    ref = conv2d_transpose_reference(x, w, s, p, tail, bias)
    return {"got": got, "ref": ref, "report": report, "f": f, "knobs": sch.vdla_knobs, "geo": geo}


#: DCGAN generator layers (VTA's tune_conv2d_transpose DCGAN.CT1-3 and this kit's dcgan_generator):
#: 4x4 kernels, stride 2, padding 1, full size; deconv1 (1x1 noise -> 4x4, stride 1, nz 100 -> 112).
DCGAN = [
    ("CT1", 1024, 512, 4, 2, 1),
    ("CT2", 512, 256, 8, 2, 1),
    ("CT3", 256, 128, 16, 2, 1),
    ("deconv1", 112, 512, 1, 1, 0),
]


def test_transpose_reference_is_dilate_pad_conv() -> None:
    """The reference (scatter form) equals VTA's formulation: dilate by s, pad k-1-p, conv with
    the flipped, transposed kernel."""
    rng = np.random.default_rng(5)
    for ic, oc, h, k, s, p in [(3, 2, 4, 4, 2, 1), (2, 3, 3, 5, 3, 1), (2, 2, 1, 4, 1, 0), (2, 2, 3, 3, 3, 0)]:
        x = rng.integers(-128, 128, (1, ic, h, h), dtype=np.int8)
        w = rng.integers(-128, 128, (ic, oc, k, k), dtype=np.int8)
        dil = np.zeros((1, ic, (h - 1) * s + 1, (h - 1) * s + 1), np.int8)
        dil[:, :, ::s, ::s] = x
        wf = np.ascontiguousarray(w.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1])
        no_tail = Tail(clip=None)
        assert np.array_equal(conv2d_reference(dil, wf, 1, k - 1 - p, no_tail),
                              conv2d_transpose_reference(x, w, s, p, no_tail))


@pytest.mark.parametrize("ic,oc,size,s,p", [d[1:] for d in DCGAN], ids=[d[0] for d in DCGAN])
def test_dcgan_conv2d_transpose_bit_exact(ic: int, oc: int, size: int, s: int, p: int) -> None:
    r = transpose_case(DEFAULT, ic, oc, size, 4, s, p, Tail(bias=True, shift=10, clip=(0, 127)), Knobs())
    np.testing.assert_array_equal(r["got"], r["ref"])
    assert r["f"].check_tokens().ok
    # zero rows/columns skipped: GEMM uop-iterations = the phase sub-kernels' work, 1/s^2 of
    # the dilated conv's (every output pixel x every tap x every input block)
    geo = r["geo"]
    dilated = (oc // 16) * geo["oh"] * geo["ow"] * (ic // 16) * 4 * 4
    assert r["report"].counters["gemm_counter"] == dilated // (s * s)


@pytest.mark.parametrize("k,s,p", [(4, 2, 1), (5, 3, 1), (3, 3, 0), (2, 2, 0)], ids=["k4s2", "k5s3", "k3s3", "k2s2"])
@pytest.mark.parametrize("knobs", [Knobs(), Knobs(oc_nthread=2), Knobs(h_nthread=2)], ids=["1t", "oc2", "h2"])
def test_conv2d_transpose_kernels_and_threads(k: int, s: int, p: int, knobs: Knobs) -> None:
    """Kernel sizes that stride divides and does not (zero-padded taps), virtual threads."""
    size = 4 if k != 5 else 2
    oh = transpose_geometry(size, size, k, s, p)["oh"] // s
    if knobs.h_nthread == 2 and oh % 2:
        pytest.skip(f"{oh} phase rows do not split over two threads")
    r = transpose_case(DEFAULT, 32, 32, size, k, s, p, Tail(bias=True, shift=9), knobs, seed=k)
    np.testing.assert_array_equal(r["got"], r["ref"])


def test_conv2d_transpose_two_threads_reduce_cycles() -> None:
    one = transpose_case(DEFAULT, 512, 256, 8, 4, 2, 1, Tail(shift=10), Knobs())
    two = transpose_case(DEFAULT, 512, 256, 8, 4, 2, 1, Tail(shift=10), Knobs(vthreads=2))
    np.testing.assert_array_equal(two["got"], two["ref"])
    assert two["report"].cycles < one["report"].cycles


@pytest.mark.parametrize("cfg", ["small", "batch2"])
def test_conv2d_transpose_other_configs(cfg: str) -> None:
    c = preset(cfg)
    r = transpose_case(c, 2 * c.block_in, 2 * c.block_out, 4, 4, 2, 1, Tail(bias=True, shift=6), Knobs(vthreads=2))
    np.testing.assert_array_equal(r["got"], r["ref"])


def test_conv2d_transpose_errors() -> None:
    with pytest.raises(VDLAError, match="not a multiple of the stride"):
        transpose_geometry(4, 4, 3, 2, 1)  # output 7x7 does not split into stride-2 phases
    D = te.placeholder((1, 2, 4, 4, 1, 16), "int8", name="data")
    K = te.placeholder((2, 2, 2, 2, 4, 4, 16, 16), "int8", name="kernel")  # a 4x4 conv's packing, not a transpose's
    with pytest.raises(VDLAError, match="per-phase packing"):
        conv2d_transpose_packed(D, K, 2, 1, 4)
