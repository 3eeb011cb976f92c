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
