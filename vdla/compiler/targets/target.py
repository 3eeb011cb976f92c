"""``Target``: what to compile for, as TVM's ``tvm.target.Target`` (``Target("llvm")``,
``Target("ext_dev", host="llvm")``, ``Target("cuda")``), with ``.kind.name`` and ``.host``.

A target is a kind and options (``"llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a53"``).
Kinds: ``llvm`` (the CPU, :mod:`.llvm`), ``cuda``/``nvptx`` (the GPU) and ``vdla`` with its
VTA spelling ``ext_dev`` (the accelerator, :mod:`.vdla`). ``vdla.build`` takes a Target or its
string; the CPU options (-mtriple, -mcpu, -mattr) are checked by :mod:`.llvm.target`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["Target", "TargetKind", "TargetError", "KINDS", "canonical_kind"]


class TargetError(ValueError):
    """A malformed or unknown target."""


#: target kinds and the back end each one means (``ext_dev``/``vta`` are VTA's names for vdla)
KINDS = {"llvm": "llvm", "c": "llvm", "cuda": "cuda", "nvptx": "cuda", "vdla": "vdla", "ext_dev": "vdla",
         "vta": "vdla"}


def canonical_kind(kind: str) -> str:
    """``llvm``, ``cuda`` or ``vdla`` for a target kind name."""
    if kind not in KINDS:
        raise TargetError(f"unknown target kind {kind!r}; use one of {', '.join(sorted(KINDS))}")
    return KINDS[kind]


@dataclass(frozen=True)
class TargetKind:
    name: str

    def __str__(self) -> str:
        return self.name


class Target:
    """A parsed target; ``str(t)`` gives back its string."""

    _stack: ClassVar[list[Target]] = []

    def __init__(self, target: str | dict[str, Any] | Target, host: str | Target | None = None) -> None:
        if isinstance(target, Target):
            host = host if host is not None else target.host
            target = str(target)
        if isinstance(target, dict):  # {"kind": "llvm", "mcpu": ...}
            d = dict(target)
            kind = d.pop("kind", None)
            if not isinstance(kind, str):
                raise TargetError(f"target dict needs a 'kind', got {target!r}")
            target = " ".join([kind] + [f"-{k}={v}" for k, v in d.items()])
        if not isinstance(target, str) or not target.strip():
            raise TargetError(f"target must be a string like 'llvm' or 'ext_dev', got {target!r}")
        words = shlex.split(target)
        canonical_kind(words[0])
        self.kind = TargetKind(words[0])
        self.attrs: dict[str, Any] = {}
        for w in words[1:]:
            if not w.startswith("-"):
                raise TargetError(f"target option {w!r} in {target!r} must start with '-' (e.g. -mcpu=cortex-a53)")
            key, eq, val = w.lstrip("-").partition("=")
            self.attrs[key] = val if eq else True
        self._text = " ".join(words)
        self.host = None if host is None else Target(host)
        if self.host is not None and canonical_kind(self.host.kind.name) != "llvm":
            raise TargetError(f"target host must be a CPU (llvm) target, got {host!r}")

    @property
    def backend(self) -> str:
        """``llvm``, ``cuda`` or ``vdla``."""
        return canonical_kind(self.kind.name)

    @property
    def keys(self) -> list[str]:
        return {"llvm": ["cpu"], "cuda": ["cuda", "gpu"], "vdla": ["vdla", "vta"]}[self.backend]

    @property
    def mcpu(self) -> str | None:
        return self.attrs.get("mcpu")

    def llvm_string(self) -> str:
        """The string the CPU code generator parses (the host's for an accelerator or GPU target)."""
        if self.backend == "llvm":
            return "llvm" + self._text[len(self.kind.name):]
        return str(self.host) if self.host is not None else "llvm"

    @staticmethod
    def current(allow_none: bool = True) -> Target | None:
        """The target of the innermost ``with Target(...):`` block."""
        if Target._stack:
            return Target._stack[-1]
        if allow_none:
            return None
        raise TargetError("no target is set: use 'with vdla.target.Target(...):'")

    def __enter__(self) -> Target:
        Target._stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        Target._stack.pop()

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        host = f", host={str(self.host)!r}" if self.host is not None else ""
        return f"Target({self._text!r}{host})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Target) and str(self) == str(other) and str(self.host) == str(other.host)

    def __hash__(self) -> int:
        return hash((self._text, str(self.host)))
