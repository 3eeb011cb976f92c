"""The template registry: ``@autotvm.template("name")`` puts a template here by name
(:mod:`.task` looks names up, loading the operator library's templates on first use)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Template", "TEMPLATES", "template"]


@dataclass
class Template:
    name: str
    func: Callable[..., tuple[Any, list[Any]]]
    target: str | None  # the target kind it serves (None: any)
    reference: Callable[..., Any] | None = None
    inputs: Callable[..., Any] | None = None  # (args, rng) -> input arrays, when random ones will not do


TEMPLATES: dict[str, Template] = {}


def template(name: str, target: str | None = None, reference: Callable[..., Any] | None = None,
             inputs: Callable[..., Any] | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``func`` as the template ``name`` (AutoTVM's ``@autotvm.template``).

    ``target``: the target kind it serves (default: the suffix of ``name`` after the last dot
    when that is ``llvm``/``x86``/``vdla``, else any)."""
    if target is None:
        suffix = name.rsplit(".", 1)[-1]
        target = {"x86": "llvm", "llvm": "llvm", "vdla": "vdla"}.get(suffix)

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        TEMPLATES[name] = Template(name, func, target, reference, inputs)
        func.template_name = name  # type: ignore[attr-defined]
        return func

    return register


