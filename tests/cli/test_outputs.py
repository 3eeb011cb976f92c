"""``vdla run --plot DIR`` and ``--waves FILE``: the files appear, the paths are printed, misuse is named."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.cli import main
from vdla.runtime import AluOp, CommandStream, Device, Loop, Mem, Stage, UopKernel


@pytest.fixture
def program_file(tmp_path):
    dev = Device("fsim", config="small", dram_size=1 << 16)
    c = dev.config
    x = dev.array(np.arange(8 * c.batch * c.block_out, dtype=np.int32))
    y = dev.alloc(8 * c.out_elem_bytes)
    s = CommandStream(c, "shift8")
    s.load_2d(Mem.ACC, sram=0, src=x, x_size=8)
    s.alu(UopKernel.single(dst=0, loops=(Loop(8, dst=1),)), AluOp.SHR, 2)
    s.dep_push(Stage.COMPUTE, Stage.STORE)
    s.dep_pop(Stage.COMPUTE, Stage.STORE)
    s.store_2d(sram=0, dst=y, x_size=8)
    path = tmp_path / "shift8.vdla"
    s.finish().save(path)
    return path


def test_plot_of_a_program(program_file, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "plots"
    assert main(["run", str(program_file), "--plot", str(out)]) == 0
    err = capsys.readouterr().err
    assert "no roofline for shift8 (no GEMM operations)" in err  # an ALU-only program
    assert f"plots: {out / 'timeline.png'}" in err
    assert (out / "timeline.png").read_bytes()[:4] == b"\x89PNG"
    assert not (out / "roofline.png").exists()


def test_waves_of_a_program_on_pysim(program_file, tmp_path, capsys):
    vcd = tmp_path / "w" / "shift8.vcd"
    assert main(["run", str(program_file), "--device", "pysim", "--waves", str(vcd)]) == 0
    err = capsys.readouterr().err
    size = vcd.stat().st_size
    assert f"waves: {vcd} (VCD, {size:,} bytes)" in err and size > 1000
    assert "$enddefinitions" in vcd.read_text()


@pytest.mark.parametrize("argv,message", [
    (["--waves", "x.vcd"], "--waves needs an RTL device (pysim, verilator), not --device fsim"),
    (["--device", "pysim", "--waves", "x.fst"], "cannot write x.fst: Amaranth's simulator writes VCD only; ask for x.vcd"),
    (["--device", "pysim", "--waves", "x.wav"], "name it .vcd or .fst"),
])
def test_waves_misuse_is_one_clear_line(program_file, tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(program_file), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vdla run: error:") and message in err and err.count("\n") == 1
    assert not (tmp_path / "x.vcd").exists() and not (tmp_path / "x.fst").exists()
