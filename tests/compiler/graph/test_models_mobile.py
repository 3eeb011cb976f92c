"""The torchvision mobile classifiers of models.py (MobileNet v2, MobileNetV3-Small, ShuffleNet v2 x0.5,
SqueezeNet 1.1, MNASNet 0.5) at a small input: their types infer, the numpy reference agrees with onnxruntime on
the ONNX export, and the graphs have torchvision's layer counts and channel tables."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from vdla.compiler.graph import GraphError, models, run
from vdla.compiler.graph.ir import Graph
from vdla.compiler.graph.zoo import SETTINGS

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from vdla.compiler.graph.onnx_export import to_onnx  # noqa: E402


def ort_run(g: Graph, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(to_onnx(g).SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def structure(g: Graph) -> Counter:
    """Op counts, with depthwise convs (groups == input channels == output channels) and each
    depthwise kernel size counted apart."""
    c = Counter(n.op for n in g.nodes)
    for n in g.nodes:
        if n.op == "conv2d" and n.attrs["groups"] > 1:
            cin, cout = g.type_of(n.inputs[0]).shape[1], n.type.shape[1]
            assert n.attrs["groups"] == cin == cout, n.name
            c["depthwise"] += 1
            c[f"depthwise{g.type_of(n.inputs[1]).shape[2]}"] += 1
    return c


# name, builder kwargs, expected counts, the classifier's input channels (None: no dense layer)
CASES = [
    ("mobilenet_v2", {"input_size": 32},
     {"conv2d": 52, "depthwise": 17, "depthwise3": 17, "batch_norm": 52, "clip": 35, "add": 10, "dense": 1}, 1280),
    ("mobilenet_v2", {"input_size": 32, "width_mult": 0.5, "num_classes": 10},
     {"conv2d": 52, "depthwise": 17, "add": 10}, 1280),
    ("shufflenet_v2", {"input_size": 32},
     {"conv2d": 56, "depthwise": 19, "slice": 26, "concat": 16, "transpose": 16, "reshape": 32, "max_pool2d": 1,
      "relu": 37, "dense": 1}, 1024),
    ("squeezenet1_1", {"input_size": 32},
     {"conv2d": 26, "depthwise": 0, "relu": 26, "concat": 8, "max_pool2d": 3, "batch_norm": 0, "dense": 0}, None),
    # 37: the ceil-mode pools need end padding (18 -> 9 and 4 -> 2)
    ("squeezenet1_1", {"input_size": 37, "num_classes": 10}, {"conv2d": 26, "max_pool2d": 3}, None),
    ("mobilenet_v3_small", {"input_size": 32},
     {"conv2d": 52, "depthwise": 11, "depthwise3": 3, "depthwise5": 8, "hard_swish": 19, "hard_sigmoid": 9, "mul": 9,
      "global_avg_pool2d": 10, "add": 6, "dense": 2}, 1024),
    ("mnasnet0_5", {"input_size": 32},
     {"conv2d": 52, "depthwise": 17, "depthwise3": 7, "depthwise5": 10, "relu": 35, "add": 10, "dense": 1}, 1280),
]


@pytest.mark.parametrize("name, kwargs, counts, features", CASES,
                         ids=[f"{c[0]}-{c[1]['input_size']}-{i}" for i, c in enumerate(CASES)])
def test_mobile_model_structure_and_onnxruntime(name, kwargs, counts, features):
    g = models.get(name, **kwargs)
    g.infer_types()
    classes = kwargs.get("num_classes", 1000)
    assert g.type_of(g.outputs[0]).shape == (1, classes)
    got = structure(g)
    assert {k: got[k] for k in counts} == counts
    if name == "squeezenet1_1":  # the pools' end padding where ceil mode keeps a partial window
        pads = [n.attrs["padding"] for n in g.nodes if n.op == "max_pool2d"]
        assert pads == ([(0, 0, 1, 1), (0, 0, 0, 0), (0, 0, 1, 1)] if kwargs["input_size"] == 37 else [(0, 0, 0, 0)] * 3)
    if features is not None:
        fc = g.node("fc")
        assert g.type_of(fc.inputs[0]).shape == (1, features)
    x = models.sample_input(g, 3)
    ref = run(g, x)[0]
    assert np.isfinite(ref).all() and 0.05 < float(np.abs(ref).max()) < 100  # activations kept in range
    out = ort_run(g, x)[0]
    assert float(np.abs(out - ref).max()) <= 1e-4 * float(np.abs(ref).max())


def test_channel_tables():
    """torchvision's widths: MobileNet v2's stage outputs, ShuffleNet x0.5's stages, MNASNet 0.5's depths."""
    g = models.mobilenet_v2(input_size=32)
    project = [g.node(n.name).type.shape[1] for n in g.nodes if n.name.endswith(".project")]
    assert project == [16, 24, 24, 32, 32, 32, 64, 64, 64, 64, 96, 96, 96, 160, 160, 160, 320]
    g = models.shufflenet_v2(input_size=32)
    assert [g.type_of(f"stage{s}.0.shuffle").shape[1] for s in (2, 3, 4)] == [48, 96, 192]
    assert models._mnasnet_depths(0.5) == [16, 8, 16, 24, 40, 48, 96, 160]
    assert models._mnasnet_depths(1.0) == [32, 16, 24, 40, 80, 96, 192, 320]
    assert models._make_divisible(32 * 0.25) == 8 and models._make_divisible(1280 * 1.4) == 1792


@pytest.mark.parametrize("size", [224, 111, 55, 27, 18, 9, 4])
def test_ceil_mode_pool_shapes(size):
    """The 3x3/2 max pool with end padding gives PyTorch's ceil_mode output size."""
    b = models._Builder("pool", 0)
    x = b.g.add_input("x", (1, 2, size, size))
    y = models._ceil_pool(b, x, "pool")
    want = -(-(size - 3) // 2) + 1
    assert b.g.type_of(y).shape == (1, 2, want, want)


def test_zoo_settings_and_bad_arguments():
    for name in ("mobilenet_v2", "shufflenet_v2", "squeezenet1_1", "mnasnet0_5"):
        st = SETTINGS[name]
        g = models.get(name, **st.reduced)
        assert g.type_of(g.outputs[0]).shape == (1, 10)
    with pytest.raises(GraphError, match="width"):
        models.shufflenet_v2(width="0.7")
    with pytest.raises(GraphError, match="minimum"):
        models.mnasnet0_5(input_size=16)


def test_export_slice_and_transpose():
    """slice (a negative step through index 0, a strided one) and transpose (default and given perm)
    export to ONNX with the numpy semantics."""
    g = Graph("t")
    x = g.add_input("x", (2, 6, 5))
    a = g.add_node("slice", [x], name="a", begin=(1, 5, 0), end=(2, -1, 5), step=(1, -2, 2))
    b = g.add_node("transpose", [a], name="b")
    c = g.add_node("transpose", [x], name="c", perm=(1, 0, 2))
    g.set_outputs(b, c)
    g.infer_types()
    feeds = {"x": np.arange(60, dtype=np.float32).reshape(2, 6, 5)}
    for got, want in zip(ort_run(g, feeds), run(g, feeds)):
        np.testing.assert_array_equal(got, want)
