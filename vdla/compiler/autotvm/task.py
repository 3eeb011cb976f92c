"""Templates and tasks: ``@autotvm.template("name")`` registers a tunable schedule;
``autotvm.task.create(name, args, target)`` builds its :class:`ConfigSpace`.

A template is a function of plain arguments (shapes, strides: JSON values) that declares the
computation, calls ``cfg = autotvm.get_config()`` (directly or inside the schedule it calls),
defines its knobs on ``cfg`` and returns ``(schedule, [tensors])``. The operator library's
templates (:mod:`.templates`) are registered on first use. A template may carry a numpy
``reference`` (``reference(args, inputs) -> expected outputs``) that measurement checks
every point against.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .dispatch import using_config
from .registry import TEMPLATES, Template, template
from .registry import jsonable as _jsonable
from .space import ConfigEntity, ConfigSpace, FallbackConfigEntity

__all__ = ["template", "create", "Task", "TaskError", "TEMPLATES", "get_template", "target_kind", "backend_of"]

TARGETS = ("llvm", "cuda", "vdla")


class TaskError(ValueError):
    """An unknown template, a target it does not serve, or arguments it cannot take."""


def _load_builtin() -> None:
    from . import templates  # noqa: F401  (registers the operator library's templates)


def get_template(name: str) -> Template:
    if name not in TEMPLATES:
        _load_builtin()
    if name not in TEMPLATES:
        raise TaskError(f"unknown template {name!r}; registered: {', '.join(sorted(TEMPLATES))}")
    return TEMPLATES[name]


def backend_of(target: Any) -> str:
    """The back end of a target string (``"llvm -mcpu=..."``, ``"ext_dev"``) or Target: ``llvm``,
    ``cuda`` or ``vdla``; ``""`` for none or one that does not parse (an old record's)."""
    from ..targets.target import Target, TargetError  # a leaf module; imported late as the compiler imports autotvm

    try:
        return Target(target).backend if target is not None else ""
    except TargetError:
        return ""


def target_kind(target: Any) -> str:
    """``llvm``, ``cuda`` or ``vdla`` from a target string (``"llvm -mcpu=..."``, ``"cuda -arch=sm_90"``) or Target."""
    kind = backend_of(target)
    if kind not in TARGETS:
        raise TaskError(f"unknown target {target!r}: autotvm tunes {', '.join(TARGETS)}")
    return kind


@dataclass
class Task:
    """One tunable workload: a template, its arguments and target, and its space."""

    name: str
    args: list[Any]
    target: str
    config_space: ConfigSpace = field(repr=False)
    workload: Any = None
    flop: float = 0.0

    @property
    def template(self) -> Template:
        return get_template(self.name)

    @property
    def func(self) -> Callable[..., Any]:
        return self.template.func

    @property
    def kind(self) -> str:
        return target_kind(self.target)

    def instantiate(self, config: ConfigEntity) -> tuple[Any, list[Any]]:
        """The schedule and arguments of one point (or the fallback)."""
        with using_config(config):
            s, tensors = self.func(*self.args)
        return s, list(tensors)

    def fallback(self) -> FallbackConfigEntity:
        """The hand-picked point (filled when the template is instantiated with it)."""
        fb = FallbackConfigEntity(self.config_space)
        self.instantiate(fb)
        return fb

    def key(self) -> str:
        """Identifies the task in records: template name, arguments, target kind."""
        return json.dumps([self.name, _jsonable(self.args), self.kind])

    def __repr__(self) -> str:
        return f"Task({self.name}, args={_jsonable(self.args)}, target={self.target!r}, {len(self.config_space)} configs)"


def create(name: str, args: Sequence[Any], target: Any = "llvm") -> Task:
    """Build the task of template ``name`` with ``args`` for ``target`` (its space defined)."""
    tpl = get_template(name)
    kind = target_kind(target)
    if tpl.target is not None and tpl.target != kind:
        raise TaskError(f"template {name!r} serves target {tpl.target!r}, not {kind!r}")
    args = _jsonable(list(args))
    space = ConfigSpace()
    try:
        with using_config(space):
            tpl.func(*args)
    except TaskError:
        raise
    except (TypeError, ValueError) as e:
        raise TaskError(f"template {name!r} cannot take args {args}: {type(e).__name__}: {e}") from e
    if not space.space_map:
        raise TaskError(f"template {name!r} defined no knobs")
    workload = space.workload if space.workload is not None else [name, args]
    space.workload = workload
    return Task(name, args, str(target), space, workload, space.flop)
