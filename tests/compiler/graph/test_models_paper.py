"""The TVM paper's other models as built-ins: ResNet-50, the Atari DQN and the LSTM language
model. Each at its reduced size through `vdla run`'s job: fp32 against onnxruntime (the
model exported with onnx_export), int8 on VDLA bit-exact against the int8 numpy reference;
the full sizes' shapes checked without compiling (the benchmark compiles them)."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.graph import models, passes
from vdla.compiler.graph.job import run_job
from vdla.compiler.graph.layout import VdlaPlan, vdla_plan
from vdla.config import Config

pytest.importorskip("onnxruntime")


def _checks(res) -> dict[str, bool | None]:
    return {c.name: c.ok for c in res.checks}


@pytest.mark.parametrize(("name", "vdla_nodes"), [
    # all three conv shapes (8x8/4, 4x4/2, 3x3/1) and both dense layers
    ("dqn", ["relu1.requant", "relu2.requant", "relu3.requant", "relu4.requant", "q_values.requant"]),
    # 2 steps x 2 layers x 4 gates, and the decoder at each step
    ("lstm_lm", [f"t{t}.l{ly}.{g}.requant" for t in range(2) for ly in range(2) for g in "ifgo"] +
     ["t0.decoder.requant", "t1.decoder.requant"]),
    # every conv but the float first one (3 + 4 + 6 + 3 bottlenecks x 3 convs + 4 projections)
    ("resnet50", 52),
])
def test_reduced_on_vdla_bit_exact_and_fp32_vs_onnxruntime(name, vdla_nodes):
    res = run_job(name, "fsim", reduced=True)
    checks = _checks(res)
    assert checks["int8 output vs numpy int8 reference"] is True, res.table()
    assert checks["fp32 CPU path vs onnxruntime"] is True, res.table()
    on = [r.node for r in res.layers if r.target == "vdla"]
    if isinstance(vdla_nodes, int):
        assert len(on) == vdla_nodes
    else:
        assert sorted(on) == sorted(vdla_nodes)
    assert not any(r.reason.startswith("fallback") for r in res.layers)
    assert res.snr and min(db for _, _, db in res.snr) > 15, res.snr


def test_dqn_full_size_shapes_fit_vdla():
    g = models.dqn()
    assert g.inputs["frames"].shape == (1, 4, 84, 84)
    shapes = {n.name: n.type.shape for n in g.nodes}
    assert shapes["conv1"] == (1, 32, 20, 20) and shapes["conv2"] == (1, 64, 9, 9) and shapes["conv3"] == (1, 64, 7, 7)
    assert g.consts["fc1.weight"].shape == (512, 3136) and shapes["q_values"] == (1, 18)
    q = passes.prepare(g, models.sample_input(g, 0, count=1), Config(), _settings("dqn").qconfig, pack=False,
                       fusion=False)
    for n in q.nodes:
        if n.op in ("conv2d", "dense"):
            assert isinstance(vdla_plan(n, q), VdlaPlan), n.name


def _settings(name):
    from vdla.compiler.graph.zoo import SETTINGS

    return SETTINGS[name]


def test_lstm_full_size_structure():
    g = models.lstm_lm(steps=1)
    dense = [n for n in g.nodes if n.op == "dense"]
    assert len(dense) == 2 * 4 + 1  # two layers' four gates, the decoder
    assert {g.consts[n.inputs[1]].shape for n in dense} == {(650, 1300), (10000, 650)}
    assert g.type_of(g.outputs[0]).shape == (1, 10000)


def test_lstm_cell_matches_numpy():
    """One unrolled step against a direct numpy LSTM (PyTorch's gate equations)."""
    from vdla.compiler.graph import run

    g = models.lstm_lm(vocab=7, hidden=5, layers=1, steps=2, seed=3)
    rng = np.random.default_rng(3)
    xs = {f"x{t}": rng.standard_normal((1, 5)).astype(np.float32) for t in range(2)}
    (out,) = run(g, xs)
    c = h = np.zeros((1, 5))
    want = []
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    for t in range(2):
        xh = np.concatenate([xs[f"x{t}"], h], axis=1)
        gate = {k: xh @ g.consts[f"l0.w_{k}"].T + g.consts[f"l0.b_{k}"] for k in "ifgo"}
        c = sig(gate["f"]) * c + sig(gate["i"]) * np.tanh(gate["g"])
        h = sig(gate["o"]) * np.tanh(c)
        want.append(h @ g.consts["decoder.weight"].T + g.consts["decoder.bias"])
    np.testing.assert_allclose(out, np.concatenate(want), rtol=1e-5, atol=1e-6)


def test_resnet50_full_size_structure():
    g = models.resnet50()
    convs = [n for n in g.nodes if n.op == "conv2d"]
    assert len(convs) == 53 and g.type_of("layer4.2.relu3").shape == (1, 2048, 7, 7)
    assert g.type_of(g.outputs[0]).shape == (1, 1000)
