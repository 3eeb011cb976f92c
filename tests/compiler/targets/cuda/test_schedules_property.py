"""Property test: random valid matmul tilings (block, thread and reduction tiles, fetch width) all
give PTX that ptxas accepts and a CPU reference equal to numpy — the bound inference of the shared
tiles over the block's threads, the cooperative fetch and the register tile for any tiling."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cuda import cpu_reference, needs_ptxas

import vdla
from vdla.compiler.targets.cuda import schedules as S
from vdla.compiler.targets.cuda.ptxas import assemble


@st.composite
def tilings(draw: st.DrawFn) -> tuple[S.MatmulTiles, int, int, int]:
    tm, tn = draw(st.sampled_from([1, 2, 4])), draw(st.sampled_from([1, 2, 4]))
    bm, bn = tm * draw(st.sampled_from([2, 4, 8])), tn * draw(st.sampled_from([2, 4, 8]))
    bk = draw(st.sampled_from([4, 8, 16]))
    threads = (bm // tm) * (bn // tn)
    ok = [v for v in (4, 2, 1) if bk % v == 0 and bn % v == 0 and (bm * bk) % (threads * v) == 0
          and (bk * bn) % (threads * v) == 0]  # fmt: skip
    vec = draw(st.sampled_from(ok or [1]))
    vt = draw(st.sampled_from([v for v in (1, 2) if tm % v == 0 and tn % v == 0]))
    m, n, k = bm * draw(st.integers(1, 2)), bn * draw(st.integers(1, 2)), bk * draw(st.integers(1, 3))
    return S.MatmulTiles(bm, bn, bk, tm, tn, vec, vt), m, n, k


@needs_ptxas
@settings(max_examples=8, deadline=None, derandomize=True)
@given(case=tilings(), seed=st.integers(0, 2**16))
def test_random_matmul_tilings(case: tuple[S.MatmulTiles, int, int, int], seed: int) -> None:
    tiles, m, n, k = case
    print(f"tiles {tiles}, shape {m}x{n}x{k}, seed {seed}")
    A, B, C = S.matmul(m, n, k)
    try:
        s = S.schedule_matmul(C, tiles)
    except ValueError as e:  # a fetch that does not split evenly over the threads is refused by name
        assert "does not split over" in str(e) or "fetch width" in str(e)
        return
    f = vdla.build(s, [A, B, C], target="cuda -arch=sm_90")
    assemble(f.ptx, "sm_90")
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)).astype("float32"), rng.standard_normal((k, n)).astype("float32")
    (c,) = cpu_reference(s, [A, B, C], [a, b])
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
