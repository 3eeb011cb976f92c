"""``vdla.testing``: the checking helpers TVM programs use (``tvm.testing.assert_allclose`` ...).

They accept NDArrays (anything with ``.numpy()``) as well as numpy arrays and Python values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..runtime.ndarray import cuda, is_array_like

__all__ = [
    "assert_allclose", "assert_equal", "device_enabled", "enabled_targets", "requires_cuda", "requires_llvm",
    "requires_gpu", "uses_gpu", "main", "CUDA_ARCHS", "assemble_cuda", "run_cuda_schedule_on_cpu",
]


def _np(x: Any) -> Any:
    return x.numpy() if is_array_like(x) else x


def assert_allclose(actual: Any, desired: Any, rtol: float = 1e-7, atol: float = 1e-7) -> None:
    """Like ``np.testing.assert_allclose`` (TVM's defaults: rtol = atol = 1e-7), shapes must match exactly."""
    a, d = np.asarray(_np(actual)), np.asarray(_np(desired))
    np.testing.assert_allclose(a.shape, d.shape)
    np.testing.assert_allclose(a, d, rtol=rtol, atol=atol, verbose=True)


def assert_equal(actual: Any, desired: Any) -> None:
    np.testing.assert_equal(np.asarray(_np(actual)), np.asarray(_np(desired)))


def device_enabled(target: Any) -> bool:
    """Whether programs for ``target`` (a string or Target) can run here."""
    kind = getattr(getattr(target, "kind", None), "name", None) or str(target).split()[0]
    if kind in ("cuda", "nvptx", "gpu"):
        return cuda(0).exist
    return kind in ("llvm", "cpu", "c", "ext_dev", "vdla", "vta")


def enabled_targets() -> list[tuple[str, Any]]:
    """``[(target, device), ...]`` for the targets that run here (TVM's ``tvm.testing.enabled_targets``)."""
    from ..runtime.ndarray import device

    return [(t, device(t)) for t in ("llvm", "cuda") if device_enabled(t)]


def _skip_unless(ok: bool, why: str) -> Any:
    import pytest

    return pytest.mark.skipif(not ok, reason=why)


def requires_cuda(f: Any) -> Any:
    """Skip the test (pytest) without a CUDA GPU."""
    return _skip_unless(cuda(0).exist, "needs a CUDA GPU")(f)


requires_gpu = requires_cuda


def requires_llvm(f: Any) -> Any:
    return f  # llvmlite is a dependency: the CPU target is always there


def uses_gpu(f: Any) -> Any:
    return f


#: the GPU architectures a cuda schedule is proven for without a GPU (Ampere A100, Hopper H100/H200)
CUDA_ARCHS = ("sm_80", "sm_90")


def assemble_cuda(s: Any, args: Any, name: str = "main", archs: tuple[str, ...] = CUDA_ARCHS) -> dict[str, str]:
    """Build schedule ``s`` for ``cuda`` on each architecture and have ptxas assemble every PTX, the
    strongest check of a GPU build without a GPU; returns ptxas's report (registers, shared
    memory, spills) per architecture, or raises PtxasError with ptxas's message."""
    from ..compiler.driver import build
    from ..compiler.targets.cuda.ptxas import assemble

    return {arch: assemble(build(s, list(args), target=f"cuda -arch={arch}", name=name).get_source(), arch).report
            for arch in archs}  # fmt: skip


def run_cuda_schedule_on_cpu(s: Any, args: Any, *arrays: Any) -> None:
    """Run a cuda schedule's loop nest on the CPU, its GPU threads as serial loops (the users' cuda
    intrinsic lowering rules applied), on numpy ``arrays`` (outputs written in place): its index
    arithmetic, bounds and guards, checked against numpy without a GPU. What only a GPU has
    (barriers, the threads' exchange in a cross-thread reduction) is ptxas's to check."""
    from ..compiler.driver import build, lower
    from ..compiler.targets.cuda.lower import lower_intrinsics, threads_as_loops

    # opt_level 2: LLVM's O3 loop passes take seconds on these nests and the check needs no speed
    build(threads_as_loops(lower_intrinsics(lower(s, list(args)))), target="llvm", opt_level=2)(*arrays)


def main() -> None:
    """Run the calling test file with pytest (TVM's ``tvm.testing.main()``)."""
    import sys

    import pytest

    sys.exit(pytest.main([sys.argv[0], *sys.argv[1:]]))
