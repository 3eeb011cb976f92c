"""Every tutorial in docs/tutorials runs and reaches its last check (each prints "<name>: OK")."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

TUTORIALS = sorted((Path(__file__).resolve().parents[1] / "docs" / "tutorials").glob("*.py"))


def test_tutorials_exist():
    names = {p.stem for p in TUTORIALS}
    assert {"tensor_expr_get_started", "schedule_primitives", "tensorize", "vdla_matrix_multiply",
            "vdla_conv_vthread"} <= names


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs(path, capsys):
    runpy.run_path(str(path), run_name="__main__")
    assert f"{path.stem}: OK" in capsys.readouterr().out
