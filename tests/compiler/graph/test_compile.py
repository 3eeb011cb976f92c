"""compile_model's progress: one message per distinct kernel, numbered 1..N without gaps."""

from __future__ import annotations

import re

from vdla.compiler.graph import models, passes
from vdla.compiler.graph.executor import compile_model
from vdla.compiler.graph.zoo import load_model
from vdla.config import Config


def test_compile_counter_counts_the_kernels_it_compiles():
    spec = load_model("resnet18", reduced=True)
    cal = models.sample_input(spec.graph, 100, count=1)
    g = passes.prepare(spec.graph, cal, Config(), spec.qconfig, spec.policy)  # shared kernels: layer1.0/1.1, ...
    messages: list[str] = []
    m = compile_model(g, Config(), progress=messages.append)
    counts = [tuple(map(int, re.search(r"compiling kernel (\d+)/(\d+)", s).groups())) for s in messages]
    n = len(m.functions)
    assert n < sum(k.target == "vdla" for k in m.kernels.values())  # some nodes share a kernel ...
    assert counts == [(i, n) for i in range(1, n + 1)]  # ... and the counter neither skips nor overshoots
    assert list(m.kernels) == [node.name for node in m.graph.topo_order()]
