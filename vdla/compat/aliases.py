"""The import paths and names of vdla's TVM face: one finder and its tables.

Four tables, one mechanism:

- ``PUBLIC``: TVM's module paths, for good and without a warning (``import vdla.autotvm``,
  ``from vdla.te import placeholder``, ``import vdla.vta as vta``): each is the module it
  names (``vdla.te`` *is* ``vdla.compiler.te``), and so are the paths below it.
- ``ALIASES``: old dotted paths of modules that moved -> where they live now, for one
  release, with a ``DeprecationWarning`` naming the new path. A path below an old package
  maps to the same place below the new one (``vdla.compiler.passes.simplify`` ->
  ``vdla.compiler.tir.passes.simplify``); the most specific entry wins, and an old path
  may point at one that moved again. To retire a path, add a line
  ``"vdla.old.path": "vdla.new.path",`` (the test suite imports every entry). ``SILENT``
  lists the few old paths that stay without a warning.
- ``MOVED_NAMES``: public names that left a module that stays -> the module holding them
  now; found, with a warning, by the old module's ``__getattr__ = module_getattr(__name__)``.
- ``UNSUPPORTED``: names TVM has and vdla does not -> what to use instead. The same
  ``__getattr__`` hands out a callable that raises :class:`NotSupportedError` ("X is not
  supported in vdla: use Y") when used; ``UNSUPPORTED_MODULES`` does the same for module
  paths (importing one raises ``ModuleNotFoundError`` with the advice).

The finder is installed by ``vdla/__init__.py`` (:func:`install`); nothing in vdla imports
an old path. This module imports nothing of vdla, so any module may use :func:`module_getattr`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any, NoReturn

__all__ = ["ALIASES", "MOVED_NAMES", "PUBLIC", "SILENT", "UNSUPPORTED", "UNSUPPORTED_MODULES", "NotSupportedError",
           "install", "is_public", "module_getattr", "moved_names", "new_path", "not_supported"]

#: old path -> new path, for one release with a DeprecationWarning (the most specific entry wins)
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
    "vdla.compiler.graph.cpu_llvm": "vdla.compiler.graph.strategy.topi_ops",
    "vdla.compiler.targets.llvm.strategy": "vdla.compiler.graph.strategy.topi_ops",
    "vdla.compiler.targets.vdla.top.strategy": "vdla.compiler.graph.strategy.vdla",
    "vdla.compiler.graph.compile": "vdla.compiler.graph.executor.compile",
    "vdla.compiler.graph.kernels": "vdla.compiler.graph.executor.plan",
    "vdla.compiler.graph.model": "vdla.compiler.graph.executor.run",
    "vdla.compiler.graph.model_file": "vdla.compiler.graph.executor.model_file",
    "vdla.cli_errors": "vdla.cli.errors",
    "vdla.commands": "vdla.cli",
    "vdla.commands.verilog": "vdla.cli.verilog",
    "vdla.commands.outputs": "vdla.cli.outputs",
    "vdla.compiler.autotvm.cli": "vdla.compiler.autotvm.tuning",
    "vdla.explore.cli": "vdla.cli.sweep",
    "vdla.compiler.targets.vdla.topi": "vdla.compiler.targets.vdla.top",
    "vdla.compiler.targets.vdla.topi_ext": "vdla.compiler.targets.vdla.top",
    "vdla.runtime.pysim": "vdla.runtime.backends.pysim",
    "vdla.runtime.verilator": "vdla.simulator.rtl.verilator",
    "vdla.runtime.serial": "vdla.runtime.backends.serial",
    "vdla.runtime.fuzz": "vdla.fuzz.campaign",
    "vdla.runtime.randprog": "vdla.fuzz.randprog",
    "vdla.compiler.te.intrinsics": "vdla.compiler.tir.scalar",
    "vdla.sim": "vdla.cocotb_kit",
    "vdla.compiler.targets.vdla.resnet": "vdla.compiler.topi.workloads",
}

#: (module, name) -> module that holds the name now, for public names that moved out of a module that stays
MOVED_NAMES: dict[tuple[str, str], str] = {
    **{("vdla.compiler.topi", name): "vdla.compiler.targets.llvm.schedules" for name in (
        "schedule_conv2d_nchw", "schedule_conv2d_NCHWc", "NCHWcConfig", "schedule_depthwise_conv2d_nchw",
        "schedule_conv2d_transpose_nchw", "schedule_dense", "schedule_injective", "schedule_matmul_cpu",
        "MatmulConfig", "schedule_pool", "schedule_global_pool", "schedule_softmax")},
    # the main job split by job (the zoo, compiling onto VDLA, the report): the names job.py
    # still uses itself stay importable from it as they are
    **{("vdla.compiler.graph.job", name): "vdla.compiler.graph.zoo" for name in (
        "SETTINGS", "Settings", "parse_shapes")},
    # one Target class; the accelerator's lower/build beside the driver, not inside its target
    ("vdla.compiler.targets.llvm.target", "Target"): "vdla.compiler.targets.target",
    ("vdla.compiler.targets.vdla", "lower"): "vdla.compiler.accelerator",
    ("vdla.compiler.targets.vdla", "build"): "vdla.compiler.accelerator",
}

#: old paths that stay without a warning (VTA's ``vta.get_env()`` is written this way)
SILENT: frozenset[str] = frozenset({"vdla.compiler.vdla", "vdla.compiler.vdla.env"})

#: TVM's module paths, for good and without a warning; they and the paths below them are the modules they name
PUBLIC: dict[str, str] = {
    "vdla.te": "vdla.compiler.te",
    "vdla.tir": "vdla.compiler.tir",
    "vdla.ir": "vdla.compiler.tir.op_registry",
    "vdla.topi": "vdla.compiler.topi",
    "vdla.compiler.topi.utils": "vdla.compiler.topi.util",
    "vdla.autotvm": "vdla.compiler.autotvm",
    "vdla.target": "vdla.compiler.targets.target",
    "vdla.transform": "vdla.compiler.transform",
    "vdla.nd": "vdla.runtime.ndarray",
    "vdla.rpc": "vdla.compat.rpc",
    "vdla.testing": "vdla.compat.testing",
    "vdla.contrib": "vdla.compat.contrib",
    "vdla.vta": "vdla.compat.vta",
}

_DASK = "spread work over machines with vdla.cluster (Dask)"
_SERIAL = "a board is driven over its serial bridge (vdla.runtime.ndarray.set_ext_dev_backend('serial:PORT'))"

#: (module, name) -> what to use instead, for names TVM has and vdla does not (a callable that raises when used)
UNSUPPORTED: dict[tuple[str, str], str] = {
    ("vdla.compat.rpc", "connect"):
        f"vdla has no RPC server; {_SERIAL}, a simulator runs in this process (rpc.LocalSession()); {_DASK}",
    ("vdla.compiler.autotvm", "RPCRunner"):
        f"measurements are Dask tasks: autotvm.LocalRunner with autotvm.measure_option(scheduler=ADDRESS); {_SERIAL}",
    ("vdla.compiler.autotvm.measure", "RPCRunner"):
        f"measurements are Dask tasks: autotvm.LocalRunner with autotvm.measure_option(scheduler=ADDRESS); {_SERIAL}",
    ("vdla.compiler.autotvm.measure", "request_remote"): f"{_SERIAL}; {_DASK}",
    ("vdla.compiler.te", "create_prim_func"): "vdla follows TE, not TensorIR: schedule with te.create_schedule",
    ("vdla.compiler.tir", "Schedule"): "vdla follows TE, not TensorIR: schedule with te.create_schedule",
}

#: module path -> what to use instead, for TVM modules vdla does not have (importing one says so)
UNSUPPORTED_MODULES: dict[str, str] = {
    "vdla.contrib.cc": "f.export_library(path) writes vdla's own module file (no C compiler or linker), "
                       "vdla.runtime.load_module(path) reads it",
}


class NotSupportedError(NotImplementedError):
    """A TVM name vdla does not have; the message says what to use instead (a RuntimeError too)."""


def _public_name(module: str) -> str:
    """``module`` as TVM programs spell it, without ``vdla.`` (``vdla.compat.rpc`` -> ``rpc``)."""
    for public, real in sorted(PUBLIC.items(), key=lambda kv: -len(kv[1])):
        if module == real or module.startswith(real + "."):
            module = public + module[len(real):]
            break
    return module.removeprefix("vdla.")


def not_supported(name: str, instead: str) -> Callable[..., NoReturn]:
    """A stand-in for TVM's ``name`` that raises :class:`NotSupportedError` (with ``instead``) when called."""

    def unsupported(*args: Any, **kwargs: Any) -> NoReturn:
        shown = ", ".join([*(repr(a) for a in args), *(f"{k}={v!r}" for k, v in kwargs.items())])
        raise NotSupportedError(f"{name}({shown}) is not supported in vdla: {instead}")

    unsupported.__name__ = unsupported.__qualname__ = name.rpartition(".")[2]
    unsupported.__doc__ = f"Not supported in vdla: {instead}"
    return unsupported


def is_public(path: str) -> bool:
    """A path imported without a warning (SILENT, or PUBLIC and below)."""
    return path in SILENT or any(path == p or path.startswith(p + ".") for p in PUBLIC)


def new_path(old: str) -> str | None:
    """Where the module imported as ``old`` lives (None: ``old`` is its own path)."""
    path, seen = old, set()
    while path not in seen:  # an old path may point at one that moved again (vdla.compiler.vdla.topi)
        seen.add(path)
        best = max((a for table in (ALIASES, PUBLIC) for a in table if path == a or path.startswith(a + ".")),
                   key=len, default=None)
        if best is None:
            break
        path = {**ALIASES, **PUBLIC}[best] + path[len(best):]
    return None if path == old else path


def module_getattr(module: str) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``module``: its moved names (``MOVED_NAMES``, with a
    warning) and TVM's names it does not have (``UNSUPPORTED``: a callable that says what to use)."""

    def __getattr__(name: str) -> Any:
        home = MOVED_NAMES.get((module, name))
        if home is not None:
            warnings.warn(f"{module}.{name} is deprecated: use {home}.{name} (the old name goes in the next release)",
                          DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(home), name)
        instead = UNSUPPORTED.get((module, name))
        if instead is not None:
            return not_supported(f"{_public_name(module)}.{name}", instead)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


#: the name :func:`module_getattr` had in ``vdla._deprecated`` (``__getattr__ = moved_names(__name__)``)
moved_names = module_getattr


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
        instead = UNSUPPORTED_MODULES.get(fullname)
        if instead is not None:
            raise ModuleNotFoundError(f"{fullname.removeprefix('vdla.')} is not supported in vdla: {instead}",
                                      name=fullname)
        new = new_path(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(fullname, new))


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
