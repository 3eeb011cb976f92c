"""ONNX import with the ``onnx`` package: an ``onnx.ModelProto`` (or file) to a :class:`Graph`.

Supported operators: Conv, ConvTranspose, Gemm, MatMul, Relu, Clip, Add, Sub, Mul,
BatchNormalization, MaxPool, AveragePool, GlobalAveragePool, Flatten, Reshape, Concat,
Softmax, QuantizeLinear, DequantizeLinear, Tanh, Sigmoid, plus Constant, Identity and
(inference) Dropout. Everything else — an unknown operator, an unsupported attribute or
attribute value, a non-constant shape, a dynamic input dimension without a bound given in
``shapes`` — raises a :class:`GraphError` naming the operator, attribute and node.

Shapes are static: symbolic input dimensions must be bound with
``from_onnx(model, shapes={"input": (1, 3, 224, 224)})``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .ir import Graph, GraphError
from .ops import reshape_target

__all__ = ["from_onnx", "load_onnx", "SUPPORTED_OPS"]


def _onnx():
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise GraphError("ONNX import needs the onnx package: pip install 'vdla[graph]'") from e
    return onnx


_ELEM = {1: "float32", 2: "uint8", 3: "int8", 6: "int32", 7: "int64", 11: "float64"}


class _Importer:
    def __init__(self, model: Any, shapes: Mapping[str, Sequence[int]] | None) -> None:
        onnx = _onnx()
        from onnx import helper, numpy_helper

        self.helper, self.nph = helper, numpy_helper
        self.model = model
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        og = model.graph
        self.g = Graph(og.name or "onnx")
        self.known: dict[str, np.ndarray] = {}  # constant values by ONNX name
        self.env: dict[str, str] = {}  # ONNX value name -> graph value name
        for t in og.initializer:
            self.known[t.name] = numpy_helper.to_array(t)
        shapes = dict(shapes or {})
        real_inputs = [i for i in og.input if i.name not in self.known]
        for k in shapes:
            if k not in {i.name for i in real_inputs}:
                raise GraphError(
                    f"shapes names {k!r}, which is not an input of the model "
                    f"(inputs: {', '.join(i.name for i in real_inputs)})"
                )
        for vi in real_inputs:
            tt = vi.type.tensor_type
            if not vi.type.HasField("tensor_type"):
                raise GraphError(f"model input {vi.name!r} is not a tensor")
            dtype = _ELEM.get(tt.elem_type)
            if dtype not in ("float32", "int8", "uint8", "int32"):
                raise GraphError(
                    f"model input {vi.name!r} has unsupported element type "
                    f"{onnx.TensorProto.DataType.Name(tt.elem_type)}"
                )
            dims: list[int] = []
            for ax, d in enumerate(tt.shape.dim):
                if d.HasField("dim_value") and d.dim_value > 0:
                    dims.append(d.dim_value)
                elif vi.name in shapes:
                    dims.append(-1)
                else:
                    sym = d.dim_param or "?"
                    raise GraphError(
                        f"model input {vi.name!r} has a dynamic dimension {sym!r} (axis {ax}) without a "
                        f"bound; pass shapes={{{vi.name!r}: (...)}}"
                    )
            if vi.name in shapes:
                want = tuple(int(s) for s in shapes[vi.name])
                if len(want) != len(dims) or any(d not in (-1, w) for d, w in zip(dims, want)):
                    raise GraphError(
                        f"shape {want} given for input {vi.name!r} does not match its declared shape "
                        f"{tuple(d if d > 0 else '?' for d in dims)}"
                    )
                dims = list(want)
            self.env[vi.name] = self.g.add_input(vi.name, tuple(dims), dtype)

    # -- helpers --------------------------------------------------------------------
    def where(self, node: Any, idx: int) -> str:
        return f"node {node.name!r}" if node.name else f"node #{idx} ({node.op_type} -> {list(node.output)})"

    def attrs(self, node: Any, idx: int, allowed: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(allowed)
        for a in node.attribute:
            if a.name not in allowed:
                raise GraphError(f"ONNX {node.op_type} at {self.where(node, idx)}: unsupported attribute {a.name!r}")
            v = self.helper.get_attribute_value(a)
            out[a.name] = v.decode() if isinstance(v, bytes) else v
        return out

    def bad(self, node: Any, idx: int, attr: str, value: Any, why: str = "") -> GraphError:
        return GraphError(
            f"ONNX {node.op_type} at {self.where(node, idx)}: unsupported attribute {attr}={value!r}"
            + (f" ({why})" if why else "")
        )

    def value(self, name: str) -> str:
        """Graph value for an ONNX tensor name (constants become graph constants on use)."""
        if name in self.env:
            return self.env[name]
        if name in self.known:
            a = self.known[name]
            if a.dtype == np.float64:
                a = a.astype(np.float32)
            if a.dtype == np.int64:
                raise GraphError(f"int64 tensor {name!r} used as data; only shapes may be int64")
            self.env[name] = self.g.add_const(name, a)
            return self.env[name]
        raise GraphError(f"ONNX value {name!r} is used before it is defined")

    def const(self, name: str) -> np.ndarray | None:
        if name in self.known:
            return self.known[name]
        v = self.env.get(name)
        if v is not None and v in self.g.consts:
            return self.g.consts[v]
        return None

    def need_const(self, node: Any, idx: int, pos: int, what: str) -> np.ndarray:
        a = self.const(node.input[pos]) if pos < len(node.input) and node.input[pos] else None
        if a is None:
            raise GraphError(f"ONNX {node.op_type} at {self.where(node, idx)}: {what} (input {pos}) must be a constant")
        return a

    def emit(self, node: Any, op: str, ins: list[str], **attrs: Any) -> str:
        try:
            name = self.g.add_node(op, ins, name=node.output[0], **attrs)
            if node.name:
                self.g.nodes[-1].notes["onnx_node"] = node.name
            return name
        except GraphError as e:
            raise GraphError(f"ONNX {node.op_type} at {self.where(node, 0)}: {e}") from None

    def pads2d(
        self,
        node: Any,
        idx: int,
        a: dict[str, Any],
        in_hw: Sequence[int],
        kernel: Sequence[int],
        strides: Sequence[int],
        dil: Sequence[int],
    ) -> tuple[int, int, int, int]:
        ap = a.get("auto_pad", "NOTSET")
        if ap in ("NOTSET", "") or ap is None:
            p = list(a.get("pads") or [0, 0, 0, 0])
            if len(p) != 4:
                raise self.bad(node, idx, "pads", p, "2-D only")
            return (p[0], p[1], p[2], p[3])
        if ap == "VALID":
            return (0, 0, 0, 0)
        if ap in ("SAME_UPPER", "SAME_LOWER"):
            res = []
            for size, k, s, d in zip(in_hw, kernel, strides, dil):
                out = -(-size // s)
                total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
                lo = total // 2 if ap == "SAME_UPPER" else total - total // 2
                res.append((lo, total - lo))
            return (res[0][0], res[1][0], res[0][1], res[1][1])
        raise self.bad(node, idx, "auto_pad", ap)

    # -- operators ------------------------------------------------------------------
    def op_Conv(self, n: Any, i: int) -> str:
        a = self.attrs(
            n,
            i,
            {"auto_pad": "NOTSET", "dilations": None, "group": 1, "kernel_shape": None, "pads": None, "strides": None},
        )
        x, w = self.value(n.input[0]), self.value(n.input[1])
        xt, wt = self.g.type_of(x), self.g.type_of(w)
        if len(xt.shape) != 4 or len(wt.shape) != 4:
            raise GraphError(
                f"ONNX Conv at {self.where(n, i)}: only 2-D convolutions (4-D tensors) are supported, "
                f"got data {xt} and weight {wt}"
            )
        k = tuple(wt.shape[2:])
        if a["kernel_shape"] is not None and tuple(a["kernel_shape"]) != k:
            raise self.bad(n, i, "kernel_shape", a["kernel_shape"], f"weight has {k}")
        s = tuple(a["strides"] or (1, 1))
        d = tuple(a["dilations"] or (1, 1))
        pads = self.pads2d(n, i, a, xt.shape[2:], k, s, d)
        ins = [x, w] + ([self.value(n.input[2])] if len(n.input) > 2 and n.input[2] else [])
        return self.emit(n, "conv2d", ins, strides=s, padding=pads, dilation=d, groups=a["group"])

    def op_ConvTranspose(self, n: Any, i: int) -> str:
        a = self.attrs(
            n,
            i,
            {
                "auto_pad": "NOTSET",
                "dilations": None,
                "group": 1,
                "kernel_shape": None,
                "output_padding": None,
                "output_shape": None,
                "pads": None,
                "strides": None,
            },
        )
        if a["output_shape"] is not None:
            raise self.bad(n, i, "output_shape", a["output_shape"], "give pads/output_padding instead")
        if a["group"] != 1:
            raise self.bad(n, i, "group", a["group"])
        if a["dilations"] is not None and tuple(a["dilations"]) != (1, 1):
            raise self.bad(n, i, "dilations", a["dilations"])
        if a["auto_pad"] not in ("NOTSET", ""):
            raise self.bad(n, i, "auto_pad", a["auto_pad"])
        x, w = self.value(n.input[0]), self.value(n.input[1])
        if len(self.g.type_of(x).shape) != 4:
            raise GraphError(f"ONNX ConvTranspose at {self.where(n, i)}: only 2-D is supported")
        p = list(a["pads"] or [0, 0, 0, 0])
        ins = [x, w] + ([self.value(n.input[2])] if len(n.input) > 2 and n.input[2] else [])
        return self.emit(
            n,
            "conv2d_transpose",
            ins,
            strides=tuple(a["strides"] or (1, 1)),
            padding=tuple(p),
            output_padding=tuple(a["output_padding"] or (0, 0)),
        )

    def op_Gemm(self, n: Any, i: int) -> str:
        a = self.attrs(n, i, {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0})
        if a["transA"]:
            raise self.bad(n, i, "transA", a["transA"])
        x = self.value(n.input[0])
        bconst = self.const(n.input[1])
        has_c = len(n.input) > 2 and n.input[2] != ""
        if bconst is None:
            if a["alpha"] != 1.0 or a["transB"] or has_c:
                raise GraphError(
                    f"ONNX Gemm at {self.where(n, i)}: a non-constant B supports only alpha=1, transB=0 and no C"
                )
            return self.emit(n, "matmul", [x, self.value(n.input[1])])
        wm = bconst if a["transB"] else bconst.T
        wm = (wm * np.float32(a["alpha"])).astype(wm.dtype) if a["alpha"] != 1.0 else wm
        ins = [x, self.g.add_const(f"{n.input[1]}.w", np.ascontiguousarray(wm))]
        full_c = None
        if has_c:
            c = self.const(n.input[2])
            m = wm.shape[0]
            if c is None:
                full_c = self.value(n.input[2])
                if a["beta"] != 1.0:
                    raise self.bad(n, i, "beta", a["beta"], "with a non-constant C")
            elif c.size in (1, m) and (c.ndim < 2 or c.shape[0] == 1):
                cb = np.broadcast_to(c.reshape(-1), (m,)) * np.float32(a["beta"])
                ins.append(self.g.add_const(f"{n.input[2]}.b", cb.astype(np.float32)))
            else:
                full_c = self.g.add_const(f"{n.input[2]}.c", (c * np.float32(a["beta"])).astype(np.float32))
        if full_c is None:
            return self.emit(n, "dense", ins)
        y = self.g.add_node("dense", ins, name=f"{n.output[0]}.gemm")
        return self.emit(n, "add", [y, full_c])

    def op_MatMul(self, n: Any, i: int) -> str:
        self.attrs(n, i, {})
        x = self.value(n.input[0])
        if len(self.g.type_of(x).shape) != 2:
            raise GraphError(
                f"ONNX MatMul at {self.where(n, i)}: only 2-D operands are supported, got {self.g.type_of(x)}"
            )
        b = self.const(n.input[1])
        if b is not None and b.ndim == 2:
            w = self.g.add_const(f"{n.input[1]}.T", np.ascontiguousarray(b.T))
            return self.emit(n, "dense", [x, w])
        return self.emit(n, "matmul", [x, self.value(n.input[1])])

    def _unary(op: str):  # noqa: N805 - a factory used in the class body
        def f(self: _Importer, n: Any, i: int) -> str:
            self.attrs(n, i, {})
            return self.emit(n, op, [self.value(n.input[0])])

        return f

    op_Relu = _unary("relu")
    op_Tanh = _unary("tanh")
    op_Sigmoid = _unary("sigmoid")

    def op_Clip(self, n: Any, i: int) -> str:
        if self.opset < 11:
            a = self.attrs(n, i, {"min": None, "max": None})
            lo, hi = a["min"], a["max"]
        else:
            self.attrs(n, i, {})
            lo = self.need_const(n, i, 1, "min").item() if len(n.input) > 1 and n.input[1] else None
            hi = self.need_const(n, i, 2, "max").item() if len(n.input) > 2 and n.input[2] else None
        return self.emit(n, "clip", [self.value(n.input[0])], min=lo, max=hi)

    def _binary(op: str):  # noqa: N805
        def f(self: _Importer, n: Any, i: int) -> str:
            self.attrs(n, i, {})
            a, b = self.value(n.input[0]), self.value(n.input[1])
            sa, sb = self.g.type_of(a).shape, self.g.type_of(b).shape
            try:
                out = np.broadcast_shapes(sa, sb)
            except ValueError:
                raise GraphError(
                    f"ONNX {n.op_type} at {self.where(n, i)}: shapes {sa} and {sb} do not broadcast"
                ) from None
            if out != sa:
                if out != sb:
                    raise GraphError(
                        f"ONNX {n.op_type} at {self.where(n, i)}: broadcasting both operands "
                        f"({sa}, {sb}) is not supported"
                    )
                if op == "sub":
                    zero = self.g.add_const(f"{n.output[0]}.zero", np.zeros(sb, np.float32))
                    a = self.g.add_node("add", [zero, a], name=f"{n.output[0]}.bcast")
                else:
                    a, b = b, a
            return self.emit(n, op, [a, b])

        return f

    op_Add = _binary("add")
    op_Sub = _binary("sub")
    op_Mul = _binary("mul")

    def op_BatchNormalization(self, n: Any, i: int) -> str:
        a = self.attrs(n, i, {"epsilon": 1e-5, "momentum": 0.9, "training_mode": 0, "spatial": 1, "is_test": 1})
        if a["training_mode"]:
            raise self.bad(n, i, "training_mode", a["training_mode"], "only inference")
        if a["spatial"] != 1:
            raise self.bad(n, i, "spatial", a["spatial"])
        return self.emit(n, "batch_norm", [self.value(v) for v in n.input[:5]], epsilon=float(a["epsilon"]))

    def _pool(self, n: Any, i: int, op: str) -> str:
        allowed = {
            "auto_pad": "NOTSET",
            "ceil_mode": 0,
            "dilations": None,
            "kernel_shape": None,
            "pads": None,
            "strides": None,
        }
        if op == "max_pool2d":
            allowed["storage_order"] = 0
        else:
            allowed["count_include_pad"] = 0
        a = self.attrs(n, i, allowed)
        x = self.value(n.input[0])
        xt = self.g.type_of(x)
        if a["kernel_shape"] is None or len(a["kernel_shape"]) != 2 or len(xt.shape) != 4:
            raise GraphError(f"ONNX {n.op_type} at {self.where(n, i)}: only 2-D pooling with kernel_shape is supported")
        if a["dilations"] is not None and tuple(a["dilations"]) != (1, 1):
            raise self.bad(n, i, "dilations", a["dilations"])
        if a.get("storage_order", 0):
            raise self.bad(n, i, "storage_order", a["storage_order"])
        k, s = tuple(a["kernel_shape"]), tuple(a["strides"] or (1, 1))
        pt, pl, pb, pr = self.pads2d(n, i, a, xt.shape[2:], k, s, (1, 1))
        if a["ceil_mode"]:
            if op != "max_pool2d":
                raise self.bad(n, i, "ceil_mode", a["ceil_mode"], "supported for MaxPool only")
            ext = []
            for size, kk, ss, lo, hi in ((xt.shape[2], k[0], s[0], pt, pb), (xt.shape[3], k[1], s[1], pl, pr)):
                span = size + lo + hi - kk
                out = -(-span // ss) + 1
                if (out - 1) * ss >= size + lo:  # ONNX drops a window starting in the end padding
                    out -= 1
                ext.append(max(0, (out - 1) * ss + kk - (size + lo + hi)))
            pb, pr = pb + ext[0], pr + ext[1]
        if len(n.output) > 1 and n.output[1]:
            raise GraphError(f"ONNX MaxPool at {self.where(n, i)}: the Indices output is not supported")
        kw: dict[str, Any] = {"kernel": k, "strides": s, "padding": (pt, pl, pb, pr)}
        if op == "avg_pool2d":
            kw["count_include_pad"] = bool(a["count_include_pad"])
        return self.emit(n, op, [x], **kw)

    def op_MaxPool(self, n: Any, i: int) -> str:
        return self._pool(n, i, "max_pool2d")

    def op_AveragePool(self, n: Any, i: int) -> str:
        return self._pool(n, i, "avg_pool2d")

    def op_GlobalAveragePool(self, n: Any, i: int) -> str:
        self.attrs(n, i, {})
        return self.emit(n, "global_avg_pool2d", [self.value(n.input[0])])

    def op_Flatten(self, n: Any, i: int) -> str:
        a = self.attrs(n, i, {"axis": 1})
        return self.emit(n, "flatten", [self.value(n.input[0])], axis=a["axis"])

    def op_Reshape(self, n: Any, i: int) -> str:
        a = self.attrs(n, i, {"allowzero": 0})
        shape = self.need_const(n, i, 1, "the target shape")
        x = self.value(n.input[0])
        if a["allowzero"] and 0 in shape.tolist():
            raise self.bad(n, i, "allowzero", a["allowzero"])
        try:
            target = reshape_target(self.g.type_of(x).shape, [int(s) for s in shape.reshape(-1)])
        except GraphError as e:
            raise GraphError(f"ONNX Reshape at {self.where(n, i)}: {e}") from None
        return self.emit(n, "reshape", [x], shape=target)

    def op_Concat(self, n: Any, i: int) -> str:
        a = self.attrs(n, i, {"axis": None})
        if a["axis"] is None:
            raise GraphError(f"ONNX Concat at {self.where(n, i)}: attribute axis is required")
        return self.emit(n, "concat", [self.value(v) for v in n.input], axis=a["axis"])

    def op_Softmax(self, n: Any, i: int) -> str:
        a = self.attrs(n, i, {"axis": -1 if self.opset >= 13 else 1})
        x = self.value(n.input[0])
        rank = len(self.g.type_of(x).shape)
        axis = a["axis"] % rank if -rank <= a["axis"] < rank else a["axis"]
        if self.opset < 13 and axis != rank - 1:
            raise self.bad(n, i, "axis", a["axis"], "opset < 13 flattens; only the last axis is supported")
        return self.emit(n, "softmax", [x], axis=axis)

    def _qparams(self, n: Any, i: int, default_dtype: str) -> tuple[float, int, str]:
        scale = self.need_const(n, i, 1, "the scale")
        if scale.size != 1:
            raise GraphError(
                f"ONNX {n.op_type} at {self.where(n, i)}: per-axis quantisation (scale shape "
                f"{scale.shape}) is not supported; use per-tensor scales"
            )
        zp = self.need_const(n, i, 2, "the zero point") if len(n.input) > 2 and n.input[2] else None
        if zp is not None and zp.size != 1:
            raise GraphError(f"ONNX {n.op_type} at {self.where(n, i)}: per-axis zero points are not supported")
        dtype = str(zp.dtype) if zp is not None else default_dtype
        return float(scale.reshape(-1)[0]), int(zp.reshape(-1)[0]) if zp is not None else 0, dtype

    def op_QuantizeLinear(self, n: Any, i: int) -> str:
        a = self.attrs(n, i, {"axis": 1, "saturate": 1, "block_size": 0, "output_dtype": 0})
        if a["block_size"]:
            raise self.bad(n, i, "block_size", a["block_size"])
        if a["output_dtype"]:
            raise self.bad(n, i, "output_dtype", a["output_dtype"])
        scale, zp, dtype = self._qparams(n, i, "uint8")
        if dtype not in ("int8", "uint8"):
            raise GraphError(f"ONNX QuantizeLinear at {self.where(n, i)}: output type {dtype} is not supported")
        return self.emit(n, "quantize", [self.value(n.input[0])], scale=scale, zero_point=zp, dtype=dtype)

    def op_DequantizeLinear(self, n: Any, i: int) -> str:
        a = self.attrs(n, i, {"axis": 1, "block_size": 0})
        if a["block_size"]:
            raise self.bad(n, i, "block_size", a["block_size"])
        scale, zp, _ = self._qparams(n, i, "uint8")
        return self.emit(n, "dequantize", [self.value(n.input[0])], scale=scale, zero_point=zp)

    def op_Constant(self, n: Any, i: int) -> str:
        a = self.attrs(
            n, i, {"value": None, "value_float": None, "value_floats": None, "value_int": None, "value_ints": None}
        )
        if a["value"] is not None:
            v = self.nph.to_array(a["value"])
        elif a["value_float"] is not None:
            v = np.array(a["value_float"], np.float32)
        elif a["value_floats"] is not None:
            v = np.array(a["value_floats"], np.float32)
        elif a["value_int"] is not None:
            v = np.array(a["value_int"], np.int64)
        elif a["value_ints"] is not None:
            v = np.array(a["value_ints"], np.int64)
        else:
            raise GraphError(f"ONNX Constant at {self.where(n, i)}: no value attribute")
        self.known[n.output[0]] = v
        return ""

    def op_Identity(self, n: Any, i: int) -> str:
        self.attrs(n, i, {})
        if n.input[0] in self.known and n.input[0] not in self.env:
            self.known[n.output[0]] = self.known[n.input[0]]
            return ""
        self.env[n.output[0]] = self.value(n.input[0])
        return ""

    def op_Dropout(self, n: Any, i: int) -> str:
        a = self.attrs(n, i, {"ratio": 0.5, "seed": 0, "is_test": 1})
        del a
        if len(n.input) > 2 and n.input[2]:
            t = self.const(n.input[2])
            if t is None or bool(t.reshape(-1)[0]):
                raise GraphError(f"ONNX Dropout at {self.where(n, i)}: training_mode must be a constant false")
        if len(n.output) > 1 and n.output[1]:
            raise GraphError(f"ONNX Dropout at {self.where(n, i)}: the mask output is not supported")
        self.env[n.output[0]] = self.value(n.input[0])
        return ""

    # -- driver ---------------------------------------------------------------------
    def run(self) -> Graph:
        og = self.model.graph
        for idx, n in enumerate(og.node):
            if n.domain not in ("", "ai.onnx"):
                raise GraphError(f"unsupported ONNX operator {n.domain}.{n.op_type} at {self.where(n, idx)}")
            fn = getattr(self, f"op_{n.op_type}", None)
            if fn is None:
                raise GraphError(
                    f"unsupported ONNX operator {n.op_type} at {self.where(n, idx)}; supported: "
                    f"{', '.join(SUPPORTED_OPS)}"
                )
            if n.op_type not in ("MaxPool", "Dropout", "BatchNormalization"):
                extra = [o for o in n.output[1:] if o]
                if extra:
                    raise GraphError(
                        f"ONNX {n.op_type} at {self.where(n, idx)}: extra outputs {extra} are not supported"
                    )
            if n.op_type == "BatchNormalization" and any(n.output[1:]):
                raise GraphError(f"ONNX BatchNormalization at {self.where(n, idx)}: training outputs are not supported")
            out = fn(n, idx)
            if out:
                self.env[n.output[0]] = out
        outs = []
        for o in og.output:
            if o.name in self.env:
                outs.append(self.env[o.name])
            elif o.name in self.known:
                outs.append(self.value(o.name))
            else:
                raise GraphError(f"model output {o.name!r} is not computed by any node")
        self.g.outputs = outs
        return self.g.infer_types()


SUPPORTED_OPS = sorted(k[3:] for k in vars(_Importer) if k.startswith("op_"))


def from_onnx(model: Any, shapes: Mapping[str, Sequence[int]] | None = None) -> Graph:
    """Import an ``onnx.ModelProto`` (or a path to a .onnx file)."""
    onnx = _onnx()
    if isinstance(model, (str, Path)):
        path = model
        try:
            model = onnx.load(str(path))
        except OSError:
            raise
        except Exception as e:  # protobuf's DecodeError, a truncated file's RuntimeError ...
            raise GraphError(f"{path}: not a valid ONNX model (truncated, or another format?): {e}") from None
        if not model.graph.node and not model.graph.output:  # protobuf parses some garbage as an empty model
            raise GraphError(f"{path}: not a valid ONNX model (truncated, or another format?): it has no graph")
    if not isinstance(model, onnx.ModelProto):
        raise GraphError(f"from_onnx needs an onnx.ModelProto or a path, got {type(model).__name__}")
    return _Importer(model, shapes).run()


def load_onnx(path: str | Path, shapes: Mapping[str, Sequence[int]] | None = None) -> Graph:
    return from_onnx(Path(path), shapes)
