"""CUDA targets: ``"cuda"``, ``"nvptx"``, ``"cuda -arch=sm_90"`` and the limits of each architecture.

A :class:`CudaTarget` names the GPU architecture the PTX is generated for (``sm_80``, Ampere
A100, by default; ``sm_90``, Hopper H100/H200) and carries the per-block limits the lowering
checks a schedule against: threads per block and per dimension, and the static shared
memory a kernel may declare (48 KiB without the opt-in a dynamic allocation needs).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..llvm.target import TargetError

#: per architecture: (PTX ISA version LLVM emits, static shared memory per block in bytes)
ARCHS: dict[str, tuple[str, int]] = {
    "sm_80": ("ptx78", 48 * 1024),
    "sm_86": ("ptx78", 48 * 1024),
    "sm_89": ("ptx78", 48 * 1024),
    "sm_90": ("ptx78", 48 * 1024),
}
DEFAULT_ARCH = "sm_80"
KINDS = ("cuda", "nvptx")
TRIPLE = "nvptx64-nvidia-cuda"


@dataclass(frozen=True)
class CudaTarget:
    """A GPU target: the architecture and its per-block limits."""

    arch: str = DEFAULT_ARCH
    max_threads_per_block: int = 1024
    max_threads_dim: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dim: tuple[int, int, int] = (2**31 - 1, 65535, 65535)

    kind = "cuda"
    triple = TRIPLE

    @property
    def ptx_version(self) -> str:
        return ARCHS[self.arch][0]

    @property
    def max_shared_memory_per_block(self) -> int:
        return ARCHS[self.arch][1]

    @staticmethod
    def parse(target: str | CudaTarget) -> CudaTarget:
        """``"cuda"``, ``"nvptx"``, ``"cuda -arch=sm_90"`` (``-mcpu=sm_90`` is accepted too)."""
        if isinstance(target, CudaTarget):
            return target
        if not isinstance(target, str) or not target.strip():
            raise TargetError(f"target must be a string like 'cuda -arch=sm_90', got {target!r}")
        words = shlex.split(target)
        if words[0] not in KINDS:
            raise TargetError(f"{target!r} is not a CUDA target (use 'cuda' or 'nvptx', optionally -arch=sm_XX)")
        arch = DEFAULT_ARCH
        for o in words[1:]:
            key, _, val = o.partition("=")
            if key in ("-arch", "-mcpu") and val:
                arch = val
            else:
                raise TargetError(f"unknown CUDA target option {o!r} in {target!r} (use -arch=sm_80 or -arch=sm_90)")
        if arch not in ARCHS:
            raise TargetError(f"unsupported GPU architecture {arch!r} in {target!r}; supported: {', '.join(ARCHS)}")
        return CudaTarget(arch)

    def __str__(self) -> str:
        return f"cuda -arch={self.arch}"


def is_cuda(target: object) -> bool:
    """True for a CudaTarget or a string whose kind is ``cuda`` or ``nvptx``."""
    if isinstance(target, CudaTarget):
        return True
    return isinstance(target, str) and bool(target.split()) and target.split()[0] in KINDS
