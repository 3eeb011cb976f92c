"""Where, the comparisons and logic, ScatterND, Resize and Upsample imported from onnx.helper
models and run on the numpy reference, against onnxruntime at the opsets that changed them.
Seeds are the case index."""

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

F32, I64 = np.float32, np.int64


@dataclass
class Case:
    name: str
    opsets: tuple[int, ...]
    nodes: list[tuple[str, list[str], list[str], dict[str, Any]]]  # (op, inputs, outputs, attrs)
    inputs: dict[str, Any] = field(default_factory=lambda: {"x": (2, 3, 4, 5)})
    inits: dict[str, np.ndarray] = field(default_factory=dict)
    outputs: tuple[str, ...] = ("y",)
    ops: tuple[str, ...] | None = None  # the graph ops the import must produce (None: not checked)
    ints: bool = False  # round the float inputs (equality tests)

    def build(self, opset: int) -> Any:
        nodes = [helper.make_node(op, ins, outs, name=f"n{k}", **at) for k, (op, ins, outs, at) in enumerate(self.nodes)]
        return model(nodes, self.inputs, opset, self.outputs, self.inits)


def _resize(attrs: dict, inits: dict, shape=(1, 2, 4, 5), opsets=(11, 13, 18, 19), name="", roi=True) -> Case:
    init = dict(inits)
    if roi:  # opsets 11 and 12 need roi and scales (empty when sizes are given)
        init["roi"] = np.zeros(0, F32)
        init.setdefault("scales", np.zeros(0, F32))
    ins = ["x", "roi" if roi else "", "scales" if "scales" in init else "", "sizes" if "sizes" in init else ""]
    while ins[-1] == "":
        ins.pop()
    return Case(f"Resize-{name}", opsets, [("Resize", ins, ["y"], attrs)], {"x": shape}, init, ops=("resize",))


def _s(*v):
    return np.array(v, F32)


def _i(*v):
    return np.array(v, I64)


NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
COORDS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn")

CASES: list[Case] = [
    # Where with a run-time condition (the comparison a masked_fill exports) and with a constant one
    Case("Where-runtime", (9, 16), [("Less", ["x", "z"], ["c"], {}), ("Where", ["c", "x", "k"], ["y"], {})],
         {"x": (2, 3, 4), "z": (3, 1)}, {"k": np.array(-100.0, F32)}, ops=("less", "where")),
    Case("Where-const_cond", (9, 16), [("Where", ["c", "a", "x"], ["y"], {})], {"x": (2, 3, 4)},
         {"c": np.random.default_rng(0).random((3, 1)) > 0.5, "a": _s(1.5, 2.5, 3.5, 4.5)}, ops=("where",)),
    Case("Equal-float", (11, 13, 19), [("Equal", ["x", "z"], ["y"], {})], {"x": (2, 3, 4), "z": (4,)}, ints=True),
    Case("Equal-int", (7, 13), [("Equal", ["x", "z"], ["y"], {})],
         {"x": np.array([[1, 2, 3], [3, 2, 1]], I64), "z": np.array([3, 2, 2], I64)}),
    Case("Less", (7, 9, 13), [("Less", ["x", "k"], ["y"], {})], {"x": (2, 3, 4)}, {"k": np.array(0.2, F32)}),
    Case("Greater", (7, 9, 13), [("Greater", ["x", "z"], ["y"], {})], {"x": (2, 3, 4), "z": (2, 1, 4)}),
    Case("LessOrEqual", (12, 16), [("LessOrEqual", ["x", "z"], ["y"], {})], {"x": (3, 4), "z": (4,)}, ints=True),
    Case("GreaterOrEqual", (12, 16), [("GreaterOrEqual", ["x", "z"], ["y"], {})], {"x": (3, 4), "z": (4,)}, ints=True),
    Case("Not-And-Or", (7, 13), [("Less", ["x", "k"], ["a"], {}), ("Greater", ["x", "z"], ["b"], {}),
                                 ("Not", ["a"], ["na"], {}), ("And", ["na", "b"], ["c"], {}),
                                 ("Or", ["c", "a"], ["d"], {}), ("Cast", ["d"], ["y"], {"to": 1})],
         {"x": (2, 3, 4), "z": (4,)}, {"k": np.array(-0.3, F32)}),
    # ScatterND: Swin's attention-mask build (data, int64 index tuples, updates), run-time indices too
    Case("ScatterND-rows", (11, 13, 16, 18), [("ScatterND", ["x", "i", "u"], ["y"], {})],
         {"x": (4, 5, 3), "u": (2, 5, 3)}, {"i": _i([2], [0])}, ops=("scatter_nd",)),
    Case("ScatterND-elements", (11, 18), [("ScatterND", ["x", "i", "u"], ["y"], {})],
         {"x": (4, 5, 3), "u": (2, 2)}, {"i": _i([[0, 1, 2], [3, 4, 0]], [[1, 1, 1], [2, 3, 2]])}),
    Case("ScatterND-runtime_indices", (13,), [("ScatterND", ["x", "i", "u"], ["y"], {})],
         {"x": (4, 5), "i": np.array([[3, 1], [0, 4], [2, 2]], I64), "u": (3,)}),
    Case("ScatterND-const_data", (13,), [("ScatterND", ["d", "i", "x"], ["y"], {})],
         {"x": (2, 2)}, {"d": np.zeros((3, 2), F32), "i": _i([2], [0])}),
    # Resize-10 and Upsample: asymmetric coordinates, Upsample's nearest rule
    Case("Resize10-nearest", (10,), [("Resize", ["x", "s"], ["y"], {"mode": "nearest"})], {"x": (1, 2, 3, 4)},
         {"s": _s(1, 1, 2, 1.5)}),
    Case("Resize10-linear", (10,), [("Resize", ["x", "s"], ["y"], {"mode": "linear"})], {"x": (1, 2, 3, 4)},
         {"s": _s(1, 1, 2.5, 2)}),
    Case("Resize10-nearest-down", (10,), [("Resize", ["x", "s"], ["y"], {"mode": "nearest"})], {"x": (1, 2, 6, 7)},
         {"s": _s(1, 1, 0.5, 0.6)}),
    Case("Upsample7", (7,), [("Upsample", ["x"], ["y"], {"mode": "nearest", "scales": [1.0, 1.0, 2.0, 3.0]})],
         {"x": (1, 2, 3, 4)}),
    Case("Upsample9-linear", (9,), [("Upsample", ["x", "s"], ["y"], {"mode": "linear"})], {"x": (1, 2, 3, 4)},
         {"s": _s(1, 1, 2, 2)}),
    # what torch.onnx writes for F.interpolate: nearest (asymmetric, floor) and bilinear (half_pixel,
    # align_corners, pytorch_half_pixel)
    _resize({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
            {"scales": _s(1, 1, 2, 2)}, name="torch_nearest"),
    _resize({"mode": "linear", "coordinate_transformation_mode": "half_pixel"}, {"scales": _s(1, 1, 2, 2)},
            name="torch_bilinear"),
    _resize({"mode": "linear", "coordinate_transformation_mode": "align_corners"},
            {"sizes": _i(1, 2, 7, 9)}, name="align_corners_sizes"),
    _resize({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
            {"sizes": _i(1, 2, 1, 9)}, name="pytorch_half_pixel_to_1"),
    _resize({"mode": "linear", "coordinate_transformation_mode": "half_pixel"}, {"sizes": _i(1, 2, 3, 3)},
            name="linear_down"),
    _resize({"mode": "linear", "coordinate_transformation_mode": "asymmetric"}, {"scales": _s(1, 1, 1.5, 0.75)},
            name="linear_asymmetric"),
    _resize({"mode": "linear"}, {"scales": _s(1.0, 1.0, 2.0)}, shape=(2, 3, 5), name="linear_1d"),
    _resize({"mode": "linear"}, {"scales": _s(1.0, 1.0, 2.0, 1.5, 0.5)}, shape=(1, 2, 3, 4, 6), opsets=(13,),
            name="trilinear"),
    *[_resize({"mode": "nearest", "coordinate_transformation_mode": c, "nearest_mode": m},
              {"sizes": _i(1, 2, 7, 3)}, opsets=(13,), name=f"nearest_{c}_{m}")
      for c in COORDS for m in NEAREST_MODES],
    *[_resize({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": m},
              {"scales": _s(1, 1, 2, 2)}, opsets=(13,), name=f"nearest_ties_{m}") for m in NEAREST_MODES],
    _resize({"mode": "nearest"}, {"scales": _s(1, 1, 3, 2.5)}, opsets=(11,), name="nearest_scales"),
    _resize({"mode": "nearest", "coordinate_transformation_mode": "half_pixel_symmetric"},
            {"sizes": _i(1, 2, 6, 7)}, opsets=(19,), name="half_pixel_symmetric"),
    _resize({"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
            {"scales": _s(1, 1, 1.7, 0.6)}, opsets=(19,), name="linear_half_pixel_symmetric"),
    _resize({"mode": "linear", "axes": [2, 3]}, {"scales": _s(2, 2)}, opsets=(18, 19), name="axes"),
    _resize({"mode": "nearest", "axes": [-1]}, {"sizes": _i(9)}, opsets=(18,), name="axes_sizes"),
    _resize({"mode": "linear"}, {"scales": _s(1, 1, 2, 2)}, opsets=(13, 18), name="no_roi", roi=False),
]


def _params():
    for k, c in enumerate(CASES):
        for opset in c.opsets:
            yield pytest.param(c, opset, k, id=f"{c.name}-opset{opset}")


@pytest.mark.parametrize("case, opset, seed", list(_params()))
def test_matches_onnxruntime(case: Case, opset: int, seed: int) -> None:
    print(f"seed {seed}")
    m = case.build(opset)
    feeds = feeds_for(case.inputs, seed)
    if case.ints:
        feeds = {k: np.round(v) if v.dtype == F32 else v for k, v in feeds.items()}
    want, source = reference(m, feeds)
    assert source == "onnxruntime"
    g = from_onnx(m)
    if case.ops is not None:
        assert [n.op for n in g.nodes] == list(case.ops), str(g)
    got = run(g, {k: v.astype(g.inputs[k].dtype) for k, v in feeds.items()})  # int64 inputs are read as int32
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        b = np.asarray(b)
        assert a.shape == b.shape, f"seed {seed}: shape {a.shape} vs {b.shape}"
        if b.dtype == np.bool_:
            assert a.dtype == np.uint8
            np.testing.assert_array_equal(a, b.astype(np.uint8))
        else:
            np.testing.assert_allclose(a, b.astype(np.float32), rtol=2e-5, atol=2e-5, err_msg=f"seed {seed}")


@pytest.mark.parametrize(("attrs", "why"), [
    ({"mode": "cubic"}, "mode"),
    ({"coordinate_transformation_mode": "tf_crop_and_resize"}, "regions of interest"),
])
def test_resize_refusals_name_the_attribute(attrs: dict, why: str) -> None:
    from vdla.compiler.graph.ir import GraphError

    m = _resize(attrs, {"scales": _s(1, 1, 2, 2)}).build(13)
    with pytest.raises(GraphError, match=why):
        from_onnx(m)


def test_scatter_nd_on_constants_folds() -> None:
    """Swin's mask: ScatterND on known arrays is evaluated at import (no graph node)."""
    d = np.zeros((1, 4, 4, 1), F32)
    nodes = [helper.make_node("ScatterND", ["d", "i", "u"], ["m"]), helper.make_node("Add", ["x", "m"], ["y"])]
    i = np.array([[[[0, 2, 2, 0], [0, 2, 3, 0]], [[0, 3, 2, 0], [0, 3, 3, 0]]]], I64)
    u = np.full((1, 2, 2), 3.0, F32)
    m = model(nodes, {"x": (1, 4, 4, 1)}, 13, ("y",), {"d": d, "i": i, "u": u})
    g = from_onnx(m)
    assert [n.op for n in g.nodes] == ["add"]
    x = feeds_for({"x": (1, 4, 4, 1)}, 0)
    np.testing.assert_allclose(run(g, x)[0], reference(m, x)[0][0], rtol=1e-6)
