"""The template registry: ``@autotvm.template("name")`` puts a template here by name
(:mod:`.task` looks names up, loading the operator library's templates on first use).

The decorated function stays callable as AutoTVM's is: inside a tuning context it is the
template (its config is the space or point being built); called outside one it is a
schedule, built with the best record of its workload from ``with apply_history_best(log):``
(or :class:`.dispatch.ApplyConfig`), else with the fallback (the first choice of each knob,
or the hand-picked schedule of the operator library's templates).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .dispatch import current_config, query, using_config
from .space import ConfigSpace

__all__ = ["Template", "TEMPLATES", "template", "jsonable"]


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
    when that is ``llvm``/``x86``/``cuda``/``vdla``, else any)."""
    if target is None:
        suffix = name.rsplit(".", 1)[-1]
        target = {"x86": "llvm", "llvm": "llvm", "cuda": "cuda", "vdla": "vdla"}.get(suffix)

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def call(*args: Any, **kwargs: Any) -> tuple[Any, list[Any]]:
            if current_config() is not None:  # being tuned: the task's space or point decides
                return func(*args, **kwargs)
            return _outside_tuning(name, target, func, args, kwargs)

        call.template_name = name  # type: ignore[attr-defined]
        TEMPLATES[name] = Template(name, call, target, reference, inputs)
        return call

    return register


def jsonable(x: Any) -> Any:
    """Template arguments as JSON values (tuples as lists, numpy scalars as numbers): how
    tasks and records name a workload."""
    if isinstance(x, tuple | list):
        return [jsonable(v) for v in x]
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if hasattr(x, "item") and not isinstance(x, str):
        return x.item()
    return x


def _outside_tuning(name: str, target: str | None, func: Callable[..., Any], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> tuple[Any, list[Any]]:
    """A template called as a schedule: the best record of its workload, else the fallback."""
    from ..targets.target import Target  # a leaf module; imported late as the compiler imports autotvm

    space = ConfigSpace()  # the first choice of each knob: AutoTVM's fallback
    with using_config(space):
        built = func(*args, **kwargs)
    workload = space.workload if space.workload is not None else [name, jsonable(list(args))]
    current = Target.current()
    kinds = [target] if target else [current.backend] if current is not None else ["llvm", "vdla"]
    for kind in kinds:
        tuned = query(kind, workload)
        if tuned is not None:
            with using_config(tuned):
                return func(*args, **kwargs)
    return built


