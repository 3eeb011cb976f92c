"""The global function registry: ``vdla.register_func`` / ``vdla.get_global_func`` (TVM's packed
functions). Kernels reach a registered function with ``tir.call_packed("name", *buffers)``; it is
called with NDArrays that view the kernel's memory (writing them writes the kernel's outputs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["register_func", "get_global_func", "list_global_func_names", "remove_global_func", "PackedFuncError"]


class PackedFuncError(LookupError):
    """No function of that name, or a name registered twice."""


_FUNCS: dict[str, Callable[..., Any]] = {}


def register_func(func_name: str | Callable[..., Any], f: Callable[..., Any] | None = None,
                  override: bool = False) -> Any:
    """Register ``f`` as ``func_name``; used bare (``@register_func``, the function's name) or as
    ``@register_func("my.name")``; ``override=True`` replaces an earlier one."""
    if callable(func_name) and f is None:
        fn = func_name
        return register_func(fn.__name__, fn, override)
    if not isinstance(func_name, str) or not func_name:
        raise PackedFuncError(f"register_func: the name must be a non-empty string, got {func_name!r}")

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise PackedFuncError(f"register_func({func_name!r}): {fn!r} is not callable")
        if func_name in _FUNCS and not override:
            raise PackedFuncError(f"global function {func_name!r} is already registered (pass override=True)")
        _FUNCS[func_name] = fn
        return fn

    return register if f is None else register(f)


def get_global_func(name: str, allow_missing: bool = False) -> Any:
    fn = _FUNCS.get(name)
    if fn is None and not allow_missing:
        raise PackedFuncError(f"no global function {name!r} is registered (vdla.register_func)")
    return fn


def list_global_func_names() -> list[str]:
    return sorted(_FUNCS)


def remove_global_func(name: str) -> None:
    _FUNCS.pop(name, None)
