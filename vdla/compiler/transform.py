"""``PassContext``: TVM's ``with tvm.transform.PassContext(opt_level=3, ...):`` around a build.

vdla's pass list is fixed per target (:mod:`.driver`); the context records what a TVM program
asks for and hands ``opt_level`` to ``build`` (the LLVM optimisation level of CPU code) when
the build itself does not give one. Unknown pass names are accepted, as TVM accepts them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

__all__ = ["PassContext"]


class PassContext:
    _stack: ClassVar[list[PassContext]] = []

    def __init__(self, opt_level: int = 2, required_pass: Iterable[str] | None = None,
                 disabled_pass: Iterable[str] | None = None, instruments: Any = None,
                 config: dict[str, Any] | None = None, **_: Any) -> None:
        if not isinstance(opt_level, int) or not 0 <= opt_level <= 4:
            raise ValueError(f"PassContext: opt_level must be 0..4, got {opt_level!r}")
        self.opt_level = opt_level
        self.required_pass = list(required_pass or [])
        self.disabled_pass = list(disabled_pass or [])
        self.config = dict(config or {})

    @staticmethod
    def current() -> PassContext:
        return PassContext._stack[-1] if PassContext._stack else _DEFAULT

    def __enter__(self) -> PassContext:
        PassContext._stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        PassContext._stack.pop()

    def __repr__(self) -> str:
        return f"PassContext(opt_level={self.opt_level}, disabled_pass={self.disabled_pass})"


_DEFAULT = PassContext(opt_level=3)
