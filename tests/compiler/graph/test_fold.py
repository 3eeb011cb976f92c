"""Graph passes: constant folding, batch-norm folding, fusion and partitioning."""
from __future__ import annotations

import numpy as np
import pytest
from support.graph import small_resnet

from vdla.compiler.graph import Graph, models, run
from vdla.compiler.graph.fold import fold_batch_norm, fold_constants, remove_identity


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
