"""Virtual threads overlap load and compute; schedules the hardware cannot run fail at
build time naming the stage, the buffer and the limit; the public API (vdla.build /
vdla.lower with target "vdla"), disassembly, token checking, save/load."""
from __future__ import annotations

import numpy as np
import pytest

import vdla
from vdla import Device, preset
from vdla.compiler import te
from vdla.compiler.targets.vdla import VDLAFunction
from vdla.compiler.targets.vdla.top import Knobs, Tail, conv2d_packed, schedule_conv2d_packed

DEFAULT = preset("default")


def _small_conv(knobs: Knobs, tail: Tail | None = None):  # type: ignore[no-untyped-def]
    tail = tail or Tail(shift=8)
    D = te.placeholder((1, 2, 8, 8, 1, 16), "int8", name="data")
    K = te.placeholder((2, 2, 3, 3, 16, 16), "int8", name="kernel")
    out = conv2d_packed(D, K, 1, 1, tail)
    return schedule_conv2d_packed(out, knobs), [D, K, out]


def test_public_api_lower_build_disassemble_save_load(tmp_path) -> None:  # type: ignore[no-untyped-def]
    s, args = _small_conv(Knobs(oc_nthread=2))
    text = str(vdla.lower(s, args, target="vdla", config=DEFAULT))
    for word in ("VDLALoadBuffer2D", "VDLAStoreBuffer2D", "VDLAGemm", "VDLAAlu", "kernel", "virtual_thread"):
        assert word in text
    f = vdla.build(s, args, target="vdla", config=DEFAULT)
    assert isinstance(f, VDLAFunction)
    asm = f.disassemble()
    assert "GEMM" in asm and "ALU" in asm and "STORE" in asm and "FINISH" in asm
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 2, 8, 8, 1, 16), dtype=np.int8)
    w = rng.integers(-128, 128, (2, 2, 3, 3, 16, 16), dtype=np.int8)
    o1 = np.zeros((1, 2, 8, 8, 1, 16), np.int8)
    rep = f(Device("fsim"), x, w, o1)
    assert rep.cycles > 0 and f.last_report is rep
    path = tmp_path / "conv.vdlaf"
    f.save(path)
    g = VDLAFunction.load(path)  # no recompilation: the stream comes from the file
    o2 = np.zeros_like(o1)
    g(Device("fsim"), x, w, o2)
    np.testing.assert_array_equal(o1, o2)
    assert np.array_equal(g.program.insns, f.program.insns)
    with pytest.raises(TypeError, match="expected int8"):
        f(Device("fsim"), x.astype(np.int16), w, o1)


@pytest.fixture(scope="module")
def conv() -> VDLAFunction:
    s, args = _small_conv(Knobs())
    return vdla.build(s, args, target="vdla", config=DEFAULT)


X = np.zeros((1, 2, 8, 8, 1, 16), np.int8)
W = np.zeros((2, 2, 3, 3, 16, 16), np.int8)
OUT = np.zeros((1, 2, 8, 8, 1, 16), np.int8)
ARRAYS = "main() takes 3 arrays (data, kernel, conv2d_out)"
DEV = object()  # a Device, made in the test


@pytest.mark.parametrize(("args", "message"), [
    # a device and too few arrays: how many it takes, their names, how many came, which are missing
    ((DEV, X, W), f"{ARRAYS} after the device, got 2 (missing conv2d_out)"),
    ((DEV, X), f"{ARRAYS} after the device, got 1 (missing kernel, conv2d_out)"),
    ((DEV,), f"{ARRAYS} after the device, got 0 (missing data, kernel, conv2d_out)"),
    ((DEV, X, W, OUT, OUT), f"{ARRAYS} after the device, got 4 (1 too many)"),
    # TVM's way, no device: the same
    ((X, W), f"{ARRAYS}, got 2 (missing conv2d_out)"),
    ((), f"{ARRAYS}, got 0 (missing data, kernel, conv2d_out)"),
    ((X, X, W, OUT), f"{ARRAYS}; the extra first argument must be a device, got ndarray"),
    ((DEV, X, W, "out"), "argument 2 ('conv2d_out') must be a numpy array or an NDArray, got str"),
])
def test_call_with_wrong_arguments_names_them(conv: VDLAFunction, args: tuple, message: str) -> None:
    args = tuple(Device("fsim") if a is DEV else a for a in args)
    with pytest.raises(TypeError) as e:
        conv(*args)
    assert str(e.value) == message
