"""A plan of llvm kernels and views as one native call (executor/native.py): the same outputs as
the step-by-step runner, bit for bit, on the models whose plans are all llvm (and views); inputs
and outputs per run, views of inputs, and the plans it refuses with their reason."""

from __future__ import annotations

import time

import numpy as np
import pytest

from vdla.compiler.graph import models
from vdla.compiler.graph.executor import compile_model
from vdla.compiler.graph.executor.native import NativePlan
from vdla.compiler.graph.ir import Graph
from vdla.compiler.graph.reference import run as reference_run
from vdla.compiler.graph.zoo import load_model

# mobilenet_v1 (9 s; shufflenet_v2 has depthwise chains too) in nox -s slow
MODELS = ["mlp", "resnet_block", pytest.param("mobilenet_v1", marks=pytest.mark.slow), "dcgan_generator", "shufflenet_v2"]


@pytest.mark.parametrize("model", MODELS)
def test_native_plan_matches_the_step_runner(model: str) -> None:
    seed = 5
    print(f"seed {seed}")
    spec = load_model(model, reduced=True)
    m = compile_model(spec.graph, target="llvm")
    assert isinstance(m.native_plan(), NativePlan), m.native_plan()
    for s in (seed, seed + 1):  # two runs: each run's inputs and outputs are its own
        x = models.sample_input(spec.graph, s)
        stepped = m.run(x, native=False)
        res = m.run(x)
        assert [r.node for r in res.layers] == ["(llvm plan)"]  # one record: no Python between the steps
        assert res.layers[0].macs == sum(k.macs for k in m.kernels.values())
        for got, want, ref in zip(res.outputs, stepped.outputs, reference_run(spec.graph, x, check=False),
                                  strict=True):
            np.testing.assert_array_equal(got, want)  # the same kernels on the same buffers
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(ref).max())))
        # the values a run returns are the step runner's (those no later step overwrote)
        assert set(res.values) == set(stepped.values)
        for k, v in stepped.values.items():
            np.testing.assert_array_equal(res.values[k], v, err_msg=k)


def test_outputs_are_the_callers_and_inputs_may_be_strided() -> None:
    spec = load_model("dcgan_generator", reduced=True)  # its first step is a view of the input
    m = compile_model(spec.graph, target="llvm")
    x0, x1 = (models.sample_input(spec.graph, s) for s in (0, 1))
    first = m.run(x0).outputs
    keep = [o.copy() for o in first]
    second = m.run(x1).outputs
    for a, b in zip(first, keep, strict=True):
        np.testing.assert_array_equal(a, b)  # a later run leaves an earlier run's outputs alone
    assert not all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
    name, v = next(iter(x1.items()))
    strided = np.zeros((*v.shape[:-1], 2 * v.shape[-1]), v.dtype)[..., ::2]
    strided[...] = v
    assert not strided.flags.c_contiguous
    for a, b in zip(m.run({name: strided}).outputs, second, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("native", [True, False])
def test_time_layers_gives_a_record_per_step(native: bool) -> None:
    spec = load_model("shufflenet_v2", reduced=True)  # kernels and views
    m = compile_model(spec.graph, target="llvm")
    x = models.sample_input(spec.graph, 0)
    t0 = time.perf_counter()
    res = m.run(x, time_layers=True, native=native)
    wall = time.perf_counter() - t0
    assert [r.node for r in res.layers] == [n.name for n in m.graph.topo_order()]
    assert {r.target for r in res.layers} == {"llvm", "view"}
    assert all(r.seconds > 0 for r in res.layers if r.target == "llvm")
    assert sum(r.seconds for r in res.layers) <= wall  # the steps' clocks lie inside the run
    for got, want in zip(res.outputs, m.run(x, native=False).outputs, strict=True):
        np.testing.assert_array_equal(got, want)


def test_plans_it_refuses_say_why() -> None:
    g = Graph("int_tail")  # an int32 add: a host step (numpy), so the plan runs step by step
    g.add_input("x", (2, 8), "int32")
    g.set_outputs(g.add_node("add", ["x", g.add_const("one", np.ones(1, "int32"))], name="int_add"))
    m = compile_model(g.infer_types(), target="llvm")
    assert m.native_plan() == "steps on host, not only llvm"
    x = np.arange(16, dtype=np.int32).reshape(2, 8)
    res = m.run({"x": x})
    np.testing.assert_array_equal(res.outputs[0], x + 1)
    assert [r.target for r in res.layers] == ["host"]
