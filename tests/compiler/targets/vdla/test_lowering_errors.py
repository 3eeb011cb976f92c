"""Virtual threads overlap load and compute; schedules the hardware cannot run fail at
build time naming the stage, the buffer and the limit; the public API (vdla.build /
vdla.lower with target "vdla"), disassembly, token checking, save/load."""
from __future__ import annotations

import numpy as np
import pytest
from support.templates import alu_pair_schedule

import vdla
from vdla import Device, preset
from vdla.compiler import te
from vdla.compiler.targets.vdla import VDLAError, get_env, shift_right
from vdla.compiler.targets.vdla.top import Knobs, Tail, conv2d_packed, schedule_conv2d_packed

DEFAULT = preset("default")


def _small_conv(knobs: Knobs, tail: Tail | None = None):  # type: ignore[no-untyped-def]
    tail = tail or Tail(shift=8)
    D = te.placeholder((1, 2, 8, 8, 1, 16), "int8", name="data")
    K = te.placeholder((2, 2, 3, 3, 16, 16), "int8", name="kernel")
    out = conv2d_packed(D, K, 1, 1, tail)
    return schedule_conv2d_packed(out, knobs), [D, K, out]


def test_error_tile_larger_than_buffer() -> None:
    s, args = _small_conv(Knobs(tile_co=2, tile_h=8, tile_w=8, tile_ci=2, oc_nthread=1))
    cfg = DEFAULT.replace(name="tinyinp", inp_buff_size=1024)  # 64 INP elements
    with pytest.raises(VDLAError, match=r"INP buffer overflow: stages need 200 elements.*has 64.*conv2d_pad 200"):
        vdla.build(s, args, target="vdla", config=cfg)


def test_error_more_than_two_folded_loops() -> None:
    env = get_env(DEFAULT)
    A = te.placeholder((4, 3, 5, 16), "int32", name="A")
    B = te.placeholder((3, 4, 5, 16), "int32", name="B")
    res = te.compute((4, 3, 5, 16), lambda i, j, k, m: A[i, j, k, m] + B[j, i, k, m], name="res")
    out = te.compute((4, 3, 5, 16), lambda *i: res[i].astype("int8"), name="out")
    s = alu_pair_schedule(env, A, B, res, out)
    with pytest.raises(VDLAError, match=r"stage 'res': alu: 3 loops remain.*at most 2"):
        vdla.build(s, [A, B, out], target="vdla")


def test_alu_only_stage_runs() -> None:
    """An element-wise ALU stage on its own (residual add + ReLU on loaded tensors)."""
    env = get_env(DEFAULT)
    A = te.placeholder((4, 6, 16), "int32", name="A")
    B = te.placeholder((4, 6, 16), "int8", name="B")
    res = te.compute((4, 6, 16), lambda i, j, k: (A[i, j, k] * 2) + (B[i, j, k].astype("int32") * 3), name="res")
    out = te.compute((4, 6, 16), lambda *i: res[i].astype("int8"), name="out")
    s = alu_pair_schedule(env, A, B, res, out)
    with pytest.raises(VDLAError, match="not a chain"):
        vdla.build(s, [A, B, out], target="vdla")  # (A + B*3): B*3 is a second expression
    res2 = te.compute(
        (4, 6, 16), lambda i, j, k: shift_right(te.max(A[i, j, k] + B[i, j, k].astype("int32"), 0), 1), name="r2"
    )
    out2 = te.compute((4, 6, 16), lambda *i: res2[i].astype("int8"), name="out2")
    s = alu_pair_schedule(env, A, B, res2, out2)
    f = vdla.build(s, [A, B, out2], target="vdla")
    rng = np.random.default_rng(3)
    a = rng.integers(-1000, 1000, (4, 6, 16), dtype=np.int32)
    b = rng.integers(-128, 128, (4, 6, 16), dtype=np.int8)
    o = np.zeros((4, 6, 16), np.int8)
    f(Device("fsim"), a, b, o)
    np.testing.assert_array_equal(o, (np.maximum(a + b.astype(np.int32), 0) >> 1).astype(np.int8))


def test_error_consecutive_uops_write_one_accumulator_row() -> None:
    s, args = _small_conv(Knobs(tile_co=1, tile_h=1, tile_w=1, tile_ci=2))
    with pytest.raises(VDLAError, match=r"stage 'conv2d': GEMM.*micro-ops 0 and 1 both write accumulator row"):
        vdla.build(s, args, target="vdla")


def test_error_2d_pattern_not_found() -> None:
    s, args = _small_conv(Knobs(tile_h=4))
    pad = next(st for st in s.stages if st.name == "conv2d_pad")
    n, c, y, x, b, ci = pad.op.axis
    pad.reorder(n, c, x, y, b, ci)  # rows innermost: neither DRAM nor SRAM is contiguous
    with pytest.raises(VDLAError, match=r"stage 'conv2d_pad': dma_copy: 2D pattern not found"):
        vdla.build(s, args, target="vdla")


def test_error_not_lowered_names_the_stage() -> None:
    s, args = _small_conv(Knobs())
    out = next(st for st in s.stages if st.name == "conv2d_out")
    out.iter_var_attrs.clear()  # forget the dma_copy pragma of the store
    with pytest.raises(VDLAError, match=r"stage 'conv2d_out'.*not lowered to VDLA.*dma_copy"):
        vdla.build(s, args, target="vdla")
