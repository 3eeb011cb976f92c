"""Constant and shape subgraphs, folded at import.

Exporters compute shapes and even weights inside the graph: PyTorch writes
``Shape -> Gather -> Unsqueeze -> Concat -> Reshape`` for every ``x.view(x.size(0), -1)``,
``ConstantOfShape`` for zero-filled tensors, ``Range``/``Expand``/``Tile``/``Where`` for
index arithmetic, ``ReduceProd`` for the size of a flattened tail. Shapes here are static,
so each of these nodes is evaluated with numpy when its inputs are known (``Shape`` and
``Size`` only need the input's static shape) and its outputs become known arrays: no graph
node is emitted. Each folder implements the ONNX operator's semantics at every opset from 6
(attribute forms of old opsets, input forms of new ones). A node whose inputs are not all
known goes to the operator methods (:mod:`.tensor` and the others) instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir import GraphError
from ..ops.registry import get_op

__all__ = ["FOLDERS", "fold", "slice_bounds", "split_sizes"]

Folder = Callable[[Any, Any, int, dict[str, Any], list[Any]], list[np.ndarray]]
FOLDERS: dict[str, Folder] = {}

#: operators folded from their inputs' static shapes alone (the input need not be known)
_SHAPE_ONLY = ("Shape", "Size")


def folder(*names: str):
    def deco(fn: Folder) -> Folder:
        for n in names:
            FOLDERS[n] = fn
        return fn

    return deco


def fold(imp: Any, node: Any, idx: int) -> bool:
    """Evaluate ``node`` at import when it can be; True when its outputs are now known."""
    if node.op_type in _SHAPE_ONLY:
        xs: list[Any] = [imp.shape_of(node.input[0])]
    else:
        if not all(i == "" or i in imp.known for i in node.input):
            return False
        xs = [imp.known[i] if i else None for i in node.input]
    try:
        outs = FOLDERS[node.op_type](imp, node, idx, imp.attr_values(node), xs)
    except GraphError:
        raise
    except (ValueError, IndexError, TypeError) as e:
        raise imp.err(node, idx, f"cannot evaluate it on its constant inputs: {e}") from None
    for name, v in zip(node.output, outs):
        if name:
            imp.known[name] = np.asarray(v)
    return True


def _axes(imp: Any, node: Any, idx: int, at: dict[str, Any], xs: list[Any], pos: int, since: int) -> list[int] | None:
    """Axes from the attribute (opset < ``since``) or from input ``pos`` (opset >= ``since``)."""
    if imp.opset >= since:
        if "axes" in at:
            raise imp.bad(node, idx, "axes", at["axes"], f"an input from opset {since}")
        return None if len(xs) <= pos or xs[pos] is None else [int(a) for a in np.asarray(xs[pos]).reshape(-1)]
    return None if "axes" not in at else [int(a) for a in at["axes"]]


@folder("Constant")
def _constant(imp, node, idx, at, xs):
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if key in at:
            v = at[key]
            if key == "value":
                return [imp.nph.to_array(v)]
            return [np.array(v, np.float32 if "float" in key else np.int64)]
    raise imp.err(node, idx, f"no supported value attribute (got {', '.join(at) or 'none'})")


@folder("ConstantOfShape")
def _constant_of_shape(imp, node, idx, at, xs):
    v = imp.nph.to_array(at["value"]).reshape(-1) if "value" in at else np.zeros(1, np.float32)
    shape = [int(s) for s in np.asarray(xs[0]).reshape(-1)]
    return [np.full(shape, v[0], dtype=v.dtype)]


@folder("Shape")
def _shape(imp, node, idx, at, xs):
    s = np.array(xs[0], np.int64)
    start, end = at.get("start", 0), at.get("end", None)
    return [s[start:end] if end is not None else s[start:]]


@folder("Size")
def _size(imp, node, idx, at, xs):
    return [np.array(int(np.prod(xs[0])), np.int64)]


@folder("Identity")
def _identity(imp, node, idx, at, xs):
    return [xs[0]]


@folder("Cast")
def _cast(imp, node, idx, at, xs):
    return [xs[0].astype(imp.helper.tensor_dtype_to_np_dtype(at["to"]))]


@folder("Gather")
def _gather(imp, node, idx, at, xs):
    data, ind = xs
    axis = at.get("axis", 0)
    ind = np.asarray(ind, np.int64)
    ind = np.where(ind < 0, ind + data.shape[axis], ind)
    return [np.take(data, ind, axis=axis)]


@folder("Unsqueeze")
def _unsqueeze(imp, node, idx, at, xs):
    axes = _axes(imp, node, idx, at, xs, 1, 13)
    if axes is None:
        raise imp.err(node, idx, "axes are required")
    x = xs[0]
    r = x.ndim + len(axes)
    shape = list(x.shape)
    for a in sorted(a % r for a in axes):
        shape.insert(a, 1)
    return [x.reshape(shape)]


@folder("Squeeze")
def _squeeze(imp, node, idx, at, xs):
    axes = _axes(imp, node, idx, at, xs, 1, 13)
    x = xs[0]
    return [np.squeeze(x) if axes is None else np.squeeze(x, axis=tuple(a % x.ndim for a in axes))]


@folder("Concat")
def _concat(imp, node, idx, at, xs):
    if "axis" not in at:
        raise imp.err(node, idx, "attribute axis is required")
    return [np.concatenate([np.atleast_1d(x) for x in xs], axis=at["axis"])]


@folder("Range")
def _range(imp, node, idx, at, xs):
    start, limit, delta = (np.asarray(x).reshape(()) for x in xs)
    return [np.arange(start, limit, delta).astype(np.asarray(xs[0]).dtype)]


@folder("Expand")
def _expand(imp, node, idx, at, xs):
    shape = np.broadcast_shapes(xs[0].shape, tuple(int(s) for s in np.asarray(xs[1]).reshape(-1)))
    return [np.broadcast_to(xs[0], shape).copy()]


@folder("Tile")
def _tile(imp, node, idx, at, xs):
    return [np.tile(xs[0], [int(r) for r in np.asarray(xs[1]).reshape(-1)])]


@folder("Reshape")
def _reshape(imp, node, idx, at, xs):
    from ..ops import reshape_target

    shape = at["shape"] if "shape" in at else xs[1].reshape(-1)
    target = reshape_target(xs[0].shape, [int(s) for s in shape], bool(at.get("allowzero", 0)))
    return [xs[0].reshape(target)]


@folder("Flatten")
def _flatten(imp, node, idx, at, xs):
    x = xs[0]
    a = at.get("axis", 1)
    a = a + x.ndim if a < 0 else a
    return [x.reshape(int(np.prod(x.shape[:a])), -1)]


@folder("Transpose")
def _transpose(imp, node, idx, at, xs):
    return [np.transpose(xs[0], at.get("perm"))]


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(np.result_type(a, b))  # truncates, as C
    return a / b


_BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": _int_div, "Mod": np.fmod, "Pow": np.power,
    "Equal": np.equal, "Less": np.less, "Greater": np.greater, "LessOrEqual": np.less_equal,
    "GreaterOrEqual": np.greater_equal, "And": np.logical_and, "Or": np.logical_or,
}
_UNARY = {"Neg": np.negative, "Abs": np.abs, "Not": np.logical_not, "Sqrt": np.sqrt, "Floor": np.floor,
          "Ceil": np.ceil, "Relu": lambda x: np.maximum(x, 0), "Sign": np.sign, "Exp": np.exp, "Log": np.log,
          "Reciprocal": lambda x: 1 / x}


@folder(*_BINARY)
def _binary(imp, node, idx, at, xs):
    a, b = (np.asarray(x) for x in xs)
    if node.op_type == "Pow":
        return [np.power(a, b.astype(a.dtype) if a.dtype.kind == "f" else b).astype(a.dtype)]
    if node.op_type == "Mod" and not at.get("fmod", 0):
        return [np.mod(a, b)]
    out = _BINARY[node.op_type](a, b)
    return [out if out.dtype == np.bool_ else out.astype(np.result_type(a, b))]


@folder(*_UNARY)
def _unary(imp, node, idx, at, xs):
    x = np.asarray(xs[0])
    out = _UNARY[node.op_type](x)
    return [out if out.dtype == np.bool_ else out.astype(x.dtype)]


@folder("Where")
def _where(imp, node, idx, at, xs):
    return [np.where(*xs)]


@folder("ScatterND")
def _scatter_nd(imp, node, idx, at, xs):
    if at.get("reduction", "none") != "none":
        raise imp.bad(node, idx, "reduction", at["reduction"], "none only")
    try:  # the graph op's own semantics (of duplicate indices the last update wins)
        return [get_op("scatter_nd").compute({}, [np.asarray(x) for x in xs])]
    except GraphError as e:  # an index out of range: say which node
        raise imp.err(node, idx, str(e)) from None


#: reductions folded on known arrays (shape arithmetic: the element count of a flattened
#: tail, the largest extent) -> numpy's, and the opset from which axes are an input
_REDUCE = {"ReduceProd": (np.prod, 18), "ReduceSum": (np.sum, 13), "ReduceMax": (np.max, 18),
           "ReduceMin": (np.min, 18)}


@folder(*_REDUCE)
def _reduce(imp, node, idx, at, xs):
    fn, since = _REDUCE[node.op_type]
    x = np.asarray(xs[0])
    axes = _axes(imp, node, idx, at, xs, 1, since)
    if not axes:  # absent or empty: every axis, or none with noop_with_empty_axes
        if at.get("noop_with_empty_axes", 0):
            return [x]
        axes = list(range(x.ndim))
    return [fn(x, axis=tuple(a % x.ndim for a in axes), keepdims=bool(at.get("keepdims", 1))).astype(x.dtype)]


@folder("Max", "Min", "Sum", "Mean")
def _nary(imp, node, idx, at, xs):
    fn = {"Max": np.maximum, "Min": np.minimum, "Sum": np.add, "Mean": np.add}[node.op_type]
    out = xs[0]
    for x in xs[1:]:
        out = fn(out, x)
    return [out / np.array(len(xs), out.dtype) if node.op_type == "Mean" else out]


def slice_bounds(shape: tuple[int, ...], starts, ends, axes, steps) -> tuple[list[int], list[int], list[int]]:
    """Per-axis (begin, end, step) of an ONNX Slice, clamped as the spec says (an end of -1
    with a negative step means through index 0)."""
    r = len(shape)
    begin, end, step = [0] * r, list(shape), [1] * r
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = [1] * len(starts) if steps is None else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise GraphError(f"Slice: starts {starts}, ends {ends}, axes {axes} and steps {steps} differ in length")
    for s, e, a, st in zip(starts, ends, axes, steps):
        if not -r <= a < r:
            raise GraphError(f"Slice: axis {a} out of range for rank {r}")
        a %= r
        d = shape[a]
        if st == 0:
            raise GraphError("Slice: a step of 0")
        s = s + d if s < 0 else s
        e = e + d if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), d), min(max(e, 0), d)
        else:
            s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
        begin[a], end[a], step[a] = int(s), int(e), int(st)
    return begin, end, step


def slice_args(imp: Any, node: Any, idx: int, at: dict[str, Any], xs: list[Any], shape: tuple[int, ...]):
    """(begin, end, step) of a Slice node: attributes before opset 10, inputs from 10."""
    if imp.opset < 10:
        starts, ends, axes, steps = at.get("starts"), at.get("ends"), at.get("axes"), None
        if starts is None or ends is None:
            raise imp.err(node, idx, "attributes starts and ends are required")
    else:
        if "starts" in at or "ends" in at:
            raise imp.bad(node, idx, "starts", at.get("starts"), "inputs from opset 10")

        def get(pos):
            v = xs[pos] if pos < len(xs) else None
            return None if v is None else [int(t) for t in np.asarray(v).reshape(-1)]

        starts, ends, axes, steps = get(1), get(2), get(3), get(4)
    try:
        return slice_bounds(shape, list(starts), list(ends), axes, steps)
    except GraphError as e:
        raise imp.err(node, idx, str(e).removeprefix("Slice: ")) from None


@folder("Slice")
def _slice(imp, node, idx, at, xs):
    x = xs[0]
    b, e, s = slice_args(imp, node, idx, at, xs, x.shape)
    return [x[tuple(slice(bi, None if (st < 0 and ei < 0) else ei, st) for bi, ei, st in zip(b, e, s))]]


def split_sizes(imp: Any, node: Any, idx: int, at: dict[str, Any], split_input: Any, extent: int) -> list[int]:
    """Output sizes of a Split: the ``split`` attribute (< 13) or input (>= 13), else equal
    parts (opset 18's ``num_outputs``: the last part may be smaller)."""
    n = len(node.output)
    split = at.get("split") if imp.opset < 13 else split_input
    if split is not None:
        sizes = [int(s) for s in np.asarray(split).reshape(-1)]
    elif "num_outputs" in at or extent % n == 0:
        k = -(-extent // n)
        sizes = [k] * (n - 1) + [extent - k * (n - 1)]
    else:
        raise imp.err(node, idx, f"axis extent {extent} does not split into {n} equal parts")
    if len(sizes) != n or sum(sizes) != extent or min(sizes) < 0:
        raise imp.err(node, idx, f"split sizes {sizes} do not cover the axis extent {extent} in {n} outputs")
    return sizes


@folder("Split")
def _split(imp, node, idx, at, xs):
    x = xs[0]
    axis = at.get("axis", 0) % x.ndim
    sizes = split_sizes(imp, node, idx, at, xs[1] if len(xs) > 1 else None, x.shape[axis])
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)
