"""``vdla.rpc``: ``LocalSession``, what VTA programs use for simulators (``rpc.LocalSession()``),
in this process -- upload a module file, load it, name its devices.

vdla has no remote procedure calls: a board is driven from this machine over its
serial bridge (``vdla.runtime.ndarray.set_ext_dev_backend("serial:/dev/ttyUSB0")``);
work spread over machines goes through Dask (:mod:`vdla.cluster`). ``rpc.connect`` says
so when called (:data:`vdla.compat.aliases.UNSUPPORTED`).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ..runtime.module import load_module
from ..runtime.ndarray import DLDevice, cpu, device, ext_dev
from .aliases import module_getattr
from .contrib.utils import tempdir

__all__ = ["LocalSession", "connect"]  # noqa: F822  (connect: from __getattr__)


class LocalSession:
    """A session on this machine: files ``upload``-ed go to a temporary folder."""

    def __init__(self) -> None:
        self._dir = tempdir()

    def upload(self, data: str | Path | bytes, target: str | None = None) -> None:
        """Copy a file (or write ``bytes`` as ``target``) into the session's folder."""
        if isinstance(data, bytes):
            if not target:
                raise ValueError("upload: give target= (a file name) for bytes")
            Path(self._dir.relpath(target)).write_bytes(data)
            return
        src = Path(data)
        shutil.copyfile(src, self._dir.relpath(target or src.name))

    def download(self, path: str) -> bytes:
        """The bytes of a file in the session's folder."""
        return Path(self._dir.relpath(path)).read_bytes()

    def load_module(self, path: str) -> Any:
        """Load a module file uploaded to the session (:func:`vdla.runtime.module.load_module`)."""
        return load_module(self._dir.relpath(path))

    def cpu(self, dev_id: int = 0) -> DLDevice:
        return cpu(dev_id)

    def ext_dev(self, dev_id: int = 0) -> DLDevice:
        return ext_dev(dev_id)

    def device(self, dev_type: str, dev_id: int = 0) -> DLDevice:
        return device(dev_type, dev_id)


__getattr__ = module_getattr(__name__)  # rpc.connect: not supported, says what to use
