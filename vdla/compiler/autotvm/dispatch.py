"""Which configuration a schedule uses: the template's current config and the dispatch contexts.

Two questions, one module (it imports nothing of the compiler, so every schedule may ask):

* inside a template (``autotvm.task.create`` building the space, or a measurement
  instantiating one point) :func:`get_config` is that space or point: the schedule defines its
  knobs on it and reads their values;
* outside one, a schedule asks :func:`query` for the best tuned point of its workload:
  contexts entered with ``with autotvm.apply_history_best(log):`` (or :class:`ApplyConfig`)
  answer, innermost first; None means "use the hand-picked schedule".

:func:`schedule_knobs` asks both questions at once for a schedule whose knobs are plain values.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["DispatchContext", "ApplyConfig", "get_config", "query", "query_cost", "current_config", "using_config",
           "schedule_knobs", "tuning_active", "untuned"]

_CURRENT: contextvars.ContextVar[Any] = contextvars.ContextVar("vdla_autotvm_config", default=None)
_STACK: list[DispatchContext] = []
_UNTUNED: contextvars.ContextVar[bool] = contextvars.ContextVar("vdla_autotvm_untuned", default=False)


def current_config() -> Any:
    """The space or point of the template being built, or None outside a template."""
    return _CURRENT.get()


def get_config() -> Any:
    """AutoTVM's ``autotvm.get_config()``: the config of the template being built."""
    cfg = _CURRENT.get()
    if cfg is None:
        raise RuntimeError("autotvm.get_config() is called inside a template (@autotvm.template) only")
    return cfg


@contextmanager
def using_config(cfg: Any) -> Iterator[Any]:
    """Run a template body with ``cfg`` as its config."""
    token = _CURRENT.set(cfg)
    try:
        yield cfg
    finally:
        _CURRENT.reset(token)


class DispatchContext:
    """A source of tuned configs; entered with ``with``, innermost wins."""

    def query(self, target: str, workload: Any) -> Any:
        """The config for ``workload`` on ``target`` (``llvm`` or ``vdla``), or None."""
        raise NotImplementedError

    def cost(self, target: str, workload: Any) -> float | None:
        """The measured cost of the config :meth:`query` answers (None: not known, as for a
        config given by hand)."""
        return None

    def __enter__(self) -> DispatchContext:
        _STACK.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _STACK.remove(self)


class ApplyConfig(DispatchContext):
    """Use ``config`` for every workload of its template's (for trying one point by hand)."""

    def __init__(self, config: Any, workload: Any = None) -> None:
        self.config = config
        self.workload = workload if workload is not None else getattr(config, "workload", None)

    def query(self, target: str, workload: Any) -> Any:
        return self.config if self.workload is None or _key(workload) == _key(self.workload) else None


def _key(workload: Any) -> str:
    import json

    return json.dumps(workload, sort_keys=True, default=str)


def query(target: str, workload: Any) -> Any:
    """The tuned config of ``workload`` from the innermost context that has one, else None."""
    if _CURRENT.get() is not None or _UNTUNED.get():
        return None  # a template being built decides its own config; untuned(): the hand pick
    for ctx in reversed(_STACK):
        got = ctx.query(target, workload)
        if got is not None:
            return got
    return None


def query_cost(target: str, workload: Any) -> float | None:
    """The measured cost of the config :func:`query` answers for ``workload`` (its record's, from
    the same context), or None when there is no such config or its context knows no cost. The
    graph strategy compares the implementations of a node by it (TVM's ``select_implementation``)."""
    if _CURRENT.get() is not None or _UNTUNED.get():
        return None
    for ctx in reversed(_STACK):
        if ctx.query(target, workload) is not None:
            return ctx.cost(target, workload)
    return None


def tuning_active() -> bool:
    """Whether a dispatch context could answer :func:`query` here."""
    return bool(_STACK) and not _UNTUNED.get() and _CURRENT.get() is None


@contextmanager
def untuned() -> Iterator[None]:
    """Inside, :func:`query` answers None: schedules take their hand picks (the graph compiler's
    retry when a tuned point does not build in a model's kernel)."""
    token = _UNTUNED.set(True)
    try:
        yield
    finally:
        _UNTUNED.reset(token)


def workload_key(workload: Any) -> str:
    """The canonical text of a workload (records index by it)."""
    return _key(workload)


def schedule_knobs(target: str, workload: Any, define: Callable[[Any], None], hand: dict[str, Any]) -> dict[str, Any]:
    """The knob values a schedule uses (knob name -> value, the keys of ``hand``).

    Inside a template ``define(cfg)`` defines the knobs on the template's config and this is
    the point's values (the hand pick ``hand`` while the space is built; the fallback records
    it as its values). Outside one it is the best record of ``workload`` on ``target`` under
    ``apply_history_best``, else ``hand``: today's schedule, so an untuned build is unchanged."""
    cfg = _CURRENT.get()
    if cfg is not None:
        define(cfg)
        cfg.workload = workload
        if cfg.is_fallback:
            for name, value in hand.items():
                cfg.set(name, value)
            return dict(hand)
        if not hasattr(cfg, "entity_map"):  # the space itself: any values build it
            return dict(hand)
        return {name: cfg[name].val for name in hand}
    tuned = query(target, workload)
    return {name: tuned[name].val for name in hand} if tuned is not None else dict(hand)
