"""Old import paths that keep working for one release after a module moved.

``ALIASES`` maps an old dotted path to where the module lives now; a path below an old
package maps to the same place below the new one (``vdla.compiler.passes.simplify`` ->
``vdla.compiler.tir.passes.simplify``). Importing an old path gives the new module
itself (so classes are identical) and a ``DeprecationWarning`` naming the new path,
except for the few old paths listed in ``SILENT`` that remain public. The finder is
installed by ``vdla/__init__.py``; nothing else in vdla imports an old path.
``MOVED_NAMES`` does the same for public names that left a module that stays (a
module's ``__getattr__ = moved_names(__name__)`` looks them up when first used).
The same finder serves ``PUBLIC``: TVM's module paths (``vdla.autotvm``, ``vdla.te``, ...),
which are not deprecated and never warn.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

#: old path -> new path (the most specific entry wins)
ALIASES: dict[str, str] = {
    "vdla.compiler.ir": "vdla.compiler.tir.nodes",
    "vdla.compiler.visitor": "vdla.compiler.tir.visitor",
    "vdla.compiler.printer": "vdla.compiler.tir.printer",
    "vdla.compiler.arith": "vdla.compiler.tir.arith",
    "vdla.compiler.dtypes": "vdla.compiler.tir.dtypes",
    "vdla.compiler.passes": "vdla.compiler.tir.passes",
    "vdla.compiler.schedule_ops": "vdla.compiler.schedule.loop_nest",
    "vdla.compiler.bound": "vdla.compiler.schedule.bound",
    "vdla.compiler.tensorize": "vdla.compiler.schedule.tensorize",
    "vdla.compiler.codegen": "vdla.compiler.targets.llvm",
    "vdla.compiler.codegen.llvm": "vdla.compiler.targets.llvm.codegen",
    "vdla.compiler.vdla": "vdla.compiler.targets.vdla",
    "vdla.compiler.graph.cpu_llvm": "vdla.compiler.targets.llvm.strategy",
    "vdla.compiler.targets.vdla.topi": "vdla.compiler.targets.vdla.top",
    "vdla.compiler.targets.vdla.topi_ext": "vdla.compiler.targets.vdla.top",
    "vdla.runtime.pysim": "vdla.runtime.backends.pysim",
    "vdla.runtime.verilator": "vdla.simulator.rtl.verilator",
    "vdla.runtime.serial": "vdla.runtime.backends.serial",
    "vdla.runtime.fuzz": "vdla.fuzz.campaign",
    "vdla.runtime.randprog": "vdla.fuzz.randprog",
}

#: (module, name) -> module that holds the name now, for public names that moved out of a module that stays
MOVED_NAMES: dict[tuple[str, str], str] = {
    **{("vdla.compiler.topi", name): "vdla.compiler.targets.llvm.schedules" for name in (
        "schedule_conv2d_nchw", "schedule_conv2d_NCHWc", "NCHWcConfig", "schedule_depthwise_conv2d_nchw",
        "schedule_conv2d_transpose_nchw", "schedule_dense", "schedule_injective", "schedule_matmul_cpu",
        "MatmulConfig", "schedule_pool", "schedule_global_pool", "schedule_softmax")},
}

#: old paths that stay without a warning (VTA's ``vta.get_env()`` is written this way)
SILENT: frozenset[str] = frozenset({"vdla.compiler.vdla", "vdla.compiler.vdla.env"})

#: TVM's module paths, for good and without a warning (``import vdla.autotvm``, ``from vdla.te
#: import placeholder``, ``from vdla.topi.utils import get_const_tuple`` as TVM programs write them);
#: they and the paths below them are the compiler's modules themselves
PUBLIC: dict[str, str] = {
    "vdla.te": "vdla.compiler.te", "vdla.tir": "vdla.compiler.tir", "vdla.topi": "vdla.compiler.topi",
    "vdla.compiler.topi.utils": "vdla.compiler.topi.util", "vdla.autotvm": "vdla.compiler.autotvm",
    "vdla.target": "vdla.compiler.targets.target", "vdla.transform": "vdla.compiler.transform",
}
ALIASES.update(PUBLIC)


def is_public(path: str) -> bool:
    """A path imported without a warning (SILENT, or PUBLIC and below)."""
    return path in SILENT or any(path == p or path.startswith(p + ".") for p in PUBLIC)


def new_path(old: str) -> str | None:
    """Where the module once imported as ``old`` lives now (None: it did not move)."""
    path, seen = old, set()
    while path not in seen:  # an old path may point at one that moved again (vdla.compiler.vdla.topi)
        seen.add(path)
        best = max((a for a in ALIASES if path == a or path.startswith(a + ".")), key=len, default=None)
        if best is None:
            break
        path = ALIASES[best] + path[len(best):]
    return None if path == old else path


def moved_names(module: str) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``module`` that finds its moved names (``MOVED_NAMES``)."""

    def __getattr__(name: str) -> Any:
        home = MOVED_NAMES.get((module, name))
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(f"{module}.{name} is deprecated: use {home}.{name} (the old name goes in the next release)",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(home), name)

    return __getattr__


def _caller_stacklevel() -> int:
    """The stacklevel of the first frame outside the import system and this module."""
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename.startswith("<frozen importlib")
                                 or frame.f_code.co_filename == __file__):
        frame, level = frame.f_back, level + 1
    return level


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if not is_public(self.old):
            warnings.warn(f"{self.old} is deprecated: import {self.new} (the old path goes in the next release)",
                          DeprecationWarning, stacklevel=_caller_stacklevel())
        module = importlib.import_module(self.new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        module.__spec__ = self._spec  # the import system set the old path's spec on the module: put its own back


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = new_path(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(fullname, new))


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
