"""GPU test helpers: build a schedule for every CUDA architecture we support and prove its PTX with
ptxas; build the same schedule's CPU reference (threads as loops) and compare it with numpy;
skip markers for tests that need ptxas or a GPU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import vdla
from vdla.compiler.targets.cuda.lower import threads_as_loops
from vdla.compiler.targets.cuda.module import CUDAModule
from vdla.compiler.targets.cuda.ptxas import assemble, find_ptxas
from vdla.compiler.targets.cuda.runtime import device_count

ARCHS = ("sm_80", "sm_90")

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="ptxas not found (pip install nvidia-cuda-nvcc)")
needs_gpu = pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU on this machine (the driver or device is absent)")


def build_all(s: Any, args: Sequence[Any], name: str = "main") -> dict[str, CUDAModule]:
    """Build for each architecture and assemble every PTX with ptxas (raises if it is invalid)."""
    out = {}
    for arch in ARCHS:
        f = vdla.build(s, list(args), target=f"cuda -arch={arch}", name=name)
        assert f"\n.target {arch}" in f.ptx
        if find_ptxas() is not None:
            f.ptxas_report = assemble(f.ptx, arch).report  # type: ignore[attr-defined]
        out[arch] = f
    return out


def cpu_reference(s: Any, args: Sequence[Any], inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run the schedule on the CPU with its GPU threads as serial loops; returns the outputs."""
    f = vdla.build(threads_as_loops(vdla.lower(s, list(args))), target="llvm")
    outs = [np.zeros(tuple(int(x.value) for x in a.shape), a.dtype) for a in args[len(inputs):]]
    f(*inputs, *outs)
    return outs


def simt_check_points(name: str, args: list[Any], n: int, seed: int) -> None:
    """Build template ``name``'s fallback point and random ones (``seed``) for sm_80 until ``n``
    of them build, and run each kernel with its threads in lockstep between barriers
    (support.simt) against the template's numpy reference: the cooperative fetches and their
    barriers, which threads-as-loops cannot check. Fails when fewer than ``n`` of 21 points build."""
    from support.simt import run_kernels
    from vdla.compiler.autotvm.measure import _reference
    from vdla.compiler.autotvm.task import create

    task = create(name, args, "cuda -arch=sm_80")
    rng = np.random.default_rng(seed)
    checked = 0
    for i in [task.fallback().index, *(int(rng.integers(len(task.config_space))) for _ in range(20))]:
        try:
            s, tensors = task.instantiate(task.config_space.get(i))
            f = vdla.build(s, tensors, target=task.target)
        except Exception:  # noqa: BLE001 - an invalid point (the builder's tests cover those)
            continue
        ins, want = _reference(task, tensors)
        out = np.zeros(want[0].shape, np.float32)
        run_kernels(f, *[a.copy() for a in ins], out)
        np.testing.assert_allclose(out, want[0], rtol=1e-4, atol=1e-4)
        checked += 1
        if checked == n:
            return
    raise AssertionError(f"{name}: only {checked} points built")
