"""Post-training int8 quantisation with power-of-two scales, agreement, QDQ import."""

from __future__ import annotations

import numpy as np
import pytest
from support.graph import small_resnet

from vdla.compiler.graph import GraphError, models, run
from vdla.compiler.graph.fold import fold_batch_norm, fold_constants
from vdla.compiler.graph.quantize import QConfig, agreement, calibrate, pow2_scale, quantize, quantize_graph


def test_pow2_scale():
    assert pow2_scale(127.0) == 1.0
    assert pow2_scale(127.1) == 2.0
    assert pow2_scale(1.0) == 2.0**-6  # 1/64*127 >= 1 > 1/128*127
    assert pow2_scale(0.0) == 1.0


def test_int8_graph_structure(resnet_int8):
    ops = resnet_int8.op_counts()
    convs = [n for n in resnet_int8.nodes if n.op == "conv2d"]
    int_convs = [n for n in convs if n.type.dtype == "int32"]
    assert len(int_convs) == 19  # all but the first
    for n in int_convs:
        assert resnet_int8.type_of(n.inputs[0]).dtype == "int8"
        assert resnet_int8.type_of(n.inputs[1]).dtype == "int8"
    assert resnet_int8.node("conv1").type.dtype == "float32"
    assert resnet_int8.node("fc").type.dtype == "float32"  # skip_dense
    assert ops["quantize"] == 1 and ops["dequantize"] == 1
    for n in resnet_int8.nodes:
        if n.op == "requantize":
            assert n.attrs["min"] == -127 and n.attrs["max"] == 127 and n.attrs["shift"] > 0


def test_quantised_weights_and_scales_are_powers_of_two(resnet_fp):
    scales = calibrate(resnet_fp, models.sample_input(resnet_fp, 0, count=2))
    for s in scales.values():
        m, _ = np.frexp(s)
        assert m == 0.5
    q = quantize_graph(resnet_fp, scales)
    n = q.node("layer1.0.conv1")
    w = q.consts[n.inputs[1]]
    assert w.dtype == np.int8 and np.abs(w).max() <= 127 and np.abs(w).max() > 63  # uses the range


def test_agreement_resnet():
    g = fold_batch_norm(fold_constants(small_resnet(centre_head=True)))
    q = quantize(g, models.sample_input(g, 100, count=4))
    a = agreement(g, q, models.sample_input(g, 200, count=12))
    assert a.fp_classes > 1, "the float model must predict several classes for agreement to mean something"
    assert a.snr_db > 8.0 and a.top1 >= 0.4, str(a)


def test_agreement_mlp_with_quantised_dense():
    g = models.mlp(in_features=64, hidden=(32,), num_classes=10)
    q = quantize(g, models.sample_input(g, 1, count=4), QConfig(skip_dense=False))
    assert [q.type_of(n.inputs[0]).dtype for n in q.nodes if n.op == "dense"] == ["int8", "int8"]
    a = agreement(g, q, models.sample_input(g, 2, count=16))
    assert a.snr_db > 20 and a.top1 >= 0.8, str(a)


def test_dcgan_int8_runs(resnet_fp):
    g = fold_batch_norm(models.dcgan_generator(ngf=8))
    q = quantize(g, models.sample_input(g, 1, count=2))
    assert sum(1 for n in q.nodes if n.op == "conv2d_transpose" and n.type.dtype == "int32") == 5
    a = agreement(g, q, models.sample_input(g, 2, count=3))
    assert a.top1 is None and a.snr_db > 15, str(a)


def test_quantize_graph_rejects_non_pow2(resnet_fp):
    with pytest.raises(GraphError, match="not a power of two"):
        quantize_graph(resnet_fp, {"maxpool": 0.3})


def test_int8_path_is_deterministic_integer(resnet_int8):
    x = models.sample_input(resnet_int8, 9)
    env = run(resnet_int8, x, return_all=True)
    for n in resnet_int8.nodes:
        if n.op == "requantize":
            v = env[n.name]
            assert v.dtype == np.int8 and v.min() >= -127
