"""CUDA target strings and objects: which architecture they select, and the errors for bad ones."""

from __future__ import annotations

import pytest

import vdla
from vdla.compiler import te
from vdla.compiler.targets.cuda.target import CudaTarget, is_cuda


@pytest.mark.parametrize(
    ("text", "arch"),
    [("cuda", "sm_80"), ("nvptx", "sm_80"), ("cuda -arch=sm_90", "sm_90"), ("nvptx -mcpu=sm_90", "sm_90"),
     (CudaTarget("sm_90"), "sm_90")],
)  # fmt: skip
def test_parse(text: object, arch: str) -> None:
    t = CudaTarget.parse(text)  # type: ignore[arg-type]
    assert t.arch == arch
    assert is_cuda(text)
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
    assert not is_cuda("llvm") and not is_cuda("vdla") and not is_cuda("")
