"""``tempdir()``: a temporary folder with ``relpath(name)``, as TVM's ``tvm.contrib.utils``."""

from __future__ import annotations

import os
import shutil
import tempfile

__all__ = ["TempDirectory", "tempdir"]


class TempDirectory:
    """A folder removed when the object goes away (or on ``remove()``), unless ``keep``."""

    def __init__(self, custom_path: str | None = None, keep_for_debug: bool = False) -> None:
        if custom_path:
            os.makedirs(custom_path, exist_ok=True)
            self.temp_dir = custom_path
        else:
            self.temp_dir = tempfile.mkdtemp(prefix="vdla_")
        self._keep = keep_for_debug or bool(custom_path)

    def relpath(self, name: str) -> str:
        return os.path.join(self.temp_dir, name)

    def listdir(self) -> list[str]:
        return os.listdir(self.temp_dir)

    def remove(self) -> None:
        if not self._keep and os.path.isdir(self.temp_dir):
            shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __del__(self) -> None:
        self.remove()

    def __enter__(self) -> TempDirectory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def tempdir(custom_path: str | None = None, keep_for_debug: bool = False) -> TempDirectory:
    return TempDirectory(custom_path, keep_for_debug)
