"""Graphs written the way exporters write them (PyTorch's shape subgraphs, ConstantOfShape,
Dropout with its mask, Softmax at opset < 13, channel shuffles, fire/inception/dense
concatenations, LRN), imported, folded and compared with onnxruntime; a 1-D conv model runs
partly on VDLA, bit-exact against the int8 reference."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from support.onnx_models import model, reference  # noqa: E402

from vdla.compiler.graph import passes, run  # noqa: E402
from vdla.compiler.graph.onnx_import import from_onnx  # noqa: E402

N = helper.make_node


def _w(rng, *shape):
    return (rng.standard_normal(shape) * (2.0 / max(1, int(np.prod(shape[1:])))) ** 0.5).astype(np.float32)


def _i(*v):
    return np.array(v, np.int64)


def view_flatten(src: str, dst: str, p: str) -> list:
    """``x.view(x.size(0), -1)`` as torch.onnx writes it."""
    return [
        N("Shape", [src], [f"{p}_shape"], name=f"{p}/Shape"),
        N("Constant", [], [f"{p}_zero"], name=f"{p}/Constant", value=helper.make_tensor("v", TensorProto.INT64, [], [0])),
        N("Gather", [f"{p}_shape", f"{p}_zero"], [f"{p}_n"], name=f"{p}/Gather", axis=0),
        N("Unsqueeze", [f"{p}_n", f"{p}_ax0"], [f"{p}_n1"], name=f"{p}/Unsqueeze"),
        N("Concat", [f"{p}_n1", f"{p}_m1"], [f"{p}_target"], name=f"{p}/Concat", axis=0),
        N("Reshape", [src, f"{p}_target"], [dst], name=f"{p}/Reshape"),
    ]


def alexnet_like(opset: int):
    """Conv/ReLU/LRN/MaxPool(ceil) features, a channel shuffle, Dropout (with mask) classifier,
    a bias built by ConstantOfShape, the view-flatten shape subgraph and Softmax(axis=1)."""
    rng = np.random.default_rng(opset)
    c = 8
    nodes = [
        N("Pad", ["x", "pads", "pv"], ["xp"], name="pad", mode="reflect"),
        N("Conv", ["xp", "w1", "b1"], ["c1"], name="conv1", strides=[2, 2]),
        N("Relu", ["c1"], ["r1"], name="relu1"),
        N("LRN", ["r1"], ["l1"], name="lrn1", size=5, alpha=1e-3, beta=0.75, bias=2.0),
        N("MaxPool", ["l1"], ["p1"], name="pool1", kernel_shape=[3, 3], strides=[2, 2],
          **({"ceil_mode": 1} if opset >= 10 else {"pads": [0, 0, 1, 1]})),
        # ShuffleNet's channel shuffle: view(n, g, c/g, h, w) -> transpose(1, 2) -> view(n, c, h, w)
        N("Shape", ["p1"], ["p1_shape"], name="shuffle/Shape"),
        N("Gather", ["p1_shape", "idx_hw"], ["hw"], name="shuffle/Gather", axis=0),
        N("Concat", ["ng", "hw"], ["s5"], name="shuffle/Concat5", axis=0),
        N("Reshape", ["p1", "s5"], ["g5"], name="shuffle/Reshape"),
        N("Transpose", ["g5"], ["t5"], name="shuffle/Transpose", perm=[0, 2, 1, 3, 4]),
        N("Concat", ["nc", "hw"], ["s4"], name="shuffle/Concat4", axis=0),
        N("Reshape", ["t5", "s4"], ["sh"], name="shuffle/Reshape2"),
        N("PRelu", ["sh", "slope"], ["pr"], name="prelu"),
        *view_flatten("pr", "flat", "view"),
        N("Dropout", ["flat", "ratio", "train"] if opset >= 12 else ["flat"], ["dr", "dr_mask"], name="drop",
          **({} if opset >= 12 else {"ratio": 0.5})),
        N("ConstantOfShape", ["bshape"], ["zb"], name="zeros",
          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.25])),
        N("Gemm", ["dr", "fw", "zb"], ["logits"], name="fc", transB=1),
        N("Softmax", ["logits"], ["y"], name="softmax", axis=1),
    ]
    flat = c * 4 * 4
    inits = {
        "pads": _i(0, 0, 1, 1, 0, 0, 1, 1), "pv": np.array(0.0, np.float32),
        "w1": _w(rng, c, 3, 3, 3), "b1": _w(rng, c) * 0.1,
        "idx_hw": _i(2, 3), "ng": _i(-1, 2, c // 2), "nc": _i(-1, c),
        "slope": np.full((c, 1, 1), 0.1, np.float32),
        "view_ax0": _i(0), "view_m1": _i(-1),
        "ratio": np.array(0.5, np.float32), "train": np.array(False),
        "bshape": _i(10), "fw": _w(rng, 10, flat),
    }
    if opset < 11:  # Pad's attribute form
        nodes[0] = N("Pad", ["x"], ["xp"], name="pad", mode="reflect", pads=[0, 0, 1, 1, 0, 0, 1, 1])
    if opset < 13:  # Unsqueeze's attribute form
        i = next(k for k, n in enumerate(nodes) if n.op_type == "Unsqueeze")
        nodes[i] = N("Unsqueeze", ["view_n"], ["view_n1"], name="view/Unsqueeze", axes=[0])
    return model(nodes, {"x": (2, 3, 17, 17)}, opset, ("y",), inits, name="alexnet_like")


def fire_inception_dense(opset: int):
    """SqueezeNet's fire (squeeze, two expands, Concat), an inception branch pair with an
    AveragePool(ceil, count_include_pad=0), Split, DenseNet's growing Concat, Sum of three
    branches, ReduceMean over H,W and LogSoftmax."""
    rng = np.random.default_rng(100 + opset)
    nodes = [
        N("Conv", ["x", "sq"], ["s"], name="fire/squeeze"),
        N("Relu", ["s"], ["sr"], name="fire/relu"),
        N("Conv", ["sr", "e1"], ["e1o"], name="fire/expand1x1"),
        N("Conv", ["sr", "e3"], ["e3o"], name="fire/expand3x3", pads=[1, 1, 1, 1]),
        N("Concat", ["e1o", "e3o"], ["fire"], name="fire/concat", axis=1),
        N("AveragePool", ["fire"], ["ap"], name="incep/pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
          ceil_mode=1),
        N("Split", ["ap"], ["a", "b"], name="split", axis=1, **({"split": [4, 8]} if opset < 13 else {})),
        N("Conv", ["a", "da"], ["dao"], name="dense/conv", pads=[1, 1, 1, 1]),
        N("Concat", ["ap", "dao"], ["dense"], name="dense/concat", axis=1),
        N("Conv", ["dense", "t"], ["to"], name="trans/conv"),
        N("Conv", ["b", "t2"], ["bo"], name="b/conv"),
        N("Sum", ["to", "bo", "to"], ["sum"], name="sum"),
        N("ReduceMean", ["sum"], ["gap"], name="gap", axes=[2, 3], keepdims=0),
        N("LogSoftmax", ["gap"], ["y"], name="logsoftmax", axis=1),
    ]
    inits = {"sq": _w(rng, 4, 3, 1, 1), "e1": _w(rng, 6, 4, 1, 1), "e3": _w(rng, 6, 4, 3, 3),
             "da": _w(rng, 4, 4, 3, 3), "t": _w(rng, 6, 16, 1, 1), "t2": _w(rng, 6, 8, 1, 1)}
    if opset >= 13:
        nodes[6] = N("Split", ["ap", "split_sizes"], ["a", "b"], name="split", axis=1)
        inits["split_sizes"] = _i(4, 8)
    if opset >= 18:
        nodes[12] = N("ReduceMean", ["sum", "axes"], ["gap"], name="gap", keepdims=0)
        inits["axes"] = _i(2, 3)
    return model(nodes, {"x": (1, 3, 12, 12)}, opset, ("y",), inits, name="fire_inception_dense")


@pytest.mark.parametrize("build, opset", [(alexnet_like, 9), (alexnet_like, 11), (alexnet_like, 13),
                                          (fire_inception_dense, 11), (fire_inception_dense, 13),
                                          (fire_inception_dense, 18)])
def test_exporter_style_graph_matches_onnxruntime(build, opset):
    m = build(opset)
    x = np.random.default_rng(opset).standard_normal(tuple(d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim)).astype(np.float32)
    want, source = reference(m, {"x": x})
    assert source == "onnxruntime"
    g = from_onnx(m)
    # the shape subgraphs were folded at import: no shape arithmetic is left in the graph
    assert not {"take", "cast"} & set(g.op_counts()), g.op_counts()
    np.testing.assert_allclose(run(g, x)[0], want[0], rtol=1e-4, atol=1e-5)
    s = passes.simplify(g)
    np.testing.assert_allclose(run(s, x)[0], want[0], rtol=1e-4, atol=1e-5)


def test_view_flatten_shape_subgraph_becomes_one_reshape():
    m = alexnet_like(13)
    g = from_onnx(m)
    reshapes = [n for n in g.nodes if n.notes.get("onnx_node") == "view/Reshape"]
    assert len(reshapes) == 1 and reshapes[0].attrs["shape"] == (2, 128)
    assert not any(n.notes.get("onnx_node", "").startswith(("view/Shape", "view/Gather", "zeros")) for n in g.nodes)


def test_double_and_int64_inputs_are_read_as_float32_and_int32():
    nodes = [N("Cast", ["x"], ["xf"], to=TensorProto.FLOAT), N("Cast", ["k"], ["kf"], to=TensorProto.FLOAT),
             N("Mul", ["xf", "kf"], ["y"])]
    x = np.random.default_rng(0).standard_normal((2, 3))
    k = np.array([[1, -2, 3]], np.int64)
    m = model(nodes, {"x": x, "k": k}, 13)
    g = from_onnx(m)
    assert {k: t.dtype for k, t in g.inputs.items()} == {"x": "float32", "k": "int32"}
    want, _ = reference(m, {"x": x, "k": k})
    np.testing.assert_allclose(run(g, {"x": x.astype(np.float32), "k": k.astype(np.int32)})[0], want[0], rtol=1e-6)


def shape_arithmetic(opset: int):
    """Index arithmetic as exporters write it, all computable at import: Range -> Cast ->
    Unsqueeze -> Expand -> Tile position codes, int64 Add/Sub/Mul/Div on Shape outputs,
    Slice/Split/Squeeze of shapes, Where(Equal(...)) and a ConstantOfShape mask."""
    nodes = [
        N("Shape", ["x"], ["s"]),                                     # [2, 6, 4]
        N("Slice", ["s", "one", "three", "zero"], ["s12"]),          # [6, 4]
        N("Split", ["s12"], ["s1", "s2"], axis=0, **({"split": [1, 1]} if opset < 13 else {})),
        N("Squeeze", ["s1", "zero"] if opset >= 13 else ["s1"], ["t"], **({} if opset >= 13 else {"axes": [0]})),
        N("Range", ["zero_s", "t", "one_s"], ["pos"]),                # 0..5
        N("Cast", ["pos"], ["posf"], to=1),
        N("Div", ["posf", "ten"], ["posd"]),
        N("Unsqueeze", ["posd", "ax1"] if opset >= 13 else ["posd"], ["pos2"], **({} if opset >= 13 else {"axes": [1]})),
        N("Expand", ["pos2", "s12"], ["pe"]),                        # (6, 4)
        N("Tile", ["row", "reps"], ["tiled"]),                        # (6, 4) of a (1, 4) row
        N("Mul", ["s1", "s2"], ["prod"]),                            # [24]
        N("Sub", ["prod", "four"], ["m20"]),                         # [20]
        N("Add", ["m20", "four"], ["p24"]),                          # [24]
        N("Div", ["p24", "three"], ["eight"]),                       # [8]
        N("Concat", ["two", "three", "eight"], ["tgt"], axis=0),     # [2, 3, 8]
        N("Equal", ["tgt", "eight"], ["is8"]),
        N("Where", ["is8", "m1", "tgt"], ["tgt2"]),                  # [2, 3, -1]
        N("ConstantOfShape", ["s12"], ["ones"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
        N("Mul", ["pe", "ones"], ["pe1"]),
        N("Add", ["x", "pe1"], ["xp"]),
        N("Add", ["xp", "tiled"], ["xt"]),
        N("Reshape", ["xt", "tgt2"], ["y"]),
    ]
    inits = {"one": _i(1), "three": _i(3), "zero": _i(0), "zero_s": np.array(0, np.int64),
             "one_s": np.array(1, np.int64), "ten": np.array(10.0, np.float32), "ax1": _i(1), "reps": _i(6, 1),
             "row": np.arange(4, dtype=np.float32).reshape(1, 4), "four": _i(4), "two": _i(2), "m1": _i(-1)}
    return model(nodes, {"x": (2, 6, 4)}, opset, ("y",), inits, name="shape_arithmetic")


@pytest.mark.parametrize("opset", [11, 13])
def test_shape_arithmetic_folds_at_import(opset):
    m = shape_arithmetic(opset)
    x = np.random.default_rng(opset).standard_normal((2, 6, 4)).astype(np.float32)
    want, source = reference(m, {"x": x})
    assert source == "onnxruntime"
    g = from_onnx(m)
    # everything but the two data adds and the final reshape was computed at import
    assert [n.op for n in g.nodes] == ["add", "add", "reshape"], str(g)
    assert g.nodes[-1].attrs["shape"] == (2, 3, 8)
    np.testing.assert_allclose(run(g, x)[0], want[0], rtol=1e-6, atol=1e-6)
