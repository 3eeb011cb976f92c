"""Per-operator conformance: one-node ONNX models built with onnx.helper, imported and run on
the numpy reference, compared with onnxruntime at each opset that changed the operator
(attribute forms of old opsets, input forms of new ones). Seeds are the case index."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import helper  # noqa: E402
from support.onnx_models import feeds_for, model, reference  # noqa: E402

from vdla.compiler.graph import run  # noqa: E402
from vdla.compiler.graph.onnx_import import from_onnx  # noqa: E402

X4 = (2, 3, 5, 6)
I64 = np.int64
F32 = np.float32


@dataclass
class Case:
    op: str
    opsets: tuple[int, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=lambda: {"x": X4})
    inits: dict[str, np.ndarray] = field(default_factory=dict)
    outputs: tuple[str, ...] = ("y",)
    tag: str = ""
    positive: bool = False  # feed |x| + 0.1 (log, sqrt, pow)
    ops: tuple[str, ...] | None = None  # the graph ops the import must produce (None: not checked)
    node_inputs: tuple[str, ...] | None = None  # default: inputs then inits, in order
    graph_outputs: tuple[str, ...] | None = None  # default: the node's outputs

    def build(self, opset: int):
        ins = list(self.node_inputs) if self.node_inputs is not None else [*self.inputs, *self.inits]
        node = helper.make_node(self.op, ins, list(self.outputs), name=f"{self.op.lower()}_node", **self.attrs)
        return model([node], self.inputs, opset, self.graph_outputs or self.outputs, self.inits)


def _w(*shape, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 0.5).astype(F32)


def _i(*v):
    return np.array(v, I64)


UNARY_6_13 = ["Neg", "Abs", "Exp", "Floor", "Ceil", "Reciprocal", "Sigmoid", "Tanh", "Relu"]
CASES: list[Case] = [Case(op, (6, 13)) for op in UNARY_6_13] + [
    Case("Log", (6, 13), positive=True),
    Case("Sqrt", (6, 13), positive=True),
    Case("Sign", (9, 13)),
    Case("Relu", (14,)),
    Case("LeakyRelu", (6, 16), {"alpha": 0.2}),
    Case("Elu", (6,), {"alpha": 0.7}),
    Case("Selu", (6,)),
    Case("Selu", (6,), {"alpha": 1.5, "gamma": 2.0}, tag="attrs"),
    Case("Softplus", (7,)),
    Case("Softsign", (7,)),
    Case("HardSigmoid", (6,), {"alpha": 0.3, "beta": 0.4}),
    Case("HardSwish", (14,)),
    Case("Erf", (9, 13)),
    Case("Gelu", (20,)),
    Case("Gelu", (20,), {"approximate": "tanh"}, tag="tanh"),
    Case("Celu", (12,), {"alpha": 0.5}),
    Case("ThresholdedRelu", (10,), {"alpha": 0.3}),
    Case("Mish", (18,)),
    Case("Shrink", (9,), {"lambd": 0.4, "bias": 0.1}),
    Case("PRelu", (7, 9, 16), inits={"s": _w(3, 1, 1)}),
    Case("PRelu", (9, 16), inputs={"x": X4, "s": (1, 1, 6)}, tag="slope_input"),
    Case("PRelu", (6,), inits={"s": _w(3)}, tag="per_channel_legacy"),
    Case("Clip", (6,), {"min": -0.5, "max": 0.7}),
    Case("Clip", (6,), {"max": 0.3}, tag="max_only"),
    Case("Clip", (11, 12, 13), inits={"lo": np.array(-0.4, F32), "hi": np.array(0.6, F32)}),
    Case("Clip", (13,), inits={"lo": np.array(-0.4, F32)}, tag="min_only"),
    Case("Add", (7, 13, 14), inits={"b": _w(3, 1, 1)}),
    Case("Sub", (7, 13, 14), inputs={"x": (3, 1, 6), "z": X4}, tag="both_broadcast_first"),
    Case("Mul", (7, 14), inputs={"x": (5, 1), "z": (1, 6)}, tag="two_way"),
    Case("Div", (7, 13, 14), inits={"b": np.abs(_w(6)) + 0.5}),
    Case("Div", (14,), inputs={"x": (1, 6), "z": (4, 1)}, tag="two_way"),
    Case("Pow", (7, 12, 13, 15), inits={"e": np.array(2.0, F32)}, positive=True),
    Case("Pow", (15,), inits={"e": np.array(3, I64)}, tag="int_exponent"),
    Case("Pow", (13,), inputs={"x": X4, "e": (6,)}, positive=True, tag="tensor_exponent"),
    Case("Sum", (6, 8, 13), inputs={"a": X4, "b": (3, 1, 6), "c": X4}, ops=("add", "add")),
    Case("Sum", (13,), inputs={"a": X4}, tag="one_input"),
    Case("Mean", (6, 8, 13), inputs={"a": X4, "b": X4, "c": (6,)}),
    Case("Max", (6, 8, 12, 13), inputs={"a": X4, "b": (5, 6)}),
    Case("Min", (6, 8, 12, 13), inputs={"a": (3, 1, 1), "b": X4, "c": X4}),
    Case("Softmax", (6, 11, 13), {"axis": 1}, tag="axis1"),
    Case("Softmax", (6, 11), tag="default_axis"),
    Case("Softmax", (13,), {"axis": -2}, tag="neg_axis"),
    Case("LogSoftmax", (6, 11, 13), {"axis": 2}, tag="axis2"),
    Case("LogSoftmax", (13,), tag="default_axis"),
    Case("Transpose", (6, 13), {"perm": [0, 2, 3, 1]}),
    Case("Transpose", (13,), tag="reverse"),
    Case("Pad", (6,), {"pads": [0, 0, 1, 2, 0, 0, 2, 1], "value": 1.5}, tag="constant"),
    Case("Pad", (6,), {"pads": [0, 0, 1, 2, 0, 0, 2, 1], "mode": "reflect"}, tag="reflect"),
    Case("Pad", (6,), {"pads": [0, 0, 1, 2, 0, 0, 2, 1], "mode": "edge"}, tag="edge"),
    Case("Pad", (11, 13), {"mode": "reflect"}, inits={"p": _i(0, 0, 2, 1, 0, 0, 1, 2)}, tag="reflect"),
    Case("Pad", (11, 13), inits={"p": _i(0, 1, 1, 0, 0, 0, -1, 2), "v": np.array(-2.0, F32)}, tag="value_crop"),
    Case("Pad", (18, 19), {"mode": "edge"}, inits={"p": _i(1, 2, 3, 0), "v": np.array(0.0, F32), "ax": _i(2, -1)},
         tag="axes"),
    Case("Slice", (6,), {"starts": [1, 0], "ends": [4, -1], "axes": [2, 3]}, tag="attrs"),
    Case("Slice", (10, 11, 13), inits={"s": _i(1, -2), "e": _i(100, 0), "a": _i(3, 2), "st": _i(2, -1)}),
    Case("Slice", (13,), inits={"s": _i(-1), "e": _i(-10**18), "a": _i(1), "st": _i(-1)}, tag="reverse"),
    Case("Split", (6, 11), {"axis": 3, "split": [1, 2, 3]}, outputs=("y0", "y1", "y2"), tag="attr"),
    Case("Split", (13,), {"axis": 3}, inits={"sp": _i(2, 4)}, outputs=("y0", "y1"), tag="input"),
    Case("Split", (13,), {"axis": 1}, outputs=("y0", "y1", "y2"), tag="equal"),
    Case("Split", (18,), {"axis": 2, "num_outputs": 2}, outputs=("y0", "y1"), tag="num_outputs"),
    Case("Squeeze", (6, 11), {"axes": [0]}, inputs={"x": (1, 3, 1, 4)}),
    Case("Squeeze", (13,), inputs={"x": (1, 3, 1, 4)}, inits={"a": _i(-2)}, tag="input"),
    Case("Squeeze", (13,), inputs={"x": (1, 3, 1, 4)}, tag="all"),
    Case("Unsqueeze", (6, 11), {"axes": [0, -1]}),
    Case("Unsqueeze", (13,), inits={"a": _i(1, 3)}, tag="input"),
    Case("Gather", (6, 11, 13), {"axis": 1}, inits={"i": _i(2, 0, -1)}, ops=("take",)),
    Case("Gather", (13,), {"axis": -1}, inits={"i": np.array(3, I64)}, tag="scalar_index"),
    Case("Gather", (6, 13), inputs={"emb": (10, 4), "idx": np.array([[1, 3], [9, -1]], I64)}, tag="runtime_indices",
         ops=("gather",)),
    Case("Expand", (8, 13), inputs={"x": (3, 1, 1)}, inits={"s": _i(2, 1, 4, 5)}),
    Case("Tile", (6, 13), inits={"r": _i(1, 2, 1, 3)}),
    Case("Cast", (6, 9, 13, 19), {"to": 6}, tag="to_int32"),
    Case("Cast", (13,), {"to": 1}, inputs={"x": np.arange(12, dtype=np.int32).reshape(3, 4)}, tag="to_float"),
    Case("Flatten", (9, 11, 13), {"axis": 2}),
    Case("Flatten", (11,), {"axis": -1}, tag="neg_axis"),
    Case("Reshape", (5, 13, 14), inits={"s": _i(0, -1, 2)}),
    Case("Reshape", (4,), {"shape": [0, -1, 2]}, tag="attr"),
    Case("Identity", (6, 13, 16)),
    Case("Concat", (6, 11, 13), {"axis": -1}, inputs={"a": X4, "b": (2, 3, 5, 2)}),
    Case("Dropout", (7, 10), {"ratio": 0.3}, outputs=("y", "mask"), graph_outputs=("y",), tag="mask"),
    Case("Dropout", (12, 13), inits={"r": np.array(0.2, F32)}, outputs=("y", "mask"), graph_outputs=("y",), tag="mask"),
    Case("Dropout", (7,), tag="no_attrs"),
    Case("ReduceMean", (6, 11, 13), {"axes": [2, 3], "keepdims": 1}),
    Case("ReduceMean", (13,), {"keepdims": 0}, tag="all_axes"),
    Case("ReduceMean", (18,), {"keepdims": 0}, inits={"a": _i(-1)}, tag="input"),
    Case("ReduceSum", (6, 11), {"axes": [1], "keepdims": 0}),
    Case("ReduceSum", (13,), inits={"a": _i(1, 3)}, tag="input"),
    Case("ReduceSum", (13,), {"noop_with_empty_axes": 1}, tag="noop"),
    Case("ReduceMax", (6, 11, 13), {"axes": [-1]}),
    Case("ReduceMax", (18,), inits={"a": _i(0, 2)}, tag="input"),
    Case("ReduceMin", (6, 13), {"axes": [1, 2], "keepdims": 0}),
    Case("ReduceMin", (18,), inits={"a": _i(1)}, tag="input"),
    Case("ArgMax", (6, 11, 13), {"axis": 1}),
    Case("ArgMin", (12, 13), {"axis": -1, "keepdims": 0, "select_last_index": 1},
         inputs={"x": np.array([[1, 0, 0, 3], [2, 2, 5, 2]], F32)}, tag="last_index"),
    Case("LRN", (6, 13), {"size": 3, "alpha": 0.01, "beta": 0.75, "bias": 2.0}, ops=("lrn",)),
    Case("LRN", (13,), {"size": 5}, inputs={"x": (1, 7, 3, 2)}, tag="size5"),
    Case("InstanceNormalization", (6,), {"epsilon": 1e-3}, inits={"s": _w(3), "b": _w(3, seed=1)}),
    Case("LayerNormalization", (17,), {"axis": -2}, inits={"s": _w(5, 6), "b": _w(5, 6, seed=1)}),
    Case("LayerNormalization", (17,), inits={"s": _w(6)}, tag="no_bias"),
    Case("BatchNormalization", (7, 9, 14, 15), {"epsilon": 1e-3},
         inits={"g": _w(3), "b": _w(3, seed=1), "m": _w(3, seed=2), "v": np.abs(_w(3, seed=3)) + 0.5}),
    Case("Gemm", (6,), {"broadcast": 1, "transB": 1},
         inputs={"x": (4, 6)}, inits={"w": _w(5, 6), "c": _w(5)}, tag="legacy_broadcast"),
    Case("Gemm", (7, 9, 11, 13), {"alpha": 0.5, "beta": 2.0, "transA": 1},
         inputs={"x": (6, 4)}, inits={"w": _w(6, 5), "c": _w(4, 5)}, tag="transA_fullC"),
    Case("Gemm", (13,), {"transB": 1}, inputs={"x": (4, 6), "w": (5, 6)}, tag="dynamic_B"),
    Case("Gemm", (13,), {"alpha": 2.0}, inputs={"x": (4, 6), "w": (6, 5), "c": (1, 5)}, tag="dynamic_BC"),
    Case("MatMul", (6, 9, 13), inputs={"x": (2, 3, 4, 6), "w": (2, 3, 6, 5)}, tag="batched", ops=("matmul",)),
    Case("MatMul", (13,), inputs={"x": (3, 4, 6), "w": (1, 6, 5)}, tag="batch_broadcast"),
    Case("MatMul", (13,), inputs={"x": (2, 4, 6)}, inits={"w": _w(6, 5)}, tag="const_rhs",
         ops=("reshape", "dense", "reshape")),
    Case("MatMul", (13,), inputs={"x": (6,), "w": (2, 6, 5)}, tag="vector_lhs"),
    Case("MatMul", (13,), inputs={"x": (4, 6), "w": (6,)}, tag="vector_rhs"),
    Case("MatMul", (13,), inputs={"x": (6,), "w": (6,)}, tag="vector_vector"),
]

CONV = [
    # 1-D, 2-D, 3-D convolutions: dilations, groups, asymmetric pads, auto_pad
    Case("Conv", (6, 11), {"pads": [1, 2], "strides": [2], "dilations": [2]}, inputs={"x": (1, 4, 17)},
         inits={"w": _w(6, 4, 3), "b": _w(6)}, tag="1d", ops=("reshape", "conv2d", "reshape")),
    Case("Conv", (11,), {"auto_pad": "SAME_LOWER", "strides": [2], "group": 2}, inputs={"x": (2, 4, 16)},
         inits={"w": _w(6, 2, 4)}, tag="1d_same_lower_group"),
    Case("Conv", (11,), {"pads": [0, 1, 2, 0], "dilations": [2, 1], "group": 3}, inputs={"x": (1, 6, 9, 8)},
         inits={"w": _w(6, 2, 3, 3)}, tag="2d_asym_dil_group"),
    Case("Conv", (6, 11), {"auto_pad": "SAME_UPPER", "strides": [2, 3]}, inputs={"x": (1, 3, 9, 10)},
         inits={"w": _w(4, 3, 4, 3)}, tag="2d_same_upper"),
    Case("Conv", (11,), {"auto_pad": "VALID", "strides": [1, 2]}, inputs={"x": (1, 3, 7, 7)},
         inits={"w": _w(2, 3, 3, 3)}, tag="2d_valid"),
    Case("Conv", (6, 11), {"pads": [1, 0, 1, 0, 1, 1], "strides": [1, 2, 1], "dilations": [1, 1, 2]},
         inputs={"x": (1, 2, 5, 6, 7)}, inits={"w": _w(3, 2, 3, 2, 3), "b": _w(3)}, tag="3d", ops=("conv_nd",)),
    Case("Conv", (11,), {"auto_pad": "SAME_UPPER", "group": 2}, inputs={"x": (1, 4, 4, 5, 3)},
         inits={"w": _w(4, 2, 2, 3, 2)}, tag="3d_same_group"),
    Case("ConvTranspose", (6, 11), {"strides": [2], "pads": [1, 0], "output_padding": [1]},
         inputs={"x": (1, 4, 7)}, inits={"w": _w(4, 3, 3), "b": _w(3)}, tag="1d"),
    Case("ConvTranspose", (11,), {"strides": [2, 2], "pads": [0, 1, 1, 0], "output_padding": [1, 0]},
         inputs={"x": (1, 4, 5, 5)}, inits={"w": _w(4, 3, 3, 3)}, tag="2d_asym", ops=("conv2d_transpose",)),
    Case("ConvTranspose", (11,), {"strides": [2, 1], "dilations": [2, 2], "group": 2},
         inputs={"x": (1, 4, 5, 5)}, inits={"w": _w(4, 3, 3, 2)}, tag="2d_dil_group", ops=("conv_transpose_nd",)),
    Case("ConvTranspose", (11,), {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
         inputs={"x": (1, 2, 4, 5)}, inits={"w": _w(2, 3, 3, 3)}, tag="2d_same_upper"),
    Case("ConvTranspose", (11,), {"strides": [2, 2], "output_shape": [10, 12]},
         inputs={"x": (1, 2, 4, 5)}, inits={"w": _w(2, 3, 3, 3)}, tag="2d_output_shape"),
    Case("ConvTranspose", (11,), {"strides": [2, 2], "output_shape": [12, 11]},
         inputs={"x": (1, 2, 5, 5)}, inits={"w": _w(2, 3, 3, 3)}, tag="2d_output_shape_grows"),
    Case("ConvTranspose", (11,), {"strides": [2, 2], "auto_pad": "SAME_LOWER"},
         inputs={"x": (1, 2, 5, 5)}, inits={"w": _w(2, 3, 4, 3)}, tag="2d_same_lower"),
    Case("ConvTranspose", (6, 11), {"strides": [1, 2, 2], "pads": [0, 1, 0, 0, 0, 1], "output_padding": [0, 1, 0]},
         inputs={"x": (1, 2, 3, 4, 4)}, inits={"w": _w(2, 2, 2, 3, 3)}, tag="3d"),
    # pooling
    Case("MaxPool", (8, 10, 11, 12), {"kernel_shape": [3], "strides": [2], "pads": [1, 0]}, inputs={"x": (1, 3, 11)},
         tag="1d"),
    Case("MaxPool", (10, 12), {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1}, inputs={"x": (1, 2, 8, 7)},
         tag="2d_ceil", ops=("max_pool2d",)),
    Case("MaxPool", (12,), {"kernel_shape": [2, 2], "dilations": [2, 1], "pads": [1, 0, 0, 1]},
         inputs={"x": (1, 2, 7, 6)}, tag="2d_dilated", ops=("pool_nd",)),
    Case("MaxPool", (8, 12), {"kernel_shape": [2, 2, 2], "auto_pad": "SAME_UPPER", "strides": [2, 2, 2]},
         inputs={"x": (1, 2, 5, 4, 3)}, tag="3d_same"),
    Case("AveragePool", (7, 10, 11, 19), {"kernel_shape": [3], "pads": [1, 1], "count_include_pad": 1},
         inputs={"x": (1, 3, 9)}, tag="1d_include_pad"),
    Case("AveragePool", (10, 11, 19), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 0, 0],
                                       "ceil_mode": 1}, inputs={"x": (1, 2, 8, 8)}, tag="2d_ceil"),
    Case("AveragePool", (10, 19), {"kernel_shape": [2, 3], "strides": [2, 2], "ceil_mode": 1,
                                   "count_include_pad": 1, "pads": [0, 1, 0, 1]},
         inputs={"x": (1, 2, 7, 8)}, tag="2d_ceil_include_pad"),
    Case("AveragePool", (7, 11), {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"}, inputs={"x": (1, 2, 5, 5)},
         tag="2d_same_lower", ops=("avg_pool2d",)),
    Case("AveragePool", (19,), {"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [1, 1, 1, 1]},
         inputs={"x": (1, 2, 7, 7)}, tag="2d_dilated"),
    Case("AveragePool", (7, 11), {"kernel_shape": [2, 2, 2], "strides": [1, 2, 2], "pads": [1, 0, 0, 0, 1, 1]},
         inputs={"x": (1, 2, 4, 5, 5)}, tag="3d"),
    Case("LpPool", (6, 11, 18), {"kernel_shape": [2, 2], "strides": [2, 2], "p": 2}, inputs={"x": (1, 2, 6, 6)},
         tag="2d"),
    Case("LpPool", (11,), {"kernel_shape": [3], "pads": [1, 1], "p": 3}, inputs={"x": (1, 2, 8)}, tag="1d_p3"),
    Case("LpPool", (18,), {"kernel_shape": [2, 2], "strides": [2, 2], "dilations": [2, 1], "ceil_mode": 1},
         inputs={"x": (1, 2, 7, 7)}, tag="2d_dilated_ceil"),
    Case("GlobalAveragePool", (6,), inputs={"x": (1, 3, 4, 5, 2)}, tag="3d"),
    Case("GlobalMaxPool", (6,), inputs={"x": (1, 3, 7)}, tag="1d"),
    Case("GlobalLpPool", (6,), {"p": 2}, tag="2d"),
]


def _params():
    for k, c in enumerate(CASES + CONV):
        for opset in c.opsets:
            yield pytest.param(c, opset, k, id=f"{c.op}{'-' + c.tag if c.tag else ''}-opset{opset}")


@pytest.mark.parametrize("case, opset, seed", list(_params()))
def test_operator_matches_onnxruntime(case: Case, opset: int, seed: int):
    m = case.build(opset)
    feeds = feeds_for(case.inputs, seed)
    if case.positive:
        feeds = {k: np.abs(v) + 0.1 if v.dtype == F32 else v for k, v in feeds.items()}
    want, source = reference(m, feeds)
    g = from_onnx(m)
    if case.ops is not None:
        assert [n.op for n in g.nodes] == list(case.ops), str(g)
    got = run(g, {k: v.astype(g.inputs[k].dtype) for k, v in feeds.items()})  # int64 inputs are read as int32
    assert len(got) == len(want)
    for a, b in zip(got, want):
        b = np.asarray(b)
        if b.dtype == np.bool_:
            np.testing.assert_array_equal(a, b)
            continue
        b = b.astype(np.float32) if b.dtype.kind == "f" else b.astype(np.int32)
        assert a.shape == b.shape, f"seed {seed}: shape {a.shape} vs {source} {b.shape}"
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5, err_msg=f"seed {seed}, reference {source}")
