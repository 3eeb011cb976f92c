"""Data types of the compiler: parsing, checking, vector lanes and type promotion.

A dtype is a string as in numpy/TVM: ``"int8"``, ``"float32"``, ``"bool"``; a vector
dtype appends ``x<lanes>`` (``"float32x16"``).  Everything in the compiler goes through
:func:`check` so an unknown name fails early with one clear message.
"""

from __future__ import annotations

import functools

import numpy as np

SCALARS: tuple[str, ...] = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
)


#: opaque types of the loop IR only (pointers from ``AddressOf``, extern calls returning nothing)
OPAQUE: tuple[str, ...] = ("handle", "void")


class DTypeError(TypeError):
    """An unknown or unsupported dtype, or operands whose dtypes cannot be combined."""


def split(dtype: str) -> tuple[str, int]:
    """Split ``"float32x8"`` into ``("float32", 8)``; scalars have 1 lane."""
    if "x" in dtype:
        base, _, lanes = dtype.rpartition("x")
        if base in SCALARS and lanes.isdigit() and int(lanes) > 0:
            return base, int(lanes)
    if dtype in SCALARS or dtype in OPAQUE:
        return dtype, 1
    raise DTypeError(f"unknown dtype {dtype!r}; expected one of {', '.join(SCALARS)}")


def check(dtype: object) -> str:
    """Return the canonical dtype string for ``dtype`` (str or numpy dtype) or raise DTypeError."""
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        dtype = np.dtype(dtype).name
    if not isinstance(dtype, str):
        raise DTypeError(f"dtype must be a string such as 'float32', got {dtype!r}")
    if dtype in OPAQUE:
        raise DTypeError(f"dtype {dtype!r} is internal to the loop IR; expected one of {', '.join(SCALARS)}")
    split(dtype)
    return dtype


def scalar(dtype: str) -> str:
    return split(dtype)[0]


def lanes(dtype: str) -> int:
    return split(dtype)[1]


def with_lanes(dtype: str, n: int) -> str:
    base = scalar(dtype)
    return base if n == 1 else f"{base}x{n}"


def is_float(dtype: str) -> bool:
    return scalar(dtype).startswith("float")


def is_int(dtype: str) -> bool:
    """True for signed and unsigned integers (not bool)."""
    s = scalar(dtype)
    return s.startswith("int") or s.startswith("uint")


def is_uint(dtype: str) -> bool:
    return scalar(dtype).startswith("uint")


def is_bool(dtype: str) -> bool:
    return scalar(dtype) == "bool"


def bits(dtype: str) -> int:
    s = scalar(dtype)
    if s == "bool":
        return 1
    if s in OPAQUE:
        return 64 if s == "handle" else 0
    return int("".join(c for c in s if c.isdigit()))


def nbytes(dtype: str) -> int:
    """Storage size of one element in bytes (bool is stored as one byte)."""
    return max(1, bits(dtype) // 8) * lanes(dtype)


def promote(a: str, b: str) -> str:
    """The dtype both operands are converted to for a binary operation (scalar dtypes)."""
    if a == b:
        return a
    if is_bool(a):
        return b
    if is_bool(b):
        return a
    fa, fb = is_float(a), is_float(b)
    if fa and not fb:
        return a
    if fb and not fa:
        return b
    if bits(a) != bits(b):
        return a if bits(a) > bits(b) else b
    # same width, different signedness: prefer the signed type
    return a if not is_uint(a) else b


@functools.cache  # every integer constant made checks its range: np.iinfo is slow
def min_value(dtype: str) -> int | float:
    s = scalar(dtype)
    if s == "bool":
        return 0
    if is_float(s):
        return float(-np.inf)
    return int(np.iinfo(s).min)


@functools.cache
def max_value(dtype: str) -> int | float:
    s = scalar(dtype)
    if s == "bool":
        return 1
    if is_float(s):
        return float(np.inf)
    return int(np.iinfo(s).max)
