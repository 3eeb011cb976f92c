"""``Target``: what to compile for, as TVM's ``tvm.target.Target``; the one place a target is parsed.

    Target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a53 -mattr=+neon")
    Target("cuda -arch=sm_90"), Target("ext_dev", host="llvm"), Target({"kind": "llvm", "mcpu": "cortex-a53"})
    with Target("llvm"): ... Target.current()

A target is a kind and ``-name=value`` options. :data:`KINDS` maps each kind to its back end:
``llvm``/``c`` (the CPU, :mod:`.llvm`), ``cuda``/``nvptx`` (the GPU, :mod:`.cuda`) and ``vdla``
with VTA's spellings ``ext_dev``/``vta`` (the accelerator, :mod:`.vdla`); :data:`OPTIONS` says
which options each back end takes. Every string, dict or Target given to ``vdla.build`` /
``vdla.lower`` becomes a :class:`Target` here, checked once; the back ends read its ``attrs``
(:func:`.llvm.target.llvm_options`, :func:`.cuda.target.cuda_limits`) and never parse strings.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["Target", "TargetKind", "TargetError", "KINDS", "OPTIONS", "canonical_kind"]


class TargetError(ValueError):
    """A malformed or unknown target, or an option its kind does not take."""


#: target kind -> the back end that compiles it (``ext_dev``/``vta``: VTA's names for vdla;
#: ``c``: TVM's C target, compiled here through LLVM)
KINDS: dict[str, str] = {"llvm": "llvm", "c": "llvm", "cuda": "cuda", "nvptx": "cuda", "vdla": "vdla",
                         "ext_dev": "vdla", "vta": "vdla"}


@dataclass(frozen=True)
class Options:
    """The ``-name=value`` options a back end's targets take, and the errors for others."""

    names: tuple[str, ...] | None  # None: any option (a flag without a value is True)
    keys: tuple[str, ...]  # TVM's target keys
    unknown: str = ""  # message for an option not in names ({word}, {key}, {text})
    no_value: str = ""  # message for a known option without a value


#: back end -> the options its targets take
OPTIONS: dict[str, Options] = {
    "llvm": Options(("mtriple", "mcpu", "mattr"), ("cpu",),
                    unknown="unknown target option {key!r} in {text!r} (use -mtriple, -mcpu, -mattr)",
                    no_value="target option {word!r} needs a value (e.g. -mtriple=aarch64-linux-gnu)"),
    "cuda": Options(("arch", "mcpu"), ("cuda", "gpu"),
                    unknown="unknown CUDA target option {word!r} in {text!r} (use -arch=sm_80 or -arch=sm_90)",
                    no_value="unknown CUDA target option {word!r} in {text!r} (use -arch=sm_80 or -arch=sm_90)"),
    "vdla": Options(None, ("vdla", "vta")),  # TVM's ext_dev takes -device=vta -model=...: kept, unused
}


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


def _text(target: dict[str, Any]) -> tuple[str, Any]:
    """The string of TVM's dict form ({"kind": "llvm", "mcpu": ..., "host": ...}) and its host."""
    d = dict(target)
    kind = d.pop("kind", None)
    host = d.pop("host", None)
    if not isinstance(kind, str):
        raise TargetError(f"target dict needs a 'kind', got {target!r}")
    opts = [f"-{k}={','.join(map(str, v)) if isinstance(v, list | tuple) else v}" for k, v in d.items()]
    return " ".join([kind, *opts]), host


def _options(backend: str, words: list[str], text: str) -> dict[str, Any]:
    """The options of a target string, checked against what its back end takes."""
    spec = OPTIONS[backend]
    attrs: dict[str, Any] = {}
    for word in words:
        if not word.startswith("-"):
            raise TargetError(f"target option {word!r} in {text!r} must start with '-' (e.g. -mcpu=cortex-a53)")
        key, eq, val = word.partition("=")
        name = key.lstrip("-")
        if spec.names is not None:
            if not val:
                raise TargetError(spec.no_value.format(word=word, key=key, text=text))
            if name not in spec.names:
                raise TargetError(spec.unknown.format(word=word, key=key, text=text))
        attrs[name] = val if eq else True
    return attrs


class Target:
    """A parsed, checked target; ``str(t)`` gives back its string."""

    _stack: ClassVar[list[Target]] = []

    def __init__(self, target: str | dict[str, Any] | Target, host: str | dict[str, Any] | Target | None = None
                 ) -> None:  # fmt: skip
        if isinstance(target, Target):
            host = host if host is not None else target.host
            target = str(target)
        if isinstance(target, dict):
            target, dict_host = _text(target)
            host = host if host is not None else dict_host
        if not isinstance(target, str) or not target.strip():
            raise TargetError(f"target must be a string like 'llvm' or 'ext_dev', got {target!r}")
        words = shlex.split(target)
        self.kind = TargetKind(words[0])
        self.backend: str = canonical_kind(words[0])  # llvm, cuda or vdla: the back end (KINDS)
        self.attrs: dict[str, Any] = _options(self.backend, words[1:], target)
        self._text = " ".join(words)
        self.host = None if host is None else Target(host)
        if self.host is not None and self.host.backend != "llvm":
            raise TargetError(f"target host must be a CPU (llvm) target, got {host!r}")

    @property
    def keys(self) -> list[str]:
        return list(OPTIONS[self.backend].keys)

    @property
    def mcpu(self) -> str | None:
        return self.attrs.get("mcpu")

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
