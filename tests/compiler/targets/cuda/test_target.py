"""CUDA targets: which architecture and limits they select (cuda_limits), and the errors for bad ones."""

from __future__ import annotations

import pytest

import vdla
from vdla.compiler import te
from vdla.compiler.targets.cuda.target import CudaLimits, cuda_limits
from vdla.target import Target, TargetError


@pytest.mark.parametrize(
    ("text", "arch"),
    [("cuda", "sm_80"), ("nvptx", "sm_80"), ("cuda -arch=sm_90", "sm_90"), ("nvptx -mcpu=sm_90", "sm_90"),
     (Target("cuda -arch=sm_90", host="llvm"), "sm_90"), ({"kind": "cuda", "arch": "sm_90"}, "sm_90")],
)  # fmt: skip
def test_limits(text: object, arch: str) -> None:
    target = Target(text)  # type: ignore[arg-type]
    assert target.backend == "cuda" and target.keys == ["cuda", "gpu"]
    t = cuda_limits(target)
    assert t == CudaLimits(arch) and t.arch == arch
    assert str(t) == f"cuda -arch={arch}"
    assert t.max_threads_per_block == 1024 and t.max_shared_memory_per_block == 48 * 1024


@pytest.mark.parametrize(
    ("text", "match"),
    [("cuda -arch=sm_10", "unsupported GPU architecture 'sm_10'"), ("cuda -fast", "unknown CUDA target option '-fast'"),
     ("cuda -arch", "unknown CUDA target option '-arch'")],
)  # fmt: skip
def test_bad_target(text: str, match: str) -> None:
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(ValueError, match=match):
        vdla.build(te.create_schedule(B.op), [A, B], target=text)


def test_llvm_is_not_cuda() -> None:
    assert Target("llvm").backend == "llvm" and Target("vdla").backend == "vdla"
    with pytest.raises(TargetError, match="'llvm' is not a CUDA target"):
        cuda_limits(Target("llvm"))
    with pytest.raises(TargetError, match="unknown CUDA target option '-fast'"):
        Target("cuda -fast")  # the options are checked where the string is parsed
