"""Tensor and shape operators on graph values (the same operators on known arrays are
folded by :mod:`.consts`): Reshape, Flatten, Squeeze/Unsqueeze (as reshapes), Concat,
Transpose, Pad (attribute form < 11, input form >= 11), Slice, Split, Gather with constant
indices, Expand, Tile, Cast, Identity, Dropout (inference; its mask is a known all-true
array), the reductions ReduceMean/Sum/Max/Min (axes as attribute, or as input from
ReduceSum-13 and the others' opset 18) and ArgMax/ArgMin (int64 indices read as int32).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import reshape_target
from .consts import slice_args, split_sizes
from .core import ELEM_DTYPES

__all__ = ["TensorOps"]


class TensorOps:
    def op_Identity(self, n: Any, i: int) -> None:
        self.attrs(n, i, {})
        self.alias(n, n.input[0])

    def op_Dropout(self, n: Any, i: int) -> None:
        self.attrs(n, i, {"ratio": 0.5, "seed": 0, "is_test": 1, "consumed_inputs": None})
        if self.has_input(n, 2):
            t = self.const(n.input[2])
            if t is None or bool(np.asarray(t).reshape(-1)[0]):
                raise self.err(n, i, "training_mode must be a constant false (inference only)")
        self.alias(n, n.input[0])
        if len(n.output) > 1 and n.output[1]:  # the mask of an inference dropout keeps everything
            self.known[n.output[1]] = np.ones(self.shape_of(n.input[0]), np.bool_)

    def op_Cast(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"to": None, "saturate": 1})
        dtype = ELEM_DTYPES.get(a["to"])
        if dtype is None:
            name = self.onnx.TensorProto.DataType.Name(a["to"]) if a["to"] is not None else None
            raise self.bad(n, i, "to", name, "graph values are float32, int32, int8 or uint8")
        x = self.value(n.input[0])
        if self.g.type_of(x).dtype == dtype:
            self.env[n.output[0]] = x
        else:
            self.emit(n, "cast", [x], dtype=dtype)

    def op_Reshape(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"allowzero": 0, "shape": None, "consumed_inputs": None})
        if a["shape"] is not None:  # Reshape-1's attribute form
            shape = np.array(a["shape"], np.int64)
        else:
            shape = self.need_const(n, i, 1, "the target shape")
        x = self.value(n.input[0])
        try:
            target = reshape_target(self.g.type_of(x).shape, [int(s) for s in shape.reshape(-1)], bool(a["allowzero"]))
        except Exception as e:
            raise self.err(n, i, str(e)) from None
        self.emit(n, "reshape", [x], shape=target)

    def op_Flatten(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"axis": 1})
        x = self.value(n.input[0])
        r = len(self.g.type_of(x).shape)
        if not -r <= a["axis"] <= r:
            raise self.bad(n, i, "axis", a["axis"], f"out of range for rank {r}")
        self.emit(n, "flatten", [x], axis=a["axis"] + r if a["axis"] < 0 else a["axis"])

    def _squeeze_axes(self, n: Any, i: int) -> list[int] | None:
        if self.opset >= 13:
            self.attrs(n, i, {})
            return self.ints_input(n, i, 1, "axes")
        a = self.attrs(n, i, {"axes": None})
        return None if a["axes"] is None else list(a["axes"])

    def op_Squeeze(self, n: Any, i: int) -> None:
        axes = self._squeeze_axes(n, i)
        x = self.value(n.input[0])
        s = self.g.type_of(x).shape
        drop = {a % len(s) for a in axes} if axes is not None else {k for k, d in enumerate(s) if d == 1}
        bad = [a for a in drop if s[a] != 1]
        if bad:
            raise self.err(n, i, f"cannot squeeze axes {bad} of shape {s} (not 1)")
        self.emit(n, "reshape", [x], shape=tuple(d for k, d in enumerate(s) if k not in drop))

    def op_Unsqueeze(self, n: Any, i: int) -> None:
        axes = self._squeeze_axes(n, i)
        if axes is None:
            raise self.err(n, i, "axes are required")
        x = self.value(n.input[0])
        shape = list(self.g.type_of(x).shape)
        r = len(shape) + len(axes)
        for a in sorted(a % r for a in axes):
            shape.insert(a, 1)
        self.emit(n, "reshape", [x], shape=tuple(shape))

    def op_Concat(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"axis": None})
        if a["axis"] is None:
            raise self.err(n, i, "attribute axis is required")
        self.emit(n, "concat", [self.value(v) for v in n.input if v], axis=a["axis"])

    def op_Transpose(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"perm": None})
        x = self.value(n.input[0])
        r = len(self.g.type_of(x).shape)
        perm = tuple(a["perm"]) if a["perm"] is not None else tuple(reversed(range(r)))
        self.emit(n, "transpose", [x], perm=perm)

    def op_Pad(self, n: Any, i: int) -> None:
        x = self.value(n.input[0])
        r = len(self.g.type_of(x).shape)
        if self.opset < 11:
            a = self.attrs(n, i, {"mode": "constant", "pads": None, "paddings": None, "value": 0.0})
            pads = a["pads"] if a["pads"] is not None else a["paddings"]
            if pads is None:
                raise self.err(n, i, "attribute pads is required")
            value = a["value"]
        else:
            a = self.attrs(n, i, {"mode": "constant"})
            pads = self.ints_input(n, i, 1, "pads")
            cv = self.const(n.input[2]) if self.has_input(n, 2) else None
            if self.has_input(n, 2) and cv is None:
                raise self.err(n, i, "constant_value (input 2) must be a constant")
            value = float(np.asarray(cv).reshape(-1)[0]) if cv is not None and cv.size else 0.0
            axes = self.ints_input(n, i, 3, "axes")  # opset 18
            if axes is not None:
                full = [0] * (2 * r)
                for k, ax in enumerate(axes):
                    full[ax % r], full[ax % r + r] = pads[k], pads[k + len(axes)]
                pads = full
        if a["mode"] not in ("constant", "reflect", "edge"):
            raise self.bad(n, i, "mode", a["mode"], "constant, reflect or edge")
        if len(pads) != 2 * r:
            raise self.err(n, i, f"pads {list(pads)} needs {2 * r} values for rank {r}")
        self.emit(n, "pad", [x], pads=tuple(int(p) for p in pads), mode=a["mode"], value=float(value))

    def op_Slice(self, n: Any, i: int) -> None:
        at = self.attrs(n, i, {"starts": None, "ends": None, "axes": None} if self.opset < 10 else {})
        at = {k: v for k, v in at.items() if v is not None}
        x = self.value(n.input[0])
        xs: list[Any] = [None] + [self.need_const(n, i, p, "slice bounds") if self.has_input(n, p) else None
                                  for p in range(1, len(n.input))]
        b, e, s = slice_args(self, n, i, at, xs, self.g.type_of(x).shape)
        self.emit(n, "slice", [x], begin=tuple(b), end=tuple(e), step=tuple(s))

    def op_Split(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"axis": 0, "split": None, "num_outputs": None})
        at = {k: v for k, v in a.items() if v is not None}
        x = self.value(n.input[0])
        shape = self.g.type_of(x).shape
        axis = a["axis"] % len(shape)
        sp = self.need_const(n, i, 1, "split") if self.opset >= 13 and self.has_input(n, 1) else None
        sizes = split_sizes(self, n, i, at, sp, shape[axis])
        start = 0
        for k, size in enumerate(sizes):
            b, e = [0] * len(shape), list(shape)
            b[axis], e[axis] = start, start + size
            start += size
            if n.output[k]:
                self.emit(n, "slice", [x], out=k, begin=tuple(b), end=tuple(e), step=(1,) * len(shape))

    def op_Gather(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"axis": 0})
        idx = self.const(n.input[1])
        x = self.value(n.input[0])
        if idx is None:  # run-time indices (an embedding lookup)
            ind = self.value(n.input[1])
            if self.g.type_of(ind).dtype not in ("int32", "int8", "uint8"):
                raise self.err(n, i, f"indices {self.g.type_of(ind)} must be integers")
            if self.g.type_of(ind).dtype != "int32":
                ind = self.helper_node(n, "cast", [ind], "idx32", dtype="int32")
            self.emit(n, "gather", [x, ind], axis=a["axis"])
            return
        s = self.g.type_of(x).shape
        ax = a["axis"] % len(s)
        ind = np.asarray(idx, np.int64)
        ind = np.where(ind < 0, ind + s[ax], ind)
        self.emit(n, "take", [x], indices=tuple(int(v) for v in ind.reshape(-1)), ishape=tuple(ind.shape), axis=ax)

    def op_Expand(self, n: Any, i: int) -> None:
        self.attrs(n, i, {})
        shape = tuple(int(v) for v in self.need_const(n, i, 1, "the shape").reshape(-1))
        x = self.value(n.input[0])
        xs = self.g.type_of(x).shape
        if len(shape) <= len(xs) and all(d in (1, e) for d, e in zip(reversed(shape), reversed(xs))):
            self.env[n.output[0]] = x  # already of the shape (``expand_as`` of an equal shape): no node
            return
        self.emit(n, "expand", [x], shape=shape)

    def op_Tile(self, n: Any, i: int) -> None:
        self.attrs(n, i, {})
        reps = self.ints_input(n, i, 1, "repeats")
        x = self.value(n.input[0])
        if reps is None or len(reps) != len(self.g.type_of(x).shape):
            raise self.err(n, i, f"repeats {reps} needs one value per axis")
        for ax, r in enumerate(reps):
            if r != 1:
                x = self.helper_node(n, "concat", [x] * r, f"tile{ax}", axis=ax)
        self.env[n.output[0]] = x

    def _reduce(self, n: Any, i: int, op: str, input_since: int) -> None:
        if self.opset >= input_since:
            a = self.attrs(n, i, {"keepdims": 1, "noop_with_empty_axes": 0})
            axes = self.ints_input(n, i, 1, "axes")
        else:
            a = self.attrs(n, i, {"keepdims": 1, "axes": None})
            axes = None if a["axes"] is None else list(a["axes"])
            a["noop_with_empty_axes"] = 0
        x = self.value(n.input[0])
        if not axes and a["noop_with_empty_axes"]:
            self.env[n.output[0]] = x
            return
        self.emit(n, op, [x], axes=tuple(axes) if axes else None, keepdims=int(a["keepdims"]))

    def op_ReduceMean(self, n: Any, i: int) -> None:
        self._reduce(n, i, "reduce_mean", 18)

    def op_ReduceSum(self, n: Any, i: int) -> None:
        self._reduce(n, i, "reduce_sum", 13)

    def op_ReduceMax(self, n: Any, i: int) -> None:
        self._reduce(n, i, "reduce_max", 18)

    def op_ReduceMin(self, n: Any, i: int) -> None:
        self._reduce(n, i, "reduce_min", 18)

    def _arg(self, n: Any, i: int, op: str) -> None:
        a = self.attrs(n, i, {"axis": 0, "keepdims": 1, "select_last_index": 0})
        self.emit(n, op, [self.value(n.input[0])], axis=int(a["axis"]), keepdims=int(a["keepdims"]),
                  select_last_index=int(a["select_last_index"]))

    def op_ArgMax(self, n: Any, i: int) -> None:
        self._arg(n, i, "argmax")

    def op_ArgMin(self, n: Any, i: int) -> None:
        self._arg(n, i, "argmin")
