"""TVM's operator registry (``tvm.ir``): ``Op``, ``register_op_attr``, ``register_intrin_lowering``.

A loop-IR intrinsic call (``tvm.tir.call_intrin("float32", "tir.exp", x)``, ``te.exp(x)``)
names an operator ``"tir.<name>"``. Users attach attributes to operators by name, as in
TVM's "intrin_math" tutorial::

    register_op_attr("tir.mylog", "TCallEffectKind", tvm.tir.CallEffectKind.Pure)  # declares tir.mylog
    register_intrin_lowering("tir.exp", target="cuda", f=my_rule, level=99)

The attribute ``"<target>.FLowerIntrinsic"`` is a rule ``f(call) -> expr`` that a back end
applies to each call of the operator before generating code (the cuda back end does);
returning the call unchanged leaves it to the back end's own lowering. Of two values of
one attribute the higher ``level`` wins; one level given twice is an error, as in TVM.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["OpRegistryError", "Op", "CallEffectKind", "register_op_attr", "register_intrin_lowering", "lowering_rule", "is_registered",
           "snapshot", "restore"]


class OpRegistryError(ValueError):
    """A bad registration (a name, a level, a rule), or an operator that is not registered."""


class CallEffectKind:
    """TVM's ``tir.CallEffectKind`` values (what a call may touch; vdla keeps every call it is given)."""

    ExprAnnotation = 0
    Pure = 1
    ReadState = 2
    UpdateState = 3
    Opaque = 4


class Op:
    """An operator by name (``Op.get("tir.exp")``) and its attributes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.attrs: dict[str, tuple[int, Any]] = {}  # key -> (level, value)

    @staticmethod
    def get(name: str) -> Op:
        """The operator ``name``; it exists once anything is registered for it (or it is a built-in)."""
        op = _OPS.get(name)
        if op is None:
            raise OpRegistryError(f"operator {name!r} is not registered (declare it with "
                          f"tvm.ir.register_op_attr({name!r}, 'TCallEffectKind', tvm.tir.CallEffectKind.Pure))")  # fmt: skip
        return op

    def get_attr(self, key: str) -> Any:
        entry = self.attrs.get(key)
        return None if entry is None else entry[1]

    def __repr__(self) -> str:
        return f"Op({self.name})"


_OPS: dict[str, Op] = {}


def _op(name: str) -> Op:
    if not isinstance(name, str) or not name:
        raise OpRegistryError(f"an operator name must be a non-empty string such as 'tir.exp', got {name!r}")
    op = _OPS.get(name)
    if op is None:
        op = _OPS[name] = Op(name)
    return op


def register_op_attr(op_name: str, attr_key: str, value: Any = None, level: int = 10) -> Any:
    """Set attribute ``attr_key`` of operator ``op_name`` (declaring the operator); without
    ``value``, a decorator that registers the function it decorates."""

    def _register(v: Any) -> Any:
        if not isinstance(level, int) or level <= 0:
            raise OpRegistryError(f"register_op_attr({op_name!r}, {attr_key!r}): level must be a positive int, got {level!r}")
        op = _op(op_name)
        old = op.attrs.get(attr_key)
        if old is not None and old[0] == level:
            raise OpRegistryError(f"attribute {attr_key!r} of {op_name!r} is already registered at level {level}; "
                          "register with a higher level to override it")  # fmt: skip
        if old is None or level > old[0]:
            op.attrs[attr_key] = (level, v)
        return v

    return _register if value is None else _register(value)


def register_intrin_lowering(op_name: str, target: str, *, f: Callable[[Any], Any] | None = None,
                             level: int = 10) -> Any:  # fmt: skip
    """Lower calls of ``op_name`` for ``target`` (``"cuda"``) with ``f(call) -> expr``; without
    ``f``, a decorator."""
    if not isinstance(target, str) or not target:
        raise OpRegistryError(f"register_intrin_lowering({op_name!r}): target must be a target kind such as 'cuda'")

    def _register(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        if not callable(fn):
            raise OpRegistryError(f"register_intrin_lowering({op_name!r}, {target!r}): f must be callable, got {fn!r}")
        register_op_attr(op_name, f"{target}.FLowerIntrinsic", fn, level)
        return fn

    return _register if f is None else _register(f)


def lowering_rule(op_name: str, targets: tuple[str, ...]) -> Callable[[Any], Any] | None:
    """The lowering rule of ``op_name`` for the first of ``targets`` that has one (None: none)."""
    op = _OPS.get(op_name)
    if op is None:
        return None
    for t in targets:
        rule = op.get_attr(f"{t}.FLowerIntrinsic")
        if rule is not None:
            return rule
    return None


def is_registered(op_name: str) -> bool:
    return op_name in _OPS


def snapshot() -> dict[str, dict[str, tuple[int, Any]]]:
    """The registry's contents (to put back with :func:`restore`, e.g. after a test program)."""
    return {name: dict(op.attrs) for name, op in _OPS.items()}


def restore(saved: dict[str, dict[str, tuple[int, Any]]]) -> None:
    _OPS.clear()
    for name, attrs in saved.items():
        _op(name).attrs.update(attrs)
