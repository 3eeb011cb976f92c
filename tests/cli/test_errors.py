"""Every `vdla` error is one line on stderr with exit status 2 (vdla.cli.errors), naming what to fix.

Table-driven over ``vdla.cli.main(argv)``: bad model files, bad assembly, empty programs,
program files whose header is inconsistent though the CRC is right, unknown device
options, an unopenable serial port, negative sizes, an invalid program on the RTL; then
``--debug`` (the traceback) and one run of the real command in a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from vdla import isa
from vdla.cli import main
from vdla.config import PRESETS
from vdla.runtime import Program, container
from vdla.runtime.program import FORMAT_VERSION, MAGIC

C = PRESETS["small"]


def _onnx_model(path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    onnx.save(helper.make_model(g), str(path))


def _program_file(path, **header_changes):
    """A valid program file, then its header changed and the CRC recomputed (so only the fields are wrong)."""
    words = isa.encode([isa.load(isa.Mem.UOP, x_size=1, y_size=1, x_stride=1), isa.finish()], C)
    prog = Program.from_words(C, words, isa.encode_uops([isa.Uop(0, 0, 0)], C))
    header, payload = container.unpack(prog.to_bytes(), magic=MAGIC, version=FORMAT_VERSION, what="p",
                                       source="p", error=ValueError)
    header.update(header_changes)
    path.write_bytes(container.pack(MAGIC, FORMAT_VERSION, header, payload))


def _setup(tmp_path, kind):
    p = tmp_path / "f"
    if kind == "garbage.onnx":
        p = tmp_path / "bad.onnx"
        p.write_bytes(b"this is not an onnx file\x00\xff" * 10)
    elif kind == "truncated.onnx":
        p = tmp_path / "cut.onnx"
        _onnx_model(p)
        p.write_bytes(p.read_bytes()[:40])
    elif kind == "binary.s":
        p = tmp_path / "bin.s"
        p.write_bytes(bytes(range(256)))
    elif kind == "empty.s":
        p = tmp_path / "empty.s"
        p.write_text("# nothing\n")
    elif kind.startswith("header:"):
        p = tmp_path / "prog.vdla"
        _program_file(p, **json.loads(kind[len("header:"):]))
    elif kind == "good":
        p = tmp_path / "prog.vdla"
        _program_file(p)
    elif kind == "underflow":
        p = tmp_path / "under.vdla"
        Program.from_words(C, isa.encode([isa.finish(pop_prev=1)], C)).save(p)
    return str(p)


#: (argv with FILE for the prepared file, what to prepare, fragment of the one-line message)
CASES = [
    (["run", "FILE"], "garbage.onnx", "bad.onnx: not a valid ONNX model"),
    (["run", "FILE"], "truncated.onnx", "cut.onnx: not a valid ONNX model"),
    (["asm", "FILE"], "binary.s", "bin.s: not a text file"),
    (["asm", "FILE"], "empty.s", "empty.s: no instructions: a program needs at least a FINISH"),
    (["asm", "/nonexistent/x.s"], None, "No such file or directory"),
    (["run", "FILE"], 'header:{"insns": 0}', "field 'insns' = 0 must be an integer >= 1"),
    (["run", "FILE"], 'header:{"uops": -1}', "field 'uops' = -1 must be an integer >= 0"),
    (["disasm", "FILE"], 'header:{"uop_relocs": [1]}', "uop_relocs[0] = 1 names instruction 1 (FINISH), not a LOAD UOP"),
    (["run", "FILE"], 'header:{"uop_relocs": [7]}', "uop_relocs[0] = 7 is not an instruction index (0..1)"),
    (["run", "FILE"], 'header:{"uop_relocs": []}', None),  # valid: then the LOAD UOP reads absolute DRAM
    (["run", "FILE"], 'header:{"data": [[4096, 0], [0, 8]], "uops": 0}', "truncated"),
    (["run", "FILE", "--device", "fsim:nosuch"], "good", "device 'fsim:nosuch': unknown option 'nosuch'"),
    (["run", "FILE", "--device", "fsim:default"], "good", "device 'fsim:default' names config 'default'"),
    (["run", "FILE", "--device", "serial:/nonexistent/tty"], "good", "cannot open serial port '/nonexistent/tty'"),
    (["run", "FILE", "--device", "nosuch"], "good", "unknown device 'nosuch'"),
    (["run", "mlp", "--size", "-3"], None, "argument --size: --size must be >= 1, got -3"),
    (["run", "mlp", "--calib", "-1"], None, "argument --calib: --calib must be >= 1, got -1"),
    (["run", "mlp", "--seed", "x"], None, "--seed takes an integer, got 'x'"),
    (["run", "FILE", "--device", "pysim:small"], "underflow", "token underflow at cycle 0: compute instruction 0"),
]


@pytest.mark.parametrize("argv,prepare,fragment", CASES, ids=[f"{c[0][0]}-{c[1] or c[0][1]}" for c in CASES])
def test_every_error_is_one_line_and_exit_status_2(tmp_path, capsys, argv, prepare, fragment):
    argv = [_setup(tmp_path, prepare) if a == "FILE" else a for a in argv]
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse's usage errors
        rc = e.code
    err = capsys.readouterr().err
    if fragment is None:
        assert rc == 0, err
        return
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert fragment in lines[0], lines[0]


def test_debug_prints_the_traceback(tmp_path, capsys):
    path = _setup(tmp_path, "binary.s")
    assert main(["--debug", "asm", path]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1].startswith("vdla asm: error:")
    assert main(["asm", path, "--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_unexpected_error_names_its_class_and_the_debug_flag(capsys):
    from vdla.cli.errors import report

    assert report("run", KeyError("boom")) == 2
    assert capsys.readouterr().err == "vdla run: error: KeyError: 'boom' (rerun with --debug for the traceback)\n"


def test_the_command_itself(tmp_path):
    path = _setup(tmp_path, "empty.s")
    res = subprocess.run([sys.executable, "-m", "vdla.cli", "asm", path], capture_output=True, text=True,
                         check=False, timeout=120)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and "no instructions" in res.stderr, res.stderr


def test_header_fields_are_checked_by_the_loader(tmp_path):
    """The same validation from the Python API (Program.load), and a good file still loads."""
    from vdla.runtime import ProgramFileError

    good = _setup(tmp_path, "good")
    assert len(Program.load(good)) == 2
    _program_file(tmp_path / "seg.vdla", data=[[0, 4], [2, 4]], uops=-7)
    with pytest.raises(ProgramFileError, match="field 'uops' = -7"):
        Program.load(tmp_path / "seg.vdla")
    np.testing.assert_array_equal(Program.load(good).uops, isa.encode_uops([isa.Uop(0, 0, 0)], C))
