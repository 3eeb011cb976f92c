"""Graph passes: constant folding, batch-norm folding, fusion and partitioning."""
from __future__ import annotations

import numpy as np
import pytest
from support.graph import int8

from vdla.compiler.graph import Graph, GraphError, passes, run
from vdla.compiler.graph.executor import compile_model
from vdla.compiler.graph.partition import partition, report
from vdla.config import Config


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


@pytest.mark.parametrize("groups, dilation, k", [(1, (2, 2), 3), (1, (1, 3), 3), (32, (2, 2), 3)],
                         ids=["conv-d2", "conv-d1x3", "depthwise-d2"])
def test_dilated_conv_on_vdla_with_a_spread_kernel(groups, dilation, k):
    """A dilated int8 conv goes to VDLA as a dilation-1 conv whose kernel has zeros between the
    taps; bit-exact with the dilated conv on the numpy reference. undilate=False keeps it on the CPU."""
    rng = np.random.default_rng(sum(dilation) + groups)
    g = Graph("dilated")
    g.add_input("x", (1, 32, 9, 9), "int8")
    w = g.add_const("w", int8(rng, (32, 32 // groups, k, k), -127))
    y = g.add_node("conv2d", ["x", w], name="conv", padding=2, dilation=dilation, groups=groups)
    g.set_outputs(g.add_node("requantize", [y], name="out", shift=8))
    g.infer_types()
    p = partition(g, skip_first_conv=False)
    conv = p.node("conv")
    kh, kw = ((k - 1) * dilation[0] + 1, (k - 1) * dilation[1] + 1)
    assert conv.target == "vdla" and f"dilation {dilation} as a spread {kh}x{kw} kernel" in conv.notes["reason"]
    assert conv.attrs["dilation"] == (1, 1) and p.type_of(conv.inputs[1]).shape[2:] == (kh, kw)
    x = {"x": int8(rng, (1, 32, 9, 9))}
    np.testing.assert_array_equal(run(p, x)[0], run(g, x)[0])
    m = compile_model(passes.fuse(passes.to_packed_layout(p, Config())), Config())
    assert sum(k.target == "vdla" for k in m.kernels.values()) == 1
    # the MACs counted are the dilated conv's, not the spread kernel's zeros
    assert sum(k.macs for k in m.kernels.values()) == int(np.prod(g.type_of("conv").shape)) * (32 // groups) * k * k
    res = m.run(x, reference=True)
    assert all(r.exact and r.max_err == 0 for r in res.layers)
    np.testing.assert_array_equal(res.outputs[0], run(g, x)[0])
    off = partition(g, skip_first_conv=False, undilate=False).node("conv")
    assert off.target == "cpu" and "dilation" in off.notes["reason"]
