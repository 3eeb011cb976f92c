"""Element-wise operators: Relu and the activations (Sigmoid, Tanh, LeakyRelu, PRelu, Elu,
Selu, Softplus, Softsign, HardSigmoid, HardSwish, Clip in its attribute form < 11 and
input form >= 11), unary math (Neg, Abs, Exp, Log, Sqrt, Reciprocal, Sign, Floor, Ceil),
broadcasting binaries (Add, Sub, Mul, Div, Pow) and the n-ary Sum/Mean/Max/Min,
Softmax/LogSoftmax (opset < 13: the input coerced to 2-D at ``axis``), and the QDQ pair
QuantizeLinear/DequantizeLinear (per-tensor).

Binary operators broadcast both ways as ONNX does: the graph's binaries want the first
operand at the result shape, so a commutative pair is swapped and otherwise the first
operand is ``expand``-ed. A constant operand meeting a float32 value is read as float32
(exporters write ``Pow(x, int64 2)``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["ElemwiseOps"]

_UNARY = {
    "Relu": ("relu", {}), "Tanh": ("tanh", {}), "Sigmoid": ("sigmoid", {}), "Neg": ("neg", {}),
    "Abs": ("abs", {}), "Exp": ("exp", {}), "Log": ("log", {}), "Sqrt": ("sqrt", {}),
    "Reciprocal": ("reciprocal", {}), "Sign": ("sign", {}), "Floor": ("floor", {}), "Ceil": ("ceil", {}),
    "Softplus": ("softplus", {}), "Softsign": ("softsign", {}), "HardSwish": ("hard_swish", {}),
    "LeakyRelu": ("leaky_relu", {"alpha": 0.01}), "Elu": ("elu", {"alpha": 1.0}),
    "Selu": ("selu", {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875}),
    "HardSigmoid": ("hard_sigmoid", {"alpha": 0.2, "beta": 0.5}),
    "Shrink": ("shrink", {"lambd": 0.5, "bias": 0.0}),
    "Erf": ("erf", {}), "Gelu": ("gelu", {"approximate": "none"}), "Celu": ("celu", {"alpha": 1.0}),
    "ThresholdedRelu": ("thresholded_relu", {"alpha": 1.0}), "Mish": ("mish", {}),
}
_COMMUTATIVE = ("add", "mul", "maximum", "minimum")


def _unary(onnx_op: str):
    op, defaults = _UNARY[onnx_op]

    def f(self: Any, n: Any, i: int) -> None:
        a = self.attrs(n, i, {**defaults, "consumed_inputs": None})
        a.pop("consumed_inputs")
        self.elemwise_unary(n, op, **{k: v if isinstance(v, str) else float(v) for k, v in a.items()})

    f.__name__ = f"op_{onnx_op}"
    return f


class ElemwiseOps:
    def elemwise_unary(self, n: Any, op: str, **attrs: Any) -> None:
        """``op`` on input 0; on a 1-D conv's height-1 form too, so the next conv can read that."""
        x4 = self.h1.get(n.input[0])
        if x4 is None:
            self.emit(n, op, [self.value(n.input[0])], **attrs)
            return
        y4 = self.helper_node(n, op, [x4], "h1", **attrs)
        self.emit(n, "reshape", [y4], shape=self.g.type_of(self.value(n.input[0])).shape)
        self.h1[n.output[0]] = y4

    # -- binaries -------------------------------------------------------------------------
    def operand(self, name: str, other_dtype: str | None) -> str:
        """Graph value of a binary operand; a known array meeting a float32 value is float32."""
        if name in self.known and name not in self.env and other_dtype == "float32":
            a = self.known[name]
            if a.dtype != np.float32:
                self.env[name] = self.g.add_const(name, a.astype(np.float32))
        return self.value(name)

    def binary(self, n: Any, i: int, op: str, a_name: str, b_name: str, out: str | None = None) -> str:
        """``op(a, b)`` with two-way broadcasting; emitted as ``n``'s output unless ``out`` names a helper."""
        ka, kb = a_name in self.known and a_name not in self.env, b_name in self.known and b_name not in self.env
        ta = None if ka else self.g.type_of(self.value(a_name)).dtype
        tb = None if kb else self.g.type_of(self.value(b_name)).dtype
        a, b = self.operand(a_name, tb), self.operand(b_name, ta)
        return self.binary_values(n, i, op, a, b, out)

    def binary_values(self, n: Any, i: int, op: str, a: str, b: str, out: str | None = None) -> str:
        sa, sb = self.g.type_of(a).shape, self.g.type_of(b).shape
        try:
            shape = np.broadcast_shapes(sa, sb)
        except ValueError:
            raise self.err(n, i, f"shapes {sa} and {sb} do not broadcast") from None
        if shape != sa:
            if shape == sb and op in _COMMUTATIVE:
                a, b = b, a
            else:
                a = self.helper_node(n, "expand", [a], f"{out or 'bcast'}.expand", shape=shape)
        if out is not None:
            return self.helper_node(n, op, [a, b], out)
        return self.emit(n, op, [a, b])

    def _binary_op(op: str):  # noqa: N805 - a factory used in the class body
        def f(self: Any, n: Any, i: int) -> None:
            a = self.attrs(n, i, {"broadcast": 0, "axis": None, "consumed_inputs": None})
            b = n.input[1]
            if a["axis"] is not None:  # opset < 7 broadcasting aligned at `axis`
                b = self._legacy_axis(n, i, a["axis"])
            xa, xb = self.h1.get(n.input[0]), self.h1.get(b)
            if xa is not None and xb is not None and self.g.type_of(xa) == self.g.type_of(xb):
                # a residual between two 1-D conv outputs: add their height-1 forms (VDLA fuses that)
                y4 = self.helper_node(n, op, [xa, xb], "h1")
                self.emit(n, "reshape", [y4], shape=self.g.type_of(self.value(n.input[0])).shape)
                self.h1[n.output[0]] = y4
                return
            self.binary(n, i, op, n.input[0], b)

        return f

    def _legacy_axis(self, n: Any, i: int, axis: int) -> str:
        """Opset < 7 ``broadcast=1, axis=k``: B's dims align with A's from ``k``; reshape B to numpy's rule."""
        ra = len(self.shape_of(n.input[0]))
        sb = self.shape_of(n.input[1])
        k = axis % ra
        target = tuple(sb) + (1,) * (ra - k - len(sb))
        b = self.const(n.input[1])
        name = f"{n.input[1]}.axis{k}"
        if b is None:
            self.env[name] = self.reshape(n, self.value(n.input[1]), target, f"axis{k}")
        else:
            self.known[name] = np.asarray(b).reshape(target)
        return name

    op_Add = _binary_op("add")
    op_Sub = _binary_op("sub")
    op_Mul = _binary_op("mul")
    op_Div = _binary_op("div")

    def op_Pow(self, n: Any, i: int) -> None:
        self.attrs(n, i, {})
        e = self.const(n.input[1])
        if e is not None and e.size == 1 and float(e.reshape(-1)[0]) == 1.0:
            self.alias(n, n.input[0])
            return
        self.binary(n, i, "pow", n.input[0], n.input[1])

    def _nary(self, n: Any, i: int, op: str) -> None:
        self.attrs(n, i, {"consumed_inputs": None})
        ins = [v for v in n.input if v]
        if len(ins) == 1:
            self.alias(n, ins[0])
            return
        graph_op = {"sum": "add", "mean": "add", "max": "maximum", "min": "minimum"}[op]
        acc = self.binary(n, i, graph_op, ins[0], ins[1], out=None if len(ins) == 2 and op != "mean" else "acc1")
        for k, v in enumerate(ins[2:], 2):
            last = k == len(ins) - 1 and op != "mean"
            acc = self.binary_values(n, i, graph_op, acc, self.operand(v, "float32"), None if last else f"acc{k}")
        if op == "mean":
            cnt = self.g.add_const(f"{n.output[0]}.count", np.array(len(ins), np.float32))
            self.emit(n, "div", [acc, cnt])

    def op_Sum(self, n: Any, i: int) -> None:
        self._nary(n, i, "sum")

    def op_Mean(self, n: Any, i: int) -> None:
        self._nary(n, i, "mean")

    def op_Max(self, n: Any, i: int) -> None:
        self._nary(n, i, "max")

    def op_Min(self, n: Any, i: int) -> None:
        self._nary(n, i, "min")

    def op_PRelu(self, n: Any, i: int) -> None:
        self.attrs(n, i, {"consumed_inputs": None})
        x = self.value(n.input[0])
        xs = self.g.type_of(x).shape
        sname = n.input[1]
        slope = self.const(sname)
        if slope is not None and self.opset < 7 and slope.ndim == 1 and len(xs) > 2 and slope.size == xs[1]:
            # PRelu-6: a per-channel slope of shape (C,) aligned at the channel axis
            sname = f"{sname}.nchw"
            self.known[sname] = slope.reshape((-1,) + (1,) * (len(xs) - 2))
        s = self.operand(sname, "float32")
        try:
            if np.broadcast_shapes(xs, self.g.type_of(s).shape) != xs:
                raise ValueError
        except ValueError:
            raise self.err(n, i, f"slope {self.g.type_of(s)} does not broadcast to the input {xs}") from None
        self.emit(n, "prelu", [x, s])

    def op_Clip(self, n: Any, i: int) -> None:
        if self.opset < 11:
            a = self.attrs(n, i, {"min": None, "max": None, "consumed_inputs": None})
            lo, hi = a["min"], a["max"]
        else:
            self.attrs(n, i, {})
            lo = self.need_const(n, i, 1, "min").item() if self.has_input(n, 1) else None
            hi = self.need_const(n, i, 2, "max").item() if self.has_input(n, 2) else None
        # Clip-6's defaults are the float range: no bound
        lo = None if lo is not None and lo <= -3.4e38 else lo
        hi = None if hi is not None and hi >= 3.4e38 else hi
        self.elemwise_unary(n, "clip", min=lo, max=hi)

    def _softmax(self, n: Any, i: int, op: str) -> None:
        a = self.attrs(n, i, {"axis": -1 if self.opset >= 13 else 1})
        x = self.value(n.input[0])
        shape = self.g.type_of(x).shape
        r = len(shape)
        if not -r <= a["axis"] < r:
            raise self.bad(n, i, "axis", a["axis"], f"out of range for rank {r}")
        axis = a["axis"] % r
        if self.opset >= 13 or axis == r - 1:
            self.emit(n, op, [x], axis=axis)
            return
        # opset < 13: the input is coerced to 2-D [prod(shape[:axis]), prod(shape[axis:])]
        flat = self.reshape(n, x, (math.prod(shape[:axis]), math.prod(shape[axis:])), "as2d")
        y = self.helper_node(n, op, [flat], op, axis=1)
        self.emit(n, "reshape", [y], shape=shape)

    def op_Softmax(self, n: Any, i: int) -> None:
        self._softmax(n, i, "softmax")

    def op_LogSoftmax(self, n: Any, i: int) -> None:
        self._softmax(n, i, "log_softmax")

    # -- QDQ ------------------------------------------------------------------------------
    def _qparams(self, n: Any, i: int, default_dtype: str) -> tuple[float, int, str]:
        scale = self.need_const(n, i, 1, "the scale")
        if scale.size != 1:
            raise self.err(n, i, f"per-axis quantisation (scale shape {scale.shape}) is not supported; "
                                 "use per-tensor scales")
        zp = self.need_const(n, i, 2, "the zero point") if self.has_input(n, 2) else None
        if zp is not None and zp.size != 1:
            raise self.err(n, i, "per-axis zero points are not supported")
        dtype = str(zp.dtype) if zp is not None else default_dtype
        return float(scale.reshape(-1)[0]), int(zp.reshape(-1)[0]) if zp is not None else 0, dtype

    def op_QuantizeLinear(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"axis": 1, "saturate": 1, "block_size": 0, "output_dtype": 0})
        if a["block_size"]:
            raise self.bad(n, i, "block_size", a["block_size"])
        if a["output_dtype"]:
            raise self.bad(n, i, "output_dtype", a["output_dtype"])
        scale, zp, dtype = self._qparams(n, i, "uint8")
        if dtype not in ("int8", "uint8"):
            raise self.err(n, i, f"output type {dtype} is not supported")
        self.emit(n, "quantize", [self.value(n.input[0])], scale=scale, zero_point=zp, dtype=dtype)

    def op_DequantizeLinear(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"axis": 1, "block_size": 0})
        if a["block_size"]:
            raise self.bad(n, i, "block_size", a["block_size"])
        scale, zp, _ = self._qparams(n, i, "uint8")
        self.emit(n, "dequantize", [self.value(n.input[0])], scale=scale, zero_point=zp)


for _k in _UNARY:
    setattr(ElemwiseOps, f"op_{_k}", _unary(_k))
