"""Bad ONNX input: every refusal is one GraphError naming the node, operator, opset and
attribute (or the file, or the input) - never a protobuf or numpy traceback."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from support.onnx_models import model  # noqa: E402

from vdla.cli import main  # noqa: E402
from vdla.compiler.graph import GraphError  # noqa: E402
from vdla.compiler.graph.onnx_import import SUPPORTED_OPS, from_onnx, load_onnx  # noqa: E402
from vdla.compiler.graph.zoo import parse_shapes  # noqa: E402

N = helper.make_node
X = {"x": (1, 4, 6, 6)}


def one(op, attrs=None, ins=("x",), inits=None, opset=13, outs=("y",), inputs=None):
    return model([N(op, list(ins), list(outs), name="n1", **(attrs or {}))], inputs or X, opset, outs, inits)


BAD = [
    # (model, message regex)
    (one("NonMaxSuppression"), r"unsupported ONNX operator NonMaxSuppression at node 'n1' \(opset 13\); supported: "),
    (model([N("MyOp", ["x"], ["y"], name="n1", domain="com.acme")], X, 13),
     r"unsupported ONNX operator com.acme.MyOp at node 'n1' \(opset 13\)"),
    (one("MaxPool", {"kernel_shape": [2, 2], "storage_order": 1}, opset=12),
     r"MaxPool \(opset 12\) at node 'n1': unsupported attribute storage_order=1"),
    (one("MaxPool", {"kernel_shape": [2, 2], "ceil_mode": 1}, opset=9),
     r"MaxPool \(opset 9\) at node 'n1': attribute 'ceil_mode' is not defined for MaxPool at opset 9"),
    (one("Conv", {"auto_pad": "FOO"}, ("x", "w"), {"w": np.zeros((2, 4, 3, 3), np.float32)}),
     r"Conv \(opset 13\) at node 'n1': unsupported attribute auto_pad='FOO'"),
    (one("Pad", {"mode": "wrap"}, ("x", "p"), {"p": np.zeros(8, np.int64)}, opset=19),
     r"Pad \(opset 19\) at node 'n1': unsupported attribute mode='wrap' \(constant, reflect or edge\)"),
    (one("Reshape", {}, ("x", "x")), r"Reshape \(opset 13\) at node 'n1': the target shape \(input 1\) must be a constant"),
    (one("Gather", {}, ("x", "x")), r"Gather \(opset 13\) at node 'n1': indices float32\[1,4,6,6\] must be integers"),
    (one("Dropout", {}, ("x", "r", "t"), {"r": np.array(0.5, np.float32), "t": np.array(True)}),
     r"Dropout \(opset 13\) at node 'n1': training_mode must be a constant false"),
    (one("BatchNormalization", {"training_mode": 1}, ("x", "s", "s", "s", "s"), {"s": np.ones(4, np.float32)}, 14),
     r"BatchNormalization \(opset 14\) at node 'n1': unsupported attribute training_mode=1 \(only inference\)"),
    (one("Cast", {"to": onnx.TensorProto.STRING}), r"Cast \(opset 13\) at node 'n1': unsupported attribute to='STRING'"),
    (one("Slice", {}, ("x", "s", "e", "a", "st"), {"s": np.array([0]), "e": np.array([2]), "a": np.array([1]),
                                                  "st": np.array([0])}),
     r"Slice \(opset 13\) at node 'n1': a step of 0"),
    (one("Split", {"axis": 1}, outs=("a", "b", "c")),
     r"Split \(opset 13\) at node 'n1': axis extent 4 does not split into 3 equal parts"),
    (one("Add", {}, ("x", "b"), {"b": np.ones((3, 1), np.float32)}),
     r"Add \(opset 13\) at node 'n1': shapes \(1, 4, 6, 6\) and \(3, 1\) do not broadcast"),
    (one("Softmax", {"axis": 4}), r"Softmax \(opset 13\) at node 'n1': unsupported attribute axis=4 \(out of range"),
    (one("MaxPool", {"kernel_shape": [2, 2]}, outs=("y", "idx")),
     r"MaxPool \(opset 13\) at node 'n1': the Indices output is not supported"),
    (one("Mod", {"fmod": 1}, ("x", "z"), {"z": np.ones(1, np.float32)}),
     r"Mod \(opset 13\) at node 'n1': supported only on values computable at import .*input 'x' is computed"),
    (one("Relu", {}, ("x",), inputs={"x": np.zeros((2, 2), np.bool_)}), r"model input 'x' has unsupported element type BOOL"),
]


@pytest.mark.parametrize("m, msg", BAD, ids=[f"{i}" for i in range(len(BAD))])
def test_unsupported_input_is_named(m, msg):
    with pytest.raises(GraphError, match=msg):
        from_onnx(m)


def test_supported_ops_list_covers_the_issue():
    want = """ConstantOfShape Shape Gather Unsqueeze Squeeze Concat Range Cast Expand Tile Reshape Transpose Pad
    Slice Split Sum Mean Max Min Neg Abs Exp Log Sqrt Pow Reciprocal Sign Floor Ceil Sigmoid Tanh LeakyRelu
    PRelu Elu Selu Softplus HardSigmoid HardSwish Clip LRN Softmax LogSoftmax ReduceMean ReduceSum ReduceMax
    ReduceMin InstanceNormalization LayerNormalization Dropout Identity Conv ConvTranspose MaxPool AveragePool
    LpPool Gemm MatMul""".split()
    assert not set(want) - set(SUPPORTED_OPS)


def test_dynamic_dimension_asks_for_shape(tmp_path):
    m = model([N("Relu", ["x"], ["y"])], {}, 13)
    m.graph.input.append(helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 8]))
    with pytest.raises(GraphError, match=r"input 'x' has a dynamic dimension 'batch' \(axis 0\) without a bound; "
                                         r"give its shape with --shape x=d0,d1,"):
        from_onnx(m)
    assert from_onnx(m, shapes={"x": (3, 8)}).inputs["x"].shape == (3, 8)
    assert parse_shapes(["x=3,8", "y=1x2"]) == {"x": (3, 8), "y": (1, 2)}
    for bad in ("x", "x=", "=3", "x=a,b", "x=0,2"):
        with pytest.raises(GraphError, match="expected NAME=d0,d1"):
            parse_shapes([bad])


def test_truncated_and_non_onnx_files_say_so(tmp_path, capsys):
    good = one("Relu", {})
    blob = good.SerializeToString()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(blob[: len(blob) // 2])
    text = tmp_path / "notes.onnx"
    text.write_text("this is not a model\n")
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    for p in (cut, text, empty):
        with pytest.raises(GraphError, match=rf"{p.name}: not (a valid )?(an )?ONNX model"):
            load_onnx(p)
    with pytest.raises(GraphError, match="no such ONNX file"):
        load_onnx(tmp_path / "missing.onnx")
    # the CLI prints one line, no traceback
    assert main(["run", str(cut), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cut.onnx: not a valid ONNX model (truncated or not ONNX" in err
