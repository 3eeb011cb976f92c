"""Packed layouts: numpy helpers against index formulas, and the layout pass."""
from __future__ import annotations

import numpy as np
import pytest
from support.graph import int8

from vdla.compiler.graph import Graph, run
from vdla.compiler.graph.layout import to_packed_layout
from vdla.compiler.graph.partition import partition
from vdla.config import Config, preset


def conv_block(n=2, cin=5, cout=20) -> Graph:
    rng = np.random.default_rng(0)
    g = Graph("blk")
    g.add_input("x", (n, cin, 6, 6), "int8")
    c = g.add_node("conv2d", ["x", g.add_const("w", int8(rng, (cout, cin, 3, 3), -127))], name="conv", padding=1)
    a = g.add_node("add", [c, g.add_const("b", rng.integers(-500, 500, (1, cout, 1, 1)).astype(np.int32))], name="bias")
    r = g.add_node("relu", [a], name="relu")
    q = g.add_node("requantize", [r], name="out", shift=7)
    c2 = g.add_node("conv2d", [q, g.add_const("w2", int8(rng, (cout, cout, 1, 1), -127))], name="conv2")
    res = g.add_node("add", [c2, g.add_node("cast", [q], name="res", dtype="int32")], name="resadd")
    g.set_outputs(g.add_node("requantize", [res], name="out2", shift=6))
    return g.infer_types()


@pytest.mark.parametrize("cfg", [Config(), preset("small"), preset("batch2")], ids=["default", "small", "batch2"])
def test_layout_pass_is_bit_exact(cfg):
    g = partition(conv_block(), skip_first_conv=False)
    p = to_packed_layout(g, cfg)
    ops = p.op_counts()
    assert ops["conv2d_packed"] == 2 and "conv2d" not in ops
    x = int8(np.random.default_rng(1), (2, 5, 6, 6))
    np.testing.assert_array_equal(run(g, x)[0], run(p, x)[0])
    conv = p.node("conv")
    b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    assert p.type_of(conv.inputs[0]).shape[-2:] == (b, bi)
    assert conv.type.shape[-2:] == (b, bo)
    assert p.type_of(conv.inputs[1]).shape[-2:] == (bo, bi)
    assert p.outputs == ["out2"]


def test_layout_leaves_cpu_nodes_alone():
    g = conv_block()
    for n in g.nodes:
        n.target = "cpu"
    assert to_packed_layout(g, Config()).op_counts() == g.op_counts()


def test_packed_dense_is_exact(rng):
    g = Graph()
    g.add_input("x", (3, 20), "int8")
    g.set_outputs(g.add_node("dense", ["x", g.add_const("w", int8(rng, (10, 20), -127))], name="fc"))
    g = partition(g.infer_types(), offload_dense=True)
    p = to_packed_layout(g, preset("batch2"))
    assert "dense_packed" in p.op_counts()
    x = int8(rng, (3, 20))
    np.testing.assert_array_equal(run(g, x)[0], run(p, x)[0])
