"""examples/train_digits.py: its numpy backward pass against finite differences, and one
short training run that writes a loadable ONNX file."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from support import REPO

pytest.importorskip("sklearn")
pytest.importorskip("onnx")

SEED = 5


def _trainer():
    spec = importlib.util.spec_from_file_location("train_digits", REPO / "examples" / "train_digits.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_backward_matches_finite_differences():
    from vdla.compiler.graph.digits import weight_shapes

    print(f"seed {SEED}")
    t = _trainer()
    rng = np.random.default_rng(SEED)
    p = {k: rng.standard_normal(s) * 0.3 for k, s in weight_shapes().items()}
    x = rng.uniform(0, 1, (2, 1, 8, 8))
    r = rng.standard_normal((2, 10))

    def loss(params):
        return float((t.forward(params, x)[0] * r).sum())

    out, cache = t.forward(p, x)
    grads = t.backward(p, cache, r)
    eps = 1e-6
    for k in p:
        flat = p[k].reshape(-1)
        for i in rng.choice(flat.size, min(4, flat.size), replace=False):
            old = flat[i]
            flat[i] = old + eps
            up = loss(p)
            flat[i] = old - eps
            down = loss(p)
            flat[i] = old
            num = (up - down) / (2 * eps)
            assert abs(num - grads[k].reshape(-1)[i]) <= 1e-4 * max(1.0, abs(num)), (k, i)


def test_one_epoch_writes_a_loadable_model(tmp_path, capsys):
    from vdla.compiler.graph.digits import accuracy, digits_cnn, load_split, trained_weights
    from vdla.compiler.graph.reference import run

    out = tmp_path / "d.onnx"
    assert _trainer().main(["--epochs", "1", "--seed", str(SEED), "-o", str(out)]) == 0
    assert "held-out accuracy" in capsys.readouterr().out
    _, _, xte, yte = load_split()
    (logits,) = run(digits_cnn(len(xte), trained_weights(out)), {"image": xte}, check=False)
    assert accuracy(logits, yte) > 0.8  # one epoch already learns most digits
