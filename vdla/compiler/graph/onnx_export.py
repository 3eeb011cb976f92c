"""ONNX export of graph-IR models (float32 graphs and their QuantizeLinear/DequantizeLinear).

``to_onnx(graph)`` returns an ``onnx.ModelProto`` (opset 17); ``save_onnx(graph, path)``
writes it. Constants become initializers. Integer-only and packed operators (shift,
requantize, conv2d_packed ...) and fused nodes have no faithful single ONNX counterpart
and raise a :class:`GraphError` naming the node; export the float graph (before
quantisation/fusion) instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..topi.util import slice_range
from .ir import Graph, GraphError

__all__ = ["to_onnx", "save_onnx", "OPSET"]

OPSET = 17


def _onnx():
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise GraphError("ONNX export needs the onnx package: pip install 'vdla[graph]'") from e
    return onnx


def to_onnx(graph: Graph, opset: int = OPSET) -> Any:
    onnx = _onnx()
    from onnx import TensorProto, helper, numpy_helper

    g = graph.copy().infer_types()
    elem = {
        "float32": TensorProto.FLOAT,
        "int8": TensorProto.INT8,
        "uint8": TensorProto.UINT8,
        "int32": TensorProto.INT32,
    }
    inits: list[Any] = [numpy_helper.from_array(np.asarray(a), name=k) for k, a in g.consts.items()]
    nodes: list[Any] = []
    counter = [0]

    def const(base: str, value: Any) -> str:
        counter[0] += 1
        name = f"{base}__c{counter[0]}"
        inits.append(numpy_helper.from_array(np.asarray(value), name=name))
        return name

    for n in g.topo_order():
        a, op, ins, out = n.attrs, n.op, list(n.inputs), [n.name]
        if op == "conv2d":
            pt, pl, pb, pr = a["padding"]
            kshape = list(g.type_of(ins[1]).shape[2:])
            nodes.append(
                helper.make_node(
                    "Conv",
                    ins,
                    out,
                    name=n.name,
                    kernel_shape=kshape,
                    strides=list(a["strides"]),
                    pads=[pt, pl, pb, pr],
                    dilations=list(a["dilation"]),
                    group=a["groups"],
                )
            )
        elif op == "conv2d_transpose":
            pt, pl, pb, pr = a["padding"]
            kshape = list(g.type_of(ins[1]).shape[2:])
            nodes.append(
                helper.make_node(
                    "ConvTranspose",
                    ins,
                    out,
                    name=n.name,
                    kernel_shape=kshape,
                    strides=list(a["strides"]),
                    pads=[pt, pl, pb, pr],
                    output_padding=list(a["output_padding"]),
                )
            )
        elif op == "dense":
            nodes.append(helper.make_node("Gemm", ins, out, name=n.name, transB=1))
        elif op == "matmul":
            nodes.append(helper.make_node("MatMul", ins, out, name=n.name))
        elif op in ("add", "sub", "mul", "relu", "tanh", "sigmoid"):
            onnx_op = {"add": "Add", "sub": "Sub", "mul": "Mul", "relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid"}[
                op
            ]
            nodes.append(helper.make_node(onnx_op, ins, out, name=n.name))
        elif op == "hard_sigmoid":
            nodes.append(helper.make_node("HardSigmoid", ins, out, name=n.name, alpha=float(a["alpha"]),
                                          beta=float(a["beta"])))
        elif op == "hard_swish":  # opset 14's HardSwish: x * hard_sigmoid(x) with alpha 1/6, beta 1/2
            nodes.append(helper.make_node("HardSwish", ins, out, name=n.name))
        elif op == "clip":
            dt = np.dtype(g.type_of(ins[0]).dtype)
            lo = "" if a["min"] is None else const(n.name, np.array(a["min"], dt))
            hi = "" if a["max"] is None else const(n.name, np.array(a["max"], dt))
            nodes.append(helper.make_node("Clip", [ins[0], lo, hi], out, name=n.name))
        elif op == "batch_norm":
            nodes.append(helper.make_node("BatchNormalization", ins, out, name=n.name, epsilon=a["epsilon"]))
        elif op in ("max_pool2d", "avg_pool2d"):
            kw: dict[str, Any] = {
                "kernel_shape": list(a["kernel"]),
                "strides": list(a["strides"]),
                "pads": list(a["padding"]),
            }
            if op == "avg_pool2d":
                kw["count_include_pad"] = int(a["count_include_pad"])
            nodes.append(
                helper.make_node("MaxPool" if op == "max_pool2d" else "AveragePool", ins, out, name=n.name, **kw)
            )
        elif op == "global_avg_pool2d":
            nodes.append(helper.make_node("GlobalAveragePool", ins, out, name=n.name))
        elif op == "flatten":
            nodes.append(helper.make_node("Flatten", ins, out, name=n.name, axis=a["axis"]))
        elif op == "reshape":
            shp = const(n.name, np.array(n.type.shape, np.int64))  # type: ignore[union-attr]
            nodes.append(helper.make_node("Reshape", [ins[0], shp], out, name=n.name))
        elif op == "concat":
            nodes.append(helper.make_node("Concat", ins, out, name=n.name, axis=a["axis"]))
        elif op == "transpose":
            rank = len(g.type_of(ins[0]).shape)
            perm = list(a["perm"]) if a["perm"] is not None else list(reversed(range(rank)))
            nodes.append(helper.make_node("Transpose", ins, out, name=n.name, perm=perm))
        elif op == "slice":
            # each axis's python slice resolved against its extent; a negative step running
            # through index 0 ends "before the first element", which ONNX spells -(dim + 1)
            dims = g.type_of(ins[0]).shape
            rng = [slice_range(b, e, s, d) for b, e, s, d in zip(a["begin"], a["end"], a["step"], dims)]
            starts = [r.start for r in rng]
            ends = [r.stop if r.stop >= 0 else -(d + 1) for r, d in zip(rng, dims)]
            steps = [r.step for r in rng]
            parts = [const(n.name, np.array(v, np.int64)) for v in (starts, ends, list(range(len(dims))), steps)]
            nodes.append(helper.make_node("Slice", [ins[0], *parts], out, name=n.name))
        elif op == "softmax":
            nodes.append(helper.make_node("Softmax", ins, out, name=n.name, axis=a["axis"]))
        elif op == "cast":
            nodes.append(helper.make_node("Cast", ins, out, name=n.name, to=elem[a["dtype"]]))
        elif op == "quantize":
            s = const(n.name, np.array(a["scale"], np.float32))
            z = const(n.name, np.array(a["zero_point"], a["dtype"]))
            nodes.append(helper.make_node("QuantizeLinear", [ins[0], s, z], out, name=n.name))
        elif op == "dequantize":
            s = const(n.name, np.array(a["scale"], np.float32))
            z = const(n.name, np.array(a["zero_point"], g.type_of(ins[0]).dtype))
            nodes.append(helper.make_node("DequantizeLinear", [ins[0], s, z], out, name=n.name))
        else:
            raise GraphError(
                f"ONNX export: operator {op} of node {n.name!r} has no ONNX equivalent; "
                "export the float graph before quantisation, layout packing and fusion"
            )

    def vi(name: str) -> Any:
        t = g.type_of(name)
        return helper.make_tensor_value_info(name, elem[t.dtype], list(t.shape))

    og = helper.make_graph(nodes, g.name, [vi(k) for k in g.inputs], [vi(o) for o in g.outputs], inits)
    model = helper.make_model(og, opset_imports=[helper.make_opsetid("", opset)], producer_name="vdla")
    model.ir_version = min(model.ir_version, 9)
    onnx.checker.check_model(model)
    return model


def save_onnx(graph: Graph, path: str | Path, opset: int = OPSET) -> Path:
    onnx = _onnx()
    p = Path(path)
    onnx.save(to_onnx(graph, opset), str(p))
    return p
