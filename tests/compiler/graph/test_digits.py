"""The trained digits CNN: committed weights, `vdla run digits` accuracy floor and bit-exactness."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from vdla.compiler.graph import GraphError, run
from vdla.compiler.graph.digits import accuracy, digits_cnn, load_split, trained_weights, weight_shapes
from vdla.compiler.graph.job import ACCURACY_FLOOR, run_job

_MISSING = [m for m in ("sklearn", "onnx") if importlib.util.find_spec(m) is None]
needs_data = pytest.mark.skipif(bool(_MISSING), reason=f"needs {', '.join(_MISSING)} (pip install 'vdla[digits]')")


@needs_data
def test_split_and_weights():
    xtr, ytr, xte, yte = load_split()
    assert xtr.shape == (1437, 1, 8, 8) and xte.shape == (360, 1, 8, 8)
    assert xte.dtype == np.float32 and 0 <= xte.min() and xte.max() <= 1
    assert sorted(np.unique(yte)) == list(range(10))
    w = trained_weights()
    assert {k: v.shape for k, v in w.items()} == weight_shapes()


@needs_data
def test_trained_fp32_accuracy_on_held_out():
    _, _, xte, yte = load_split()
    (out,) = run(digits_cnn(len(xte)), {"image": xte}, check=False)
    assert accuracy(out, yte) >= 0.97


@needs_data
def test_vdla_run_digits_reduced():
    """int8 on VDLA (every conv and dense) within the floor of fp32, bit-exact vs the int8 reference."""
    res = run_job("digits", "fsim", reduced=True)
    by = {c.name.split(" (")[0].split(" on ")[0]: c for c in res.checks}
    assert by["int8 output vs numpy int8 reference"].ok, res.table()
    acc = next(c for c in res.checks if c.name.startswith("accuracy"))
    assert acc.ok, acc.detail
    fp, q = (float(t.split()[-1].rstrip("%,")) for t in acc.detail.split(", ")[:2])
    assert q >= fp - 100 * ACCURACY_FLOOR
    assert {r.node for r in res.layers if r.target == "vdla"} == {
        "conv1.relu.requant", "conv2.relu.requant", "fc1.relu.requant", "fc2.requant"}
    assert res.snr and min(db for _, _, db in res.snr) > 25
    assert "per-layer int8 vs fp32 SNR" in res.table()


def test_missing_scikit_learn_is_a_clear_error(monkeypatch, capsys):
    from vdla.cli import main

    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn now raises ImportError
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(GraphError, match=r"needs scikit-learn .*pip install 'vdla\[digits\]'"):
        load_split()
    assert main(["run", "digits", "-q"]) == 2
    assert "needs scikit-learn" in capsys.readouterr().err


def test_digits_cnn_rejects_bad_weights():
    with pytest.raises(GraphError, match=r"'conv1.weight' must have shape \(16, 1, 3, 3\)"):
        digits_cnn(1, {"conv1.weight": np.zeros((3, 3), np.float32)})


@needs_data
def test_compiled_digits_file_still_reports_accuracy(tmp_path):
    from vdla.compiler.graph.build import build_model
    from vdla.compiler.graph.zoo import load_model
    from vdla.config import Config

    path = build_model(load_model("digits", reduced=True), Config()).save(tmp_path / "digits.vdla")
    res = run_job(str(path), "fsim")
    assert res.compiled_from_file and res.ok, res.table()
    assert any(c.name.startswith("accuracy on 60 held-out images") and c.ok for c in res.checks)
