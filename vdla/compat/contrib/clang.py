"""``create_llvm``: C/C++ source to LLVM IR text with clang, for ``pragma(ax, "import_llvm", ir)``
(TVM's ``tvm.contrib.clang``). clang is not a Python package: it is found on PATH (or ``cc=``)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["create_llvm", "find_clang"]


def find_clang(cc: str | None = None) -> str | None:
    for name in ([cc] if cc else ["clang", *(f"clang-{v}" for v in range(25, 9, -1))]):
        path = shutil.which(name)
        if path:
            return path
    return None


def create_llvm(inputs: str | list[str], output: str | None = None, options: list[str] | None = None,
                cc: str | None = None) -> str:
    """Compile C++ source text(s) to one LLVM IR module and return its text (also written to ``output``)."""
    clang = find_clang(cc)
    if clang is None:
        raise RuntimeError(
            "create_llvm: no clang on PATH; install clang, or give the LLVM IR text to import_llvm directly"
        )
    sources = [inputs] if isinstance(inputs, str) else list(inputs)
    with tempfile.TemporaryDirectory() as tmp:
        lls = []
        for k, src in enumerate(sources):
            cpp = Path(tmp) / f"input{k}.cc"
            cpp.write_text(src)
            ll = Path(tmp) / f"output{k}.ll"
            cmd = [clang, "-S", "-emit-llvm", "-O2", "-fno-exceptions", *(options or []), str(cpp), "-o", str(ll)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode:
                raise RuntimeError(f"create_llvm: clang failed on input {k}:\n{proc.stderr}")
            lls.append(ll.read_text())
    text = "\n".join(lls)
    if output:
        Path(output).write_text(text)
    return text
