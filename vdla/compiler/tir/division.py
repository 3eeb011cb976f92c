"""Integer division by zero: what each vdla target does, and the warning where it can happen.

TVM leaves an integer ``floordiv``/``floormod``/``truncdiv``/``truncmod`` by zero undefined
(C's rule, LLVM's ``sdiv``: an x86 CPU traps, a GPU returns garbage). vdla defines it:

- a constant divisor 0 is an error when the expression is written
  (:class:`~.nodes.ZeroDivisorError`);
- ``llvm`` and ``cuda``: ``x // 0 == 0`` and ``x % 0 == 0`` (truncdiv/truncmod too), and
  ``MIN // -1 == MIN`` (wraps): numpy's values, so a kernel matches its numpy reference
  (`vdla.compiler.targets.llvm.codegen`, whose code the GPU's shares);
- ``vdla``: the accelerator's ALU has no division; a divisor read from a tensor does not
  lower (only a power-of-two constant, as a shift); host code dividing by a 0 index raises
  ZeroDivisionError.

A 0 that turns up at run time is silent, so :func:`warn_tensor_divisions` (``vdla.build``
for llvm and cuda) warns once per function where a divisor is read from a tensor and no
``te.if_then_else`` / ``tir.Select`` around the division tests that divisor.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

from . import dtypes
from .nodes import BinOp, BufferLoad, IfThenElse, PrimFunc, Select
from .visitor import children, walk

__all__ = ["INT_DIVISIONS", "IntegerDivisionWarning", "tensor_divisions", "warn_tensor_divisions"]

INT_DIVISIONS = ("floordiv", "floormod", "truncdiv", "truncmod")


class IntegerDivisionWarning(UserWarning):
    """An integer division whose divisor is read from a tensor: a 0 there gives 0, silently."""


def _reads_tensor(e: Any) -> bool:
    return any(isinstance(n, BufferLoad) for n in walk(e))


def tensor_divisions(node: Any) -> Iterator[BinOp]:
    """The integer divisions under ``node`` whose divisor reads a tensor and is not tested by a
    condition around them (a Select or IfThenElse whose condition mentions the divisor), in order."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(node, ())]  # (node, the conditions it runs under)
    while stack:  # iterative: an unrolled reduction is a deep tree
        n, tests = stack.pop()
        if isinstance(n, BinOp) and n.op in INT_DIVISIONS and not dtypes.is_float(n.dtype) \
                and _reads_tensor(n.b) and not any(str(n.b) in t for t in tests):
            yield n
        if isinstance(n, Select | IfThenElse):  # the branches run under the condition's test
            inner = (*tests, str(n.cond))
            branches = (n.t, n.f) if isinstance(n, Select) else (n.then_case, n.else_case)
            stack.extend((b, inner) for b in reversed(branches) if b is not None)
            stack.append((n.cond, tests))
        else:
            stack.extend((c, tests) for c in reversed(list(children(n))))


def warn_tensor_divisions(func: PrimFunc, backend: str, stacklevel: int = 3) -> None:
    """One IntegerDivisionWarning for ``func`` if it divides by a tensor's values unguarded
    (``stacklevel`` 3: the caller of ``vdla.build``)."""
    div = next(tensor_divisions(func.body), None)
    if div is None:
        return
    warnings.warn(IntegerDivisionWarning(
        f"{func.name}: {div} divides {div.dtype} by a tensor's values: where the divisor is 0 the {backend} target "
        f"gives 0, quotient and remainder alike (numpy's values; TVM leaves integer division by zero undefined). "
        f"If 0 can occur, choose the result: te.if_then_else({div.b} == 0, VALUE, ...)"), stacklevel=stacklevel)
