"""Imported ONNX models on VDLA: a 1-D conv model partly on VDLA (its convolutions as 2-D
ones of height 1), bit-exact against the int8 reference, through ``vdla run`` with
``--shape``; the onnxruntime cross-check says "skipped" when onnxruntime cannot run a model."""

from __future__ import annotations

import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from support.onnx_models import model  # noqa: E402

from vdla.cli import main  # noqa: E402
from vdla.compiler.graph import models, reference  # noqa: E402
from vdla.compiler.graph.build import build_model  # noqa: E402
from vdla.compiler.graph.job import run_job  # noqa: E402
from vdla.compiler.graph.zoo import load_model  # noqa: E402
from vdla.config import Config  # noqa: E402
from vdla.runtime import Device  # noqa: E402

N = helper.make_node


def conv1d_model(path):
    """Conv1d x3 (+ReLU, a MaxPool1d, one dilated) -> GlobalAveragePool -> Flatten -> Gemm, batch dynamic."""
    rng = np.random.default_rng(0)

    def w(*s):
        return (rng.standard_normal(s) * (2.0 / np.prod(s[1:])) ** 0.5).astype(np.float32)

    nodes = [
        N("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1]),
        N("Relu", ["c1"], ["r1"], name="relu1"),
        N("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1]),
        N("Relu", ["c2"], ["r2"], name="relu2"),
        N("MaxPool", ["r2"], ["p2"], name="pool2", kernel_shape=[2], strides=[2]),
        N("Conv", ["p2", "w3", "b3"], ["c3"], name="conv3_dilated", pads=[2, 2], dilations=[2]),
        N("Relu", ["c3"], ["r3"], name="relu3"),
        N("Conv", ["r3", "w4", "b4"], ["c4"], name="conv4", strides=[2], pads=[1, 1]),
        N("Relu", ["c4"], ["r4"], name="relu4"),
        N("GlobalAveragePool", ["r4"], ["gp"], name="gap"),
        N("Flatten", ["gp"], ["fl"], name="flat"),
        N("Gemm", ["fl", "fw", "fb"], ["y"], name="fc", transB=1),
    ]
    inits = {"w1": w(16, 4, 3), "b1": w(16) * 0.1, "w2": w(32, 16, 3), "b2": w(32) * 0.1,
             "w3": w(32, 32, 3), "b3": w(32) * 0.1, "w4": w(32, 32, 3), "b4": w(32) * 0.1,
             "fw": w(10, 32), "fb": w(10)}
    m = model(nodes, {}, 13, ("y",), inits, name="conv1d")
    m.graph.input.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 48]))
    onnx.save(m, str(path))
    return path


def test_conv1d_model_partly_on_vdla_bit_exact(tmp_path):
    p = conv1d_model(tmp_path / "conv1d.onnx")
    spec = load_model(str(p), shapes={"x": (1, 4, 48)})
    m = build_model(spec, Config())
    vdla = {n for n, k in m.kernels.items() if k.target == "vdla"}
    # every conv as a height-1 2-D conv fused with bias and ReLU, on VDLA (an ONNX file offloads
    # "all"): conv1 as a 1x1 of its unfolded 4-channel input, conv2, the dilated conv3 (its kernel
    # spread out), conv4; and the classifier (Gemm)
    assert len(vdla) == 5, {n: (k.target, k.reason) for n, k in m.kernels.items()}
    anchors = sorted(m.graph.node(n).attrs.get("anchor", "") for n in vdla)
    assert anchors == ["conv2d_packed"] * 4 + ["dense_packed"], anchors
    spread = [n.name for n in m.graph.nodes if "dilation (1, 2) as a spread 1x5 kernel" in n.notes.get("reason", "")]
    assert len(spread) == 1 and spread[0] in vdla
    x = models.sample_input(m.graph, 7)
    res = m.run(x, Device("fsim", config=m.config), reference=True)
    assert all(r.exact for r in res.layers)
    assert all(r.max_err == 0 for r in res.layers if r.target == "vdla")
    assert np.array_equal(res.outputs[0], res.reference[0])
    assert all(r.cycles > 0 for r in res.layers if r.target == "vdla")


def test_vdla_run_with_shape_option(tmp_path, capsys):
    p = conv1d_model(tmp_path / "conv1d.onnx")
    assert main(["run", str(p), "-q"]) == 2
    assert "give its shape with --shape x=d0,d1" in capsys.readouterr().err
    assert main(["run", str(p), "-q", "--json", "--shape", "x=2,4,48"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and sum(r["target"] == "vdla" for r in out["layers"]) == 5
    checks = {c["name"]: c for c in out["checks"]}
    assert checks["fp32 CPU path vs onnxruntime"]["ok"] is True
    assert checks["int8 output vs numpy int8 reference"]["ok"] is True


def test_onnxruntime_that_cannot_run_a_model_is_a_skip(tmp_path):
    # LRN with an even size: ONNX defines it, onnxruntime refuses it at session creation
    rng = np.random.default_rng(1)
    nodes = [N("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]), N("LRN", ["c"], ["y"], name="lrn", size=4)]
    m = model(nodes, {"x": (1, 3, 8, 8)}, 13, ("y",), {"w": rng.standard_normal((8, 3, 3, 3)).astype(np.float32)})
    p = tmp_path / "lrn4.onnx"
    onnx.save(m, str(p))
    res = run_job(str(p), "fsim")
    fp32 = next(c for c in res.checks if c.name.startswith("fp32"))
    assert fp32.ok is None and fp32.detail.startswith("onnxruntime cannot run this model: ")
    assert "skipped (onnxruntime cannot run this model" in fp32.line()
    assert res.ok  # a skipped check is not a failure
    # the model itself ran: LRN on the CPU, against the numpy reference
    assert reference.run(load_model(str(p)).graph, models.sample_input(load_model(str(p)).graph, 0))[0].shape == (
        1, 8, 8, 8)


def test_double_input_model_checked_against_onnxruntime(tmp_path):
    rng = np.random.default_rng(2)
    nodes = [N("Cast", ["x"], ["xf"], to=TensorProto.FLOAT), N("Conv", ["xf", "w"], ["c"], name="conv"),
             N("Relu", ["c"], ["y"])]
    m = model(nodes, {"x": np.zeros((1, 3, 6, 6), np.float64)}, 13, ("y",),
              {"w": rng.standard_normal((4, 3, 3, 3)).astype(np.float32)})
    p = tmp_path / "double.onnx"
    onnx.save(m, str(p))
    res = run_job(str(p), "fsim")
    fp32 = next(c for c in res.checks if c.name.startswith("fp32"))
    assert fp32.ok is True, fp32.line()


def test_vdla_build_with_shape_keeps_it_for_the_cross_check(tmp_path, capsys):
    p = conv1d_model(tmp_path / "conv1d.onnx")
    out = tmp_path / "c.vdla"
    assert main(["build", str(p), "-q", "--shape", "x=1,4,48", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["run", str(out), "-q"]) == 0
    text = capsys.readouterr().out
    assert "fp32 CPU path vs onnxruntime: PASS" in text  # the float model was rebuilt with the same shape


def res1d_model(path):
    """A 1-D residual block as PyTorch writes it: Conv1d -> BatchNorm1d -> ReLU, twice more, Add, ReLU."""
    rng = np.random.default_rng(3)

    def w(*s):
        return (rng.standard_normal(s) * (2.0 / np.prod(s[1:])) ** 0.5).astype(np.float32)

    nodes = [N("Conv", ["x", "w1"], ["c1"], pads=[1, 1]), N("BatchNormalization", ["c1", "g1", "b1", "m1", "v1"], ["n1"]),
             N("Relu", ["n1"], ["r1"]),
             N("Conv", ["r1", "w2"], ["c2"], pads=[1, 1]), N("BatchNormalization", ["c2", "g2", "b2", "m2", "v2"], ["n2"]),
             N("Relu", ["n2"], ["r2"]),
             N("Conv", ["r2", "w3"], ["c3"], pads=[1, 1]), N("BatchNormalization", ["c3", "g3", "b3", "m3", "v3"], ["n3"]),
             N("Add", ["n3", "r1"], ["s"]), N("Relu", ["s"], ["y"])]
    inits = {"w1": w(16, 4, 3), "w2": w(16, 16, 3), "w3": w(16, 16, 3)}
    for k in "123":
        inits.update({f"g{k}": rng.uniform(0.5, 1.5, 16).astype(np.float32),
                      f"b{k}": rng.uniform(-0.1, 0.1, 16).astype(np.float32),
                      f"m{k}": rng.uniform(-0.1, 0.1, 16).astype(np.float32),
                      f"v{k}": rng.uniform(0.5, 1.5, 16).astype(np.float32)})
    onnx.save(model(nodes, {"x": (1, 4, 32)}, 13, ("y",), inits, name="res1d"), str(path))
    return path


def test_conv1d_residual_block_folds_and_fuses_like_2d(tmp_path):
    res = run_job(str(res1d_model(tmp_path / "res1d.onnx")), "fsim")
    vd = {r.node: r.op for r in res.layers if r.target == "vdla"}
    # batch norms folded into the convs; the first two convs with their ReLU, the third with the
    # residual add (aligned by a shift) and the final ReLU, each one VDLA kernel
    assert sorted(vd.values()) == ["conv2d_packed+add+cast+shift+add+relu+requantize",
                                   "conv2d_packed+add+relu+requantize", "conv2d_packed+add+relu+requantize"], vd
    assert not any(r.op.startswith(("batch_norm", "mul")) for r in res.layers)
    assert res.ok and all(c.ok for c in res.checks), [c.line() for c in res.checks]


def test_embedding_lstm_language_model_runs_and_matches_onnxruntime(tmp_path):
    """int64 token input -> Gather (embedding) -> LSTM -> Squeeze -> Reshape -> Gemm: the job
    generates tokens in the vocabulary's range and feeds onnxruntime int64; the LSTM's
    recurrence runs as one TE-scan kernel."""
    rng = np.random.default_rng(4)
    steps, vocab, emb, hid = 5, 50, 16, 32
    nodes = [N("Gather", ["emb", "tok"], ["e"]), N("LSTM", ["e", "W", "R", "B"], ["y"], hidden_size=hid),
             N("Squeeze", ["y", "ax"], ["ys"]), N("Reshape", ["ys", "shp"], ["flat"]),
             N("Gemm", ["flat", "fw", "fb"], ["logits"], transB=1)]
    inits = {"emb": rng.standard_normal((vocab, emb)).astype(np.float32),
             "W": rng.standard_normal((1, 4 * hid, emb)).astype(np.float32) * 0.3,
             "R": rng.standard_normal((1, 4 * hid, hid)).astype(np.float32) * 0.3,
             "B": rng.standard_normal((1, 8 * hid)).astype(np.float32) * 0.1, "ax": np.array([1], np.int64),
             "shp": np.array([-1, hid], np.int64), "fw": rng.standard_normal((vocab, hid)).astype(np.float32) * 0.2,
             "fb": np.zeros(vocab, np.float32)}
    m = model(nodes, {"tok": np.zeros((steps, 1), np.int64)}, 14, ("logits",), inits, name="lm")
    p = tmp_path / "lm.onnx"
    onnx.save(m, str(p))
    res = run_job(str(p), "fsim")
    assert res.ok and all(c.ok for c in res.checks), [c.line() for c in res.checks]
    # the recurrence is one lstm_scan node, built for llvm with the TE scan
    assert [r.target for r in res.layers if r.op == "lstm_scan"] == ["llvm"], [(r.op, r.target) for r in res.layers]
    g = load_model(str(p)).graph
    x = models.sample_input(g, 1)
    assert x["tok"].dtype == np.int32 and 0 <= x["tok"].min() and x["tok"].max() < vocab


def test_3d_conv_model_runs_on_the_cpu_with_the_reason(tmp_path):
    rng = np.random.default_rng(5)
    nodes = [N("Conv", ["x", "w1"], ["c1"], pads=[1] * 6), N("Relu", ["c1"], ["r1"]),
             N("Conv", ["r1", "w2"], ["c2"], pads=[1] * 6), N("Relu", ["c2"], ["y"])]
    inits = {"w1": rng.standard_normal((16, 2, 3, 3, 3)).astype(np.float32) * 0.2,
             "w2": rng.standard_normal((16, 16, 3, 3, 3)).astype(np.float32) * 0.1}
    p = tmp_path / "c3d.onnx"
    onnx.save(model(nodes, {"x": (1, 2, 4, 6, 6)}, 13, ("y",), inits), str(p))
    res = run_job(str(p), "fsim")
    assert res.ok and not res.vdla_layers
    assert any("3-D convolution: the VDLA conv templates are 2-D" in r.reason for r in res.layers), \
        [(r.node, r.reason) for r in res.layers]
