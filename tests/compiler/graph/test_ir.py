"""Graph IR: building, shape inference, printer, topological order and validation errors."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.graph import Graph, GraphError, TensorType, run
from vdla.compiler.graph.ir import Node


def tiny() -> Graph:
    g = Graph("tiny")
    g.add_input("x", (1, 3, 8, 8))
    w = g.add_const("w", np.ones((4, 3, 3, 3), np.float32))
    c = g.add_node("conv2d", ["x", w], name="conv", strides=2, padding=1)
    r = g.add_node("relu", [c], name="relu")
    p = g.add_node("max_pool2d", [r], name="pool", kernel=2, strides=2)
    g.set_outputs(p)
    return g.infer_types()


def test_shape_inference_and_printer():
    g = tiny()
    assert g.node("conv").type == TensorType((1, 4, 4, 4), "float32")
    assert g.node("pool").type == TensorType((1, 4, 2, 2), "float32")
    text = str(g)
    assert "graph tiny(%x: float32[1,3,8,8])" in text
    assert "%conv = conv2d(%x, @w:float32[4,3,3,3]) {strides=(2,2), padding=(1,1,1,1)" in text
    assert "return %pool" in text


def test_attrs_normalised_and_defaults():
    g = tiny()
    a = g.node("conv").attrs
    assert a["padding"] == (1, 1, 1, 1) and a["dilation"] == (1, 1) and a["groups"] == 1
    with pytest.raises(GraphError, match="no attribute 'stride'.*node 'bad'|node 'bad'.*no attribute 'stride'"):
        g.add_node("conv2d", ["x", "w"], name="bad", stride=2)
    with pytest.raises(GraphError, match="needs attribute 'kernel'"):
        g.add_node("max_pool2d", ["x"], name="mp")


def test_topo_order_sorts_out_of_order_nodes():
    g = tiny()
    g.nodes.reverse()
    assert [n.name for n in g.topo_order()] == ["conv", "relu", "pool"]
    assert [n.name for n in g.sort().nodes] == ["conv", "relu", "pool"]


def test_validation_errors_name_the_node():
    g = tiny()
    g.nodes.append(Node("z", "relu", ["nope"]))
    with pytest.raises(GraphError, match="'z'.*unknown value 'nope'"):
        g.infer_types()
    g = tiny()
    g.node("conv").inputs[0] = "pool"
    with pytest.raises(GraphError, match="cycle"):
        g.infer_types()
    g = tiny()
    g.nodes.append(Node("relu", "relu", ["x"]))
    with pytest.raises(GraphError, match="duplicate value name 'relu'"):
        g.infer_types()
    g = tiny()
    g.nodes.append(Node("q", "frobnicate", ["x"]))
    with pytest.raises(GraphError, match="'q'.*unknown operator 'frobnicate'"):
        g.infer_types()
    g = tiny()
    g.outputs = ["missing"]
    with pytest.raises(GraphError, match="output 'missing'"):
        g.infer_types()


def test_shape_errors():
    g = Graph()
    g.add_input("x", (1, 3, 8, 8))
    w = g.add_const("w", np.ones((4, 5, 3, 3), np.float32))
    with pytest.raises(GraphError, match="node 'c'.*conv2d.*3 input channels"):
        g.add_node("conv2d", ["x", w], name="c")
    y = g.add_const("y", np.ones((2, 3), np.float32))
    with pytest.raises(GraphError, match="do not broadcast"):
        g.add_node("add", ["x", y])
    with pytest.raises(GraphError, match="cannot reshape"):
        g.add_node("reshape", ["x"], shape=(5, -1))
    with pytest.raises(GraphError, match="int8 would wrap"):
        h = Graph()
        h.add_input("a", (4,), "int8")
        h.add_node("add", ["a", "a"])
    with pytest.raises(GraphError, match="dtypes differ"):
        h = Graph()
        h.add_input("a", (4,), "int32")
        h.add_input("b", (4,), "float32")
        h.add_node("add", ["a", "b"])


def test_input_checks():
    g = tiny()
    x = np.zeros((1, 3, 8, 8), np.float32)
    assert run(g, x)[0].shape == (1, 4, 2, 2)
    with pytest.raises(GraphError, match="no input named 'y'"):
        run(g, {"y": x})
    with pytest.raises(GraphError, match="input 'x'.*expects shape"):
        run(g, {"x": x[:, :2]})
    with pytest.raises(GraphError, match="input 'x'.*expects dtype float32, got float64"):
        run(g, {"x": x.astype(np.float64)})
    with pytest.raises(GraphError, match="missing input 'x'"):
        run(g, {})


def test_copy_prune_and_consumers():
    g = tiny()
    g.add_node("relu", ["x"], name="dead")
    h = g.copy().prune()
    assert "dead" not in [n.name for n in h.nodes] and "dead" in [n.name for n in g.nodes]
    assert [n.name for n in g.consumers()["conv"]] == ["relu"]
    assert g.op_counts()["relu"] == 2
