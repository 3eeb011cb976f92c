"""Models whose weights live beside them (torch.onnx's dynamo exporter writes ``model.onnx`` and
``model.onnx.data``): imported from the model's folder, wherever the current directory is; a
missing or truncated data file is one error naming it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from support.onnx_models import model, reference  # noqa: E402

from vdla.compiler.graph import run  # noqa: E402
from vdla.compiler.graph.ir import GraphError  # noqa: E402
from vdla.compiler.graph.onnx_import import from_onnx  # noqa: E402


def _save(folder: Path) -> tuple[Path, object]:
    w = np.random.default_rng(7).standard_normal((6, 3, 3, 3)).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
    m = model([node], {"x": (1, 3, 5, 5)}, 20, ("y",), {"w": w})
    path = folder / "net.onnx"
    saved = onnx.ModelProto()
    saved.CopyFrom(m)  # saving with external data rewrites the tensors it is given
    onnx.save_model(saved, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="net.onnx.data", size_threshold=0)
    assert (folder / "net.onnx.data").stat().st_size == w.nbytes
    return path, m


def test_weights_beside_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, m = _save(tmp_path)
    monkeypatch.chdir(tmp_path.parent)  # not the model's folder: the data is found beside the model
    g = from_onnx(path)
    x = {"x": np.random.default_rng(1).standard_normal((1, 3, 5, 5)).astype(np.float32)}
    want, _ = reference(m, x)
    np.testing.assert_allclose(run(g, x)[0], want[0], rtol=1e-5, atol=1e-5)


def test_missing_or_short_data_file(tmp_path: Path) -> None:
    path, _ = _save(tmp_path)
    data = tmp_path / "net.onnx.data"
    data.write_bytes(data.read_bytes()[:100])
    with pytest.raises(GraphError, match=r"tensor 'w' needs bytes up to 648 of .*net.onnx.data, which has 100"):
        from_onnx(path)
    data.unlink()
    with pytest.raises(GraphError, match=r"tensor 'w' is stored in 'net.onnx.data' beside the model"):
        from_onnx(path)
