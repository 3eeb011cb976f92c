"""Storage planning (executor.memory): kernel outputs share buffers only where their lifetimes do
not overlap, checked against lifetimes worked out here independently; planned runs agree with
the numpy reference run after run, and the outputs a run returns are its own."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vdla.compiler.graph import models
from vdla.compiler.graph.executor import Step, compile_model
from vdla.compiler.graph.executor.memory import plan_storage
from vdla.compiler.graph.ir import Graph
from vdla.compiler.graph.reference import run as reference_run
from vdla.compiler.graph.zoo import load_model


def _lifetimes(g: Graph, steps: dict[str, Step]) -> dict[str, tuple[int, float]]:
    """value -> (step that writes it, last step that reads it or a view of it; inf for outputs)."""
    order = [n.name for n in g.topo_order()]
    pos = {v: i for i, v in enumerate(order)}
    root = {}
    for n in g.topo_order():  # a view's memory is its input's
        root[n.name] = root.get(n.inputs[0], n.inputs[0]) if steps[n.name].target == "view" else n.name
    last: dict[str, float] = {v: pos[v] for v in order}
    for n in g.topo_order():
        for v in n.inputs:
            r = root.get(v)
            if r in last:  # (a view of a graph input or constant is not planned)
                last[r] = max(last[r], pos[n.name])
    for o in g.outputs:
        if root[o] in last:
            last[root[o]] = float("inf")
    return {v: (pos[v], last[v]) for v in order if root[v] == v}


def _check_plan(g: Graph, steps: dict[str, Step], targets: tuple[str, ...]) -> None:
    plan = plan_storage(g, steps, targets)
    life = _lifetimes(g, steps)
    for v, s in plan.of.items():
        assert steps[v].target in targets + ("view",)
        t = g.type_of(v)
        assert plan.sizes[s] >= int(np.prod(t.shape)) * np.dtype(t.dtype).itemsize, v
    by_buffer: dict[int, list[str]] = {}
    for v, s in plan.of.items():
        if v in life:  # views share their input's buffer by design
            by_buffer.setdefault(s, []).append(v)
    for vs in by_buffer.values():
        spans = sorted(life[v] for v in vs)
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert end < start, f"two live values share a buffer: {vs}"
    assert plan.total_bytes <= plan.naive_bytes


# mobilenet_v1's plan (depthwise chains, as resnet18's convs and dcgan's transposed ones) in nox -s slow
@pytest.mark.parametrize("model", ["mlp", "resnet18", pytest.param("mobilenet_v1", marks=pytest.mark.slow),
                                   "dcgan_generator", "lstm_lm"])
def test_model_plans_share_only_dead_buffers(model: str) -> None:
    m = compile_model(load_model(model, reduced=True).graph, target="llvm")
    _check_plan(m.graph, m.kernels, ("llvm", "cuda"))
    plan = m.storage()
    print(f"{model}: {len(plan.sizes)} buffers, {plan.total_bytes} of {plan.naive_bytes} bytes")
    if model == "resnet18":  # a chain of residual blocks needs three buffers, not one per layer
        assert len(plan.sizes) == 3 and plan.total_bytes * 2 <= plan.naive_bytes


def test_planned_runs_match_the_reference_and_keep_their_outputs() -> None:
    g = load_model("resnet18", reduced=True).graph
    m = compile_model(g, target="llvm")
    assert len(m.storage().sizes) < sum(k.target == "llvm" for k in m.kernels.values())
    xs = [models.sample_input(g, seed) for seed in (1, 2)]
    first = m.run(xs[0]).outputs
    kept = [o.copy() for o in first]
    second = m.run(xs[1]).outputs
    for x, got in zip(xs, (first, second)):
        for o, want in zip(got, reference_run(g, x, check=False)):
            np.testing.assert_allclose(o, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want).max())))
    for a, b in zip(first, kept):  # the second run wrote into its own output arrays
        np.testing.assert_array_equal(a, b)
    res = m.run(xs[0])
    assert not set(res.values) & m.storage().overwritten  # a value whose buffer was reused is not handed back


def test_a_dead_view_frees_its_buffer_once() -> None:
    """A view nobody reads, of a value only it reads: the buffer is freed once, not twice (found by
    hypothesis: twice, it was handed to two live values)."""
    g = Graph("dead_view")
    g.add_input("x", (4, 4))
    a = g.add_node("add", ["x", "x"], name="a")
    g.add_node("reshape", [a], name="v", shape=[16])
    outs = [g.add_node("add", ["x", "x"], name=f"o{i}") for i in range(2)]
    g.set_outputs(*outs)
    g.infer_types()
    steps = {"a": Step("a", "llvm"), "v": Step("v", "view"), "o0": Step("o0", "llvm"), "o1": Step("o1", "llvm")}
    plan = plan_storage(g, steps, ("llvm",))
    assert plan.of["o0"] != plan.of["o1"]
    _check_plan(g, steps, ("llvm",))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_random_plans(data: st.DataObject) -> None:
    """Random DAGs of kernels, views and host steps of random sizes."""
    n = data.draw(st.integers(2, 14), label="nodes")
    g = Graph("random")
    g.add_input("x", (4, 4))
    names = ["x"]
    targets = {}
    for i in range(n):
        a = data.draw(st.sampled_from(names), label=f"a{i}")
        kind = data.draw(st.sampled_from(["llvm", "llvm", "view", "host"]), label=f"t{i}")
        if kind == "view":
            name = g.add_node("reshape", [a], name=f"n{i}", shape=[16])
        else:
            b = data.draw(st.sampled_from(names), label=f"b{i}")
            name = g.add_node("add", [a, b] if g.type_of(a).shape == g.type_of(b).shape else [a, a], name=f"n{i}")
        targets[name] = kind
        names.append(name)
    outs = data.draw(st.lists(st.sampled_from(names[1:]), min_size=1, max_size=3, unique=True), label="outputs")
    g.set_outputs(*outs)
    g.infer_types()
    steps = {k: Step(k, t) for k, t in targets.items()}
    _check_plan(g, steps, ("llvm",))
