"""The GPU facts of a target: each architecture's PTX version and per-block limits.

:func:`cuda_limits` reads a cuda :class:`~vdla.compiler.targets.target.Target` (parsed and
checked there: ``"cuda"``, ``"nvptx"``, ``"cuda -arch=sm_90"``, ``-mcpu=sm_90`` too) into
:class:`CudaLimits`: the architecture the PTX is generated for (``sm_80``, Ampere A100, by
default; ``sm_90``, Hopper H100/H200) and the per-block limits the lowering checks a schedule
against: threads per block and per dimension, and the static shared memory a kernel may
declare (48 KiB without the opt-in a dynamic allocation needs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..target import TargetError

if TYPE_CHECKING:
    from ..target import Target

__all__ = ["ARCHS", "DEFAULT_ARCH", "TRIPLE", "CudaLimits", "cuda_limits"]

#: per architecture: (PTX ISA version LLVM emits, static shared memory per block in bytes)
ARCHS: dict[str, tuple[str, int]] = {
    "sm_80": ("ptx78", 48 * 1024),
    "sm_86": ("ptx78", 48 * 1024),
    "sm_89": ("ptx78", 48 * 1024),
    "sm_90": ("ptx78", 48 * 1024),
}
DEFAULT_ARCH = "sm_80"
TRIPLE = "nvptx64-nvidia-cuda"


@dataclass(frozen=True)
class CudaLimits:
    """A GPU architecture and its per-block limits; ``str()`` is its canonical target string."""

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

    def __str__(self) -> str:
        return f"cuda -arch={self.arch}"


def cuda_limits(target: Target) -> CudaLimits:
    """The architecture (``-arch``, or ``-mcpu``; :data:`DEFAULT_ARCH`) of a cuda target and its limits."""
    if target.backend != "cuda":
        raise TargetError(f"{str(target)!r} is not a CUDA target (use 'cuda' or 'nvptx', optionally -arch=sm_XX)")
    arch = str(target.attrs.get("arch", target.attrs.get("mcpu", DEFAULT_ARCH)))
    if arch not in ARCHS:
        raise TargetError(f"unsupported GPU architecture {arch!r} in {str(target)!r}; supported: {', '.join(ARCHS)}")
    return CudaLimits(arch)
