"""vdla.compat's tables: old import paths after the restructure each import the moved module
itself, with a DeprecationWarning naming the new path (none for the public paths in SILENT and
TVM's paths in PUBLIC); moved public names still resolve from their old module; TVM's names
vdla does not have say what to use instead."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

import vdla  # noqa: F401  (installs the alias finder)
from vdla import compat

# every entry of the tables, and one path below each old package
OLD_PATHS = sorted({**compat.ALIASES, **compat.PUBLIC}) + [
    "vdla.compiler.passes.simplify",
    "vdla.compiler.codegen.jit",
    "vdla.compiler.vdla.env",
    "vdla.compiler.vdla.sync",
    "vdla.autotvm.tuner",
    "vdla.tir.ir_builder",
    "vdla.vta.testing.simulator",
    "vdla.contrib.utils",
    "vdla.sim.runner",
]


def _fresh_import(old: str) -> tuple[object, list[warnings.WarningMessage]]:
    for name in [m for m in sys.modules if m == old or m.startswith(old + ".")]:
        del sys.modules[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    return module, [w for w in caught if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize("old", OLD_PATHS)
def test_old_path_is_the_new_module(old: str) -> None:
    new = compat.new_path(old)
    assert new is not None and new != old
    module, warned = _fresh_import(old)
    assert module is importlib.import_module(new), f"{old} did not give {new}"
    assert module.__spec__.name == new  # the module keeps its own identity
    if compat.is_public(old):
        assert not any(old in str(w.message) for w in warned)
    else:
        assert any(f"{old} is deprecated: import {new}" in str(w.message) for w in warned), [str(w.message) for w in warned]


@pytest.mark.parametrize(("module", "name"), sorted(compat.MOVED_NAMES))
def test_moved_name_resolves_with_a_warning(module: str, name: str) -> None:
    home = importlib.import_module(compat.MOVED_NAMES[(module, name)])
    with pytest.warns(DeprecationWarning, match=f"{module}.{name} is deprecated"):
        value = getattr(importlib.import_module(module), name)
    assert value is getattr(home, name)


@pytest.mark.parametrize(("module", "name"), sorted(compat.UNSUPPORTED))
def test_unsupported_name_says_what_to_use(module: str, name: str) -> None:
    value = getattr(importlib.import_module(module), name)
    with pytest.raises(compat.NotSupportedError, match=f"{name}\\(1\\) is not supported in vdla: ") as err:
        value(1)
    assert isinstance(err.value, NotImplementedError) and compat.UNSUPPORTED[(module, name)] in str(err.value)


@pytest.mark.parametrize("path", sorted(compat.UNSUPPORTED_MODULES))
def test_unsupported_module_says_what_to_use(path: str) -> None:
    with pytest.raises(ModuleNotFoundError, match="is not supported in vdla: "):
        importlib.import_module(path)


def test_rpc_connect_points_to_the_serial_bridge_and_dask() -> None:
    from vdla import rpc

    with pytest.raises(RuntimeError, match=r"rpc\.connect\('192\.168\.2\.99', 9091\) is not supported") as err:
        rpc.connect("192.168.2.99", 9091)
    assert "set_ext_dev_backend('serial:PORT')" in str(err.value) and "vdla.cluster" in str(err.value)


def test_unknown_names_still_raise() -> None:
    assert compat.new_path("vdla.compiler.driver") is None
    with pytest.raises(AttributeError, match="no attribute 'no_such_schedule'"):
        importlib.import_module("vdla.compiler.topi").no_such_schedule  # noqa: B018


def test_public_paths_need_no_alias() -> None:
    """What users write today keeps working without a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        from vdla import build, lower, te  # noqa: F401
        from vdla.compiler.vdla.env import get_env

        assert get_env().BATCH >= 1
