"""Assembling PTX with ``ptxas`` (from the ``nvidia-cuda-nvcc`` wheel or a CUDA install) to prove it valid.

Without a GPU this is the strongest check of generated PTX there is: ptxas parses,
type-checks and register-allocates it for a real architecture exactly as the driver's JIT
would. :func:`find_ptxas` looks in the installed ``nvidia`` wheels first, then ``$CUDA_HOME``
and ``PATH``; :func:`assemble` returns the cubin and ptxas's resource report (registers,
shared memory, spills) or raises :class:`PtxasError` with ptxas's message.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass


class PtxasError(RuntimeError):
    """ptxas rejected the PTX (or is not installed)."""


@functools.cache
def find_ptxas() -> str | None:
    """Path of a ptxas executable, or None when there is none."""
    try:
        import nvidia  # namespace package of NVIDIA's wheels (nvidia-cuda-nvcc installs nvidia/cu*/bin/ptxas)

        roots = list(nvidia.__path__)
    except ImportError:
        roots = []
    for root in roots:
        for cand in sorted(glob.glob(os.path.join(root, "*", "bin", "ptxas")), reverse=True):
            if os.access(cand, os.X_OK):
                return cand
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and os.access(os.path.join(home, "bin", "ptxas"), os.X_OK):
        return os.path.join(home, "bin", "ptxas")
    return shutil.which("ptxas")


@dataclass
class Assembled:
    cubin: bytes
    report: str  # ptxas -v: registers, shared memory and spills per kernel


def assemble(ptx: str, arch: str) -> Assembled:
    """Assemble ``ptx`` for ``arch`` (``"sm_80"``); raise PtxasError if ptxas refuses it."""
    exe = find_ptxas()
    if exe is None:
        raise PtxasError("ptxas not found: install the nvidia-cuda-nvcc wheel (pip install nvidia-cuda-nvcc)")
    with tempfile.TemporaryDirectory(prefix="vdla-ptxas-") as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as fh:
            fh.write(ptx)
        try:
            proc = subprocess.run([exe, f"-arch={arch}", "-v", src, "-o", out], capture_output=True, text=True,
                                  timeout=120)  # fmt: skip
        except subprocess.TimeoutExpired:
            raise PtxasError(f"ptxas -arch={arch} did not finish in 120 s") from None
        if proc.returncode != 0:
            raise PtxasError(f"ptxas -arch={arch} rejected the PTX:\n{proc.stderr.strip()}")
        with open(out, "rb") as fh:
            return Assembled(fh.read(), proc.stderr + proc.stdout)
