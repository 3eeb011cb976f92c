"""Built-in models: shapes, determinism, structure, and the prepare() pipeline."""

from __future__ import annotations

import numpy as np
import pytest
from support.graph import small_resnet

from vdla.compiler.graph import GraphError, models, run
from vdla.compiler.graph.partition import partition
from vdla.compiler.graph.passes import prepare, simplify
from vdla.compiler.graph.quantize import quantize
from vdla.config import preset


def test_resnet18_224_structure():
    g = models.resnet18()
    assert g.inputs["data"].shape == (1, 3, 224, 224)
    assert g.type_of(g.outputs[0]).shape == (1, 1000)
    assert g.op_counts()["conv2d"] == 20 and g.op_counts()["batch_norm"] == 20
    params = sum(a.size for k, a in g.consts.items() if not k.endswith((".mean", ".var", ".gamma", ".beta")))
    assert 11_600_000 < params < 11_800_000  # ResNet-18 has 11.69 M parameters
    assert g.node("layer4.1.relu2").type.shape == (1, 512, 7, 7)


def test_models_are_seeded():
    a, b, c = small_resnet(seed=1), small_resnet(seed=1), small_resnet(seed=2)
    x = models.sample_input(a, 0)
    np.testing.assert_array_equal(run(a, x)[0], run(b, x)[0])
    assert not np.array_equal(run(a, x)[0], run(c, x)[0])
    xs = models.sample_input(a, 3, count=2)
    assert len(xs) == 2 and not np.array_equal(xs[0]["data"], xs[1]["data"])


def test_mobilenet_and_dcgan_shapes():
    m = models.mobilenet_v1(input_size=64, alpha=0.25, num_classes=7, batch=2)
    assert m.type_of(m.outputs[0]).shape == (2, 7)
    dw = [n for n in m.nodes if n.op == "conv2d" and n.attrs["groups"] > 1]
    assert len(dw) == 13 and all(n.attrs["groups"] == m.type_of(n.inputs[0]).shape[1] for n in dw)
    d = models.dcgan_generator(ngf=8, batch=2)
    assert d.type_of(d.outputs[0]).shape == (2, 3, 64, 64)
    assert d.op_counts()["conv2d_transpose"] == 5
    y = run(d, models.sample_input(d, 0))[0]
    assert np.abs(y).max() <= 1.0


def test_unknown_model_and_too_small_input():
    with pytest.raises(GraphError, match="unknown model 'vgg'"):
        models.get("vgg")
    with pytest.raises(GraphError, match="below the minimum"):
        models.resnet18(input_size=16)


def test_centred_head_gives_varied_predictions():
    g = small_resnet(centre_head=True)
    preds = {int(run(g, x)[0].argmax()) for x in models.sample_input(g, 5, count=8)}
    assert len(preds) > 2


def test_mobilenet_depthwise_partition_configurable():
    g = simplify(models.mobilenet_v1(input_size=32, alpha=0.25, num_classes=10))
    q = quantize(g, models.sample_input(g, 0, count=2))
    default = partition(q)
    dw = [n.name for n in q.nodes if n.op == "conv2d" and n.attrs["groups"] > 1]
    assert all(default.node(n).target == "vdla" for n in dw)
    kept = partition(q, offload_grouped=False)
    assert all(kept.node(n).target == "cpu" for n in dw)
    assert kept.node(dw[0]).notes["reason"] == "grouped convolution not offloaded by the policy"


@pytest.mark.parametrize("cfg", ["default", "batch2"])
def test_prepare_pipeline_is_bit_exact_with_int8_reference(cfg):
    g = small_resnet(batch=2)
    cal = models.sample_input(g, 1, count=2)
    q = quantize(simplify(g), cal)
    p = prepare(g, cal, preset(cfg))
    assert {n.op for n in p.nodes} == {"fused", "max_pool2d", "flatten", "dense"}
    x = models.sample_input(g, 7)
    np.testing.assert_array_equal(run(p, x)[0], run(q, x)[0])
