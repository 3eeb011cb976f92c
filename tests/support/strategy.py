"""Graph-strategy test helpers: build a graph for llvm (run natively) and for cuda (PTX assembled
by ptxas when present, the loop IR run on the CPU with the threads as loops) and compare every
output with the numpy semantics of the graph's own operators (:func:`reference.run`)."""

from __future__ import annotations

import numpy as np

from support.cuda import ARCHS
from vdla.compiler.graph.executor import compile_model
from vdla.compiler.graph.ir import Graph
from vdla.compiler.graph.reference import run as reference_run
from vdla.compiler.targets.cuda.ptxas import assemble, find_ptxas

SEED = 2026


def data(g: Graph, seed: int) -> dict[str, np.ndarray]:
    """Inputs uniform over [-4, 4]: both sides of every kink (hard-sigmoid's, shrink's, thresholded ReLU's)."""
    rng = np.random.default_rng(seed)
    return {k: (rng.uniform(-4, 4, t.shape)).astype(t.dtype) for k, t in g.inputs.items()}


def check_on_every_target(g: Graph, seed: int = SEED) -> None:
    """No host step on llvm nor on cuda (every architecture of :data:`ARCHS`), and outputs equal
    to the reference within 2e-5 (relative, and absolute scaled by the outputs' magnitude)."""
    print(f"seed {seed}")
    x = data(g, seed)
    want = reference_run(g, x, check=False)
    tol = dict(rtol=2e-5, atol=2e-5 * max(1.0, max(float(np.abs(w).max()) for w in want)))
    m = compile_model(g, target="llvm")
    assert m.host_steps() == [], [(n, m.kernels[n].host_reason) for n in m.host_steps()]
    for got, w in zip(m.run(x).outputs, want, strict=True):
        np.testing.assert_allclose(got, w, **tol)
    for arch in ARCHS:
        c = compile_model(g, target=f"cuda -arch={arch}")
        assert {k.target for k in c.kernels.values()} <= {"cuda", "view"}, c.table()
        if find_ptxas() is not None:
            for k in c.kernels.values():
                if k.target == "cuda":
                    assemble(k.kernel.func.ptx, arch)
    for got, w in zip(c.run_on_cpu(x), want, strict=True):
        np.testing.assert_allclose(got, w, **tol)
