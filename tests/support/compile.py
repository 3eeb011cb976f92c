"""Compiler test helpers: random inputs of any dtype, and build-for-the-host-and-compare against a numpy reference."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vdla.compiler import build
from vdla.compiler.te import Tensor


def rand(shape: Sequence[int], dtype: str, rng: np.random.Generator) -> np.ndarray:
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -100), min(info.max, 100)
    return rng.integers(lo, hi + 1, size=shape, dtype=dtype)


def concrete_shape(t: Tensor, env: dict[Any, int] | None = None) -> tuple[int, ...]:
    out = []
    for s in t.shape:
        if hasattr(s, "value"):
            out.append(s.value)
        else:
            out.append(env[s])  # type: ignore[index]
    return tuple(out)


def check(
    sch: Any,
    inputs: Sequence[Tensor],
    outputs: Sequence[Tensor],
    ref: Callable[..., Any],
    rtol: float = 1e-5,
    atol: float = 1e-5,
    env: dict[Any, int] | None = None,
    seed: int = 0,
) -> None:
    """Build ``sch`` for the host, run it on random inputs, and compare with ``ref(*inputs)``."""
    rng = np.random.default_rng(seed)
    f = build(sch, list(inputs) + list(outputs))
    ins = [rand(concrete_shape(t, env), t.dtype, rng) for t in inputs]
    outs = [np.zeros(concrete_shape(t, env), t.dtype) for t in outputs]
    f(*ins, *outs)
    want = ref(*ins)
    if not isinstance(want, tuple):
        want = (want,)
    for got, w in zip(outs, want, strict=True):
        if got.dtype.kind == "f":
            np.testing.assert_allclose(got, np.asarray(w, dtype=got.dtype), rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(got, np.asarray(w).astype(got.dtype))
