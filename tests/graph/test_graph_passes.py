"""Graph passes: constant folding, batch-norm folding, fusion and partitioning."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import small_resnet

from vdla.compiler.graph import Graph, GraphError, models, run
from vdla.compiler.graph.fold import fold_batch_norm, fold_constants, remove_identity
from vdla.compiler.graph.fuse import fuse, unfuse
from vdla.compiler.graph.layout import to_packed_layout
from vdla.compiler.graph.partition import partition, report
from vdla.config import Config


def test_constant_folding(rng):
    g = Graph()
    g.add_input("x", (2, 4))
    a = g.add_const("a", rng.standard_normal((4,)).astype(np.float32))
    s = g.add_node("mul", [a, g.add_const("two", np.float32(2.0))], name="scaled")
    r = g.add_node("relu", [s], name="r")
    y = g.add_node("add", ["x", r], name="y")
    g.add_node("relu", ["x"], name="dead")
    g.set_outputs(y)
    f = fold_constants(g.infer_types())
    assert [n.name for n in f.nodes] == ["y"]
    assert "r" in f.consts and "dead" not in {n.name for n in f.nodes}
    x = rng.standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(run(f, x)[0], run(g, x)[0], rtol=1e-6)


def test_remove_identity():
    g = Graph()
    g.add_input("x", (2, 4))
    r = g.add_node("reshape", ["x"], shape=(2, 4))
    g.set_outputs(g.add_node("relu", [r], name="y"))
    assert remove_identity(g).op_counts() == {"relu": 1}


@pytest.mark.parametrize("builder", [lambda: small_resnet(), lambda: models.dcgan_generator(ngf=8)])
def test_batch_norm_folding(builder):
    g = builder()
    f = fold_batch_norm(g)
    assert "batch_norm" not in f.op_counts()
    x = models.sample_input(g, 3)
    np.testing.assert_allclose(run(f, x)[0], run(g, x)[0], rtol=1e-4, atol=1e-4)


def test_standalone_batch_norm_becomes_mul_add(rng):
    g = Graph()
    g.add_input("x", (1, 3, 2, 2))
    ps = [g.add_const(k, rng.uniform(0.5, 1.5, 3).astype(np.float32)) for k in ("g", "b", "m", "v")]
    g.set_outputs(g.add_node("batch_norm", ["x", *ps], name="bn"))
    f = fold_batch_norm(g.infer_types())
    assert f.op_counts() == {"mul": 1, "add": 1} and f.outputs == ["bn"]
    x = rng.standard_normal((1, 3, 2, 2)).astype(np.float32)
    np.testing.assert_allclose(run(f, x)[0], run(g, x)[0], rtol=1e-5)


def test_partition_resnet_default(resnet_int8):
    p = partition(resnet_int8)
    t = {n.name: n.target for n in p.nodes}
    assert t["conv1"] == "cpu" and t["maxpool"] == "cpu" and t["avgpool"] == "cpu" and t["fc"] == "cpu"
    convs = [n for n in p.nodes if n.op == "conv2d"]
    assert len(convs) == 20
    assert all(n.target == "vdla" for n in convs if n.name != "conv1")
    assert t["layer1.0.relu1.requant"] == "vdla" and t["layer1.0.add"] == "vdla"
    assert t["maxpool.quant"] == "cpu"
    rows = report(p)
    assert ("conv1", "conv2d", "cpu", "float32 operands (VDLA needs int8)") in rows


def test_partition_is_configurable(resnet_int8):
    p = partition(resnet_int8, cpu_nodes={"layer3.0.conv1"})
    assert p.node("layer3.0.conv1").target == "cpu"
    assert p.node("layer3.0.conv1").notes["reason"] == "policy: cpu_nodes"
    with pytest.raises(GraphError, match="no node named 'nope'"):
        partition(resnet_int8, cpu_nodes={"nope"})


def test_partition_float_graph_stays_on_cpu(resnet_fp):
    assert {n.target for n in partition(resnet_fp).nodes} == {"cpu"}


def test_fusion_resnet_kernels(resnet_int8):
    p = to_packed_layout(partition(resnet_int8), Config())
    f = fuse(p)
    pats = [n.attrs["pattern"] for n in f.nodes if n.op == "fused" and n.target == "vdla"]
    assert pats.count("conv2d_packed+add+relu+requantize") == 8  # the first conv of every block
    residual = [q for q in pats if "cast+shift+add" in q or q.count("add") == 2]
    assert len(residual) == 8  # the second conv of every block takes the residual add
    assert all(q.endswith("relu+requantize") for q in residual)
    # every conv on VDLA is inside a fused kernel, nothing else is left on VDLA
    assert not [n for n in f.nodes if n.target == "vdla" and n.op != "fused"]
    x = models.sample_input(resnet_int8, 5)
    np.testing.assert_array_equal(run(f, x)[0], run(resnet_int8, x)[0])
    np.testing.assert_array_equal(run(unfuse(f), x)[0], run(f, x)[0])


def test_fusion_rules_on_float_graph(resnet_fp):
    f = fuse(resnet_fp)
    pats = {n.attrs["pattern"] for n in f.nodes if n.op == "fused"}
    assert "conv2d+relu" in pats and "conv2d+add+relu" in pats
    # a reduction takes its injective input: global pool is alone, flatten + dense stay separate
    kinds = {n.attrs["kind"] for n in f.nodes if n.op == "fused"}
    assert kinds <= {"complex", "injective", "reduction"}
    x = models.sample_input(resnet_fp, 2)
    np.testing.assert_allclose(run(f, x)[0], run(resnet_fp, x)[0], rtol=1e-5, atol=1e-5)


def test_fusion_respects_multiple_readers():
    g = Graph()
    g.add_input("x", (1, 2, 4, 4))
    c = g.add_node("conv2d", ["x", g.add_const("w", np.ones((2, 2, 1, 1), np.float32))], name="c")
    r = g.add_node("relu", [c], name="r")
    g.set_outputs(g.add_node("add", [r, c], name="y"))
    f = fuse(g.infer_types())
    # c has two readers: nothing may fuse into it
    assert "c" in {n.name for n in f.nodes}
