"""Graph passes: constant folding, batch-norm folding, fusion and partitioning."""
from __future__ import annotations

import numpy as np

from vdla.compiler.graph import Graph, models, run
from vdla.compiler.graph.fuse import fuse, unfuse
from vdla.compiler.graph.layout import to_packed_layout
from vdla.compiler.graph.partition import partition
from vdla.config import Config


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
