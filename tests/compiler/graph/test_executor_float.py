"""The one graph executor on float models for llvm: plans that mix llvm kernels, views and host
steps run node for node against the numpy fp32 reference (the same executor runs VDLA and cuda
plans: tests/compiler/graph/test_executor.py, test_executor_cuda.py)."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.graph import models
from vdla.compiler.graph.executor import STEP_TARGETS, compile_model
from vdla.compiler.graph.ir import Graph
from vdla.compiler.graph.reference import run as reference_run
from vdla.compiler.graph.zoo import load_model

#: model -> the step targets its llvm plan uses (reduced sizes)
PLANS = {
    "mlp": {"llvm"},
    "resnet_block": {"llvm"},
    "mobilenet_v1": {"llvm"},  # the flatten fused into the transform back from NCHW[x]c
    "lstm_lm": {"llvm"},  # the gates' concat too (topi.concatenate)
    "dcgan_generator": {"llvm", "view"},  # conv2d_transpose: topi.conv2d_transpose_nchw
}


@pytest.mark.parametrize("model", list(PLANS))
def test_llvm_plan_matches_the_reference(model: str) -> None:
    seed = 11
    print(f"seed {seed}")
    spec = load_model(model, reduced=True)
    m = compile_model(spec.graph, target="llvm")
    assert {k.target for k in m.kernels.values()} == PLANS[model]
    assert set(STEP_TARGETS) >= PLANS[model]
    x = models.sample_input(spec.graph, seed)
    res = m.run(x, reference=True)
    assert res.copies == 0  # no GPU in the plan: nothing crosses a device boundary
    for got, want in zip(res.outputs, reference_run(spec.graph, x, check=False), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want).max())))
    # every step against the reference from the reference's own inputs: host steps and views exactly
    for r in res.layers:
        assert r.exact, (r.node, r.target, r.max_err)
        if r.target in ("host", "view"):
            assert r.max_err == 0.0
        assert bool(r.reason) == (r.target == "host")  # a host step always says why


def test_views_share_memory_and_host_steps_are_named() -> None:
    spec = load_model("dcgan_generator", reduced=True)  # the noise's reshape to an image (a CNN's
    m = compile_model(spec.graph, target="llvm")        # flatten fuses with the transform from NCHW[x]c)
    res = m.run(models.sample_input(spec.graph, 0))
    (flat,) = [n for n, k in m.kernels.items() if k.target == "view"]
    src = m.graph.node(flat).inputs[0]
    assert np.shares_memory(res.values[flat], res.values[src])  # a view: no copy
    # integer nodes stay on the host's numpy kernels (bit-exact), and say so
    g = Graph("int_tail")
    g.add_input("x", (2, 8), "int32")
    g.set_outputs(g.add_node("add", ["x", g.add_const("one", np.ones(1, "int32"))], name="int_add"))
    ints = compile_model(g.infer_types(), target="llvm")
    assert ints.host_steps() == ["int_add"] and "int32" in ints.kernels["int_add"].host_reason
