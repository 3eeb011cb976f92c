"""Old import paths after the restructure: each imports the moved module itself, with a
DeprecationWarning naming the new path (none for the public paths in SILENT and TVM's paths in
PUBLIC), and moved public names still resolve from their old module."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

import vdla  # noqa: F401  (installs the alias finder)
from vdla import _deprecated

# every entry of the table, and one path below each old package
OLD_PATHS = sorted(_deprecated.ALIASES) + [
    "vdla.compiler.passes.simplify",
    "vdla.compiler.codegen.jit",
    "vdla.compiler.vdla.env",
    "vdla.compiler.vdla.sync",
    "vdla.autotvm.tuner",
    "vdla.tir.ir_builder",
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
    new = _deprecated.new_path(old)
    assert new is not None and new != old
    module, warned = _fresh_import(old)
    assert module is importlib.import_module(new), f"{old} did not give {new}"
    assert module.__spec__.name == new  # the module keeps its own identity
    if _deprecated.is_public(old):
        assert not any(old in str(w.message) for w in warned)
    else:
        assert any(f"{old} is deprecated: import {new}" in str(w.message) for w in warned), [str(w.message) for w in warned]


@pytest.mark.parametrize(("module", "name"), sorted(_deprecated.MOVED_NAMES))
def test_moved_name_resolves_with_a_warning(module: str, name: str) -> None:
    home = importlib.import_module(_deprecated.MOVED_NAMES[(module, name)])
    with pytest.warns(DeprecationWarning, match=f"{module}.{name} is deprecated"):
        value = getattr(importlib.import_module(module), name)
    assert value is getattr(home, name)


def test_unknown_names_still_raise() -> None:
    assert _deprecated.new_path("vdla.compiler.driver") is None
    with pytest.raises(AttributeError, match="no attribute 'no_such_schedule'"):
        importlib.import_module("vdla.compiler.topi").no_such_schedule  # noqa: B018


def test_public_paths_need_no_alias() -> None:
    """What users write today keeps working without a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        from vdla.compiler.vdla.env import get_env

        from vdla import build, lower, te  # noqa: F401

        assert get_env().BATCH >= 1
