"""The GPU facts of a target: each architecture's PTX version and per-block limits.

:func:`cuda_limits` reads a cuda :class:`~vdla.compiler.targets.target.Target` (parsed and
checked there: ``"cuda"``, ``"nvptx"``, ``"cuda -arch=sm_90"``, ``-mcpu=sm_90`` too) into
:class:`CudaLimits`: the architecture the PTX is generated for (``sm_80``, Ampere A100, by
default; ``sm_90``, Hopper H100/H200) and the per-block limits the lowering checks a schedule
against: threads per block and per dimension, and the static shared memory a kernel may
declare (48 KiB without the opt-in a dynamic allocation needs).

:func:`for_device` gives a cuda target without ``-arch`` the architecture of a GPU (the
pure rule); :func:`for_present_device` applies it with GPU 0's, as ``vdla run/build
--target cuda`` do. Without a GPU the target stays as written (:data:`DEFAULT_ARCH`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..target import Target, TargetError

__all__ = ["ARCHS", "DEFAULT_ARCH", "TRIPLE", "CudaLimits", "cuda_limits", "for_device", "for_present_device",
           "present_arch"]

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


def _arch_number(arch: str) -> int:
    """``sm_90`` -> 90, ``sm_90a`` -> 90, ``sm_120`` -> 120 (the compute capability, for ordering)."""
    digits = arch.removeprefix("sm_").rstrip("abcdefghijklmnopqrstuvwxyz")
    if not digits.isdigit():
        raise TargetError(f"GPU architecture {arch!r} is not of the form sm_XY")
    return int(digits)


def for_device(target: str | Target, device_arch: str | None) -> Target:
    """``target`` built for a GPU of ``device_arch`` (``"sm_90"``; None: no GPU).

    A cuda target that names its architecture (``-arch`` or ``-mcpu``), any other kind, or no
    GPU: the target unchanged. Otherwise the GPU's own architecture when it is one of
    :data:`ARCHS`, else the newest of them below it (sm_100 -> sm_90: the driver JIT-compiles
    PTX forward to newer GPUs, never back); a GPU older than all of them is a TargetError.
    """
    t = Target(target)
    if t.backend != "cuda" or "arch" in t.attrs or "mcpu" in t.attrs or device_arch is None:
        return t
    below = [a for a in ARCHS if _arch_number(a) <= _arch_number(device_arch)]
    if not below:
        raise TargetError(f"the GPU present is {device_arch}, older than every architecture the cuda target "
                          f"supports ({', '.join(ARCHS)}); to build for another GPU name it, e.g. "
                          f"'{t} -arch={DEFAULT_ARCH}'")
    arch = device_arch if device_arch in ARCHS else max(below, key=_arch_number)
    return Target(f"{t} -arch={arch}", host=t.host)


def present_arch() -> str | None:
    """GPU 0's architecture (``"sm_90"``), or None without a GPU, a CUDA driver or cuda-bindings."""
    from ....runtime.cuda_driver import NoCudaDevice, device_count, get_device

    if device_count() == 0:
        return None
    try:
        return get_device(0).arch
    except NoCudaDevice:
        return None


def for_present_device(target: str | Target) -> Target:
    """``target`` for GPU 0 (:func:`for_device` with :func:`present_arch`); no driver query for other kinds."""
    t = Target(target)
    return for_device(t, present_arch()) if t.backend == "cuda" else t
