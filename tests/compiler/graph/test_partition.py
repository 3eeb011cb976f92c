"""Graph passes: constant folding, batch-norm folding, fusion and partitioning."""
from __future__ import annotations

import pytest

from vdla.compiler.graph import GraphError
from vdla.compiler.graph.partition import partition, report


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
