"""The topi strategy's data-movement, indexing and selection operators on every code-generating
target: slice (and the slices that run as views of their input's memory), pad, take, gather,
expand, argmax/argmin, the comparisons and logic, where, cast, resize and scatter_nd, alone and
in fused chains. Each graph must build with no host step on llvm and cuda (PTX assembled by
ptxas, the loop IR run on the CPU with threads as loops) and agree with the numpy reference."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from support.strategy import SEED
from support.strategy import check_on_every_target as _check_on_every_target

from vdla.compiler.graph.executor import CompiledModel, compile_model
from vdla.compiler.graph.ir import Graph
from vdla.compiler.graph.reference import run as reference_run
from vdla.compiler.graph.strategy import view_offset

X = (2, 3, 5, 7)


def _one(op: str, xshape: tuple[int, ...] = X, **attrs) -> Callable[[], Graph]:
    """``op`` on one input of shape ``xshape``."""
    def build() -> Graph:
        g = Graph(op)
        g.add_input("x", xshape)
        g.set_outputs(g.add_node(op, ["x"], name="y", **attrs))
        return g.infer_types()
    return build


def _chain(shape: tuple[int, ...], *steps: tuple[str, dict]) -> Callable[[], Graph]:
    """A chain of one-input ops (the fusion groups them: injective chains, a reduction after one)."""
    def build() -> Graph:
        g = Graph("chain")
        v = g.add_input("x", shape)
        for k, (op, at) in enumerate(steps):
            v = g.add_node(op, [v], name=f"n{k}", **at)
        g.set_outputs(v)
        return g.infer_types()
    return build


def _graph(fn: Callable[[Graph], str], **inputs: tuple[int, ...] | tuple[tuple[int, ...], str]) -> Callable[[], Graph]:
    def build() -> Graph:
        g = Graph("g")
        for k, v in inputs.items():
            if isinstance(v[0], tuple):
                g.add_input(k, v[0], v[1])
            else:
                g.add_input(k, v)
        g.set_outputs(fn(g))
        return g.infer_types()
    return build


def _i32(*v) -> np.ndarray:
    return np.array(v, np.int32)


def _patch_merge(g: Graph) -> str:
    """Swin's patch merging: x[:, 0::2, 0::2, :], x[:, 1::2, 0::2, :], ... joined on channels."""
    parts = [g.add_node("slice", ["x"], name=f"s{a}{b}", begin=(0, a, b, 0), end=(1, 6, 6, 3), step=(1, 2, 2, 1))
             for a, b in ((0, 0), (1, 0), (0, 1), (1, 1))]
    return g.add_node("concat", parts, name="cat", axis=3)


def _where(g: Graph) -> str:
    c = g.add_node("less", ["x", "z"], name="c")
    return g.add_node("where", [c, "x", g.add_const("k", np.array(-100.0, np.float32))], name="y")


def _logic(g: Graph) -> str:
    a = g.add_node("greater_equal", ["x", "z"], name="a")
    b = g.add_node("equal", [g.add_node("floor", ["x"], name="fx"), g.add_const("one", np.array(1.0, np.float32))],
                   name="b")
    c = g.add_node("logical_or", [g.add_node("logical_not", [a], name="na"), b], name="c")
    d = g.add_node("logical_and", [c, g.add_node("less_equal", ["x", "z"], name="le")], name="d")
    return g.add_node("cast", [d], name="y", dtype="float32")


def _gather_const(g: Graph) -> str:
    return g.add_node("gather", ["x", g.add_const("i", _i32([1, 3, -1], [9, 0, -10]))], name="y", axis=0)


def _gather_float_index(g: Graph) -> str:
    """An index computed in float and cast (floor, then int32) feeding a gather."""
    i = g.add_node("cast", [g.add_node("floor", ["z"], name="fz")], name="zi", dtype="int32")
    return g.add_node("gather", ["x", i], name="y", axis=1)


def _scatter(indices: np.ndarray, data_const: bool = False) -> Callable[[Graph], str]:
    def fn(g: Graph) -> str:
        data = g.add_const("d", np.arange(24, dtype=np.float32).reshape(4, 2, 3)) if data_const else "x"
        return g.add_node("scatter_nd", [data, g.add_const("i", indices), "u"], name="y")
    return fn


def _where_const_cond(g: Graph) -> str:
    c = g.add_const("c", (np.random.default_rng(SEED).random((3, 1, 7)) > 0.5).astype(np.uint8))
    return g.add_node("where", [c, "x", g.add_node("neg", ["x"], name="nx")], name="y")


NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
COORDS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
          "half_pixel_symmetric")

#: (id, graph builder)
CASES: list[tuple[str, Callable[[], Graph]]] = [
    ("slice-strided", _one("slice", begin=(0, 1, 4, 0), end=(2, 3, 0, 7), step=(1, 1, -2, 3))),
    ("slice-reverse", _one("slice", begin=(1, 2, 4, 6), end=(-3, -4, -6, -8), step=(-1, -1, -1, -1))),
    ("slice-rows", _one("slice", begin=(0, 1, 0, 0), end=(2, 3, 5, 7), step=(1, 1, 1, 1))),
    ("slice-then-relu", _chain(X, ("slice", {"begin": (0, 0, 1, 2), "end": (2, 3, 5, 6), "step": (1, 1, 2, 1)}),
                               ("relu", {}))),
    ("slice-then-mean", _chain(X, ("slice", {"begin": (0, 0, 1, 0), "end": (2, 3, 4, 7), "step": (1, 1, 1, 2)}),
                               ("reduce_mean", {"axes": [2, 3], "keepdims": 1}))),
    ("swin-patch-merging", _graph(_patch_merge, x=(1, 6, 6, 3))),
    ("pad-constant-crop", _one("pad", pads=(0, 1, 2, -1, 0, 0, 1, 2), mode="constant", value=1.5)),
    ("pad-reflect", _one("pad", pads=(0, 0, 2, 3, 0, 0, 1, 2), mode="reflect")),
    ("pad-edge", _one("pad", pads=(0, 0, 2, 3, 1, 0, 1, 2), mode="edge")),
    ("pad-reflect-crop", _one("pad", pads=(0, 0, -1, 2, 0, 0, 2, -2), mode="reflect")),
    ("take-2d-indices", _one("take", indices=(4, 0, 1, 1, 3, 2), ishape=(2, 3), axis=2)),
    ("take-scalar", _one("take", indices=(-1,), ishape=(), axis=3)),
    ("take-irregular", _one("take", indices=tuple(np.random.default_rng(SEED).integers(0, 7, 40)), ishape=(40,),
                            axis=3)),
    ("gather-const-indices", _graph(_gather_const, x=(10, 4, 3))),
    ("gather-runtime-indices", _graph(lambda g: g.add_node("gather", ["x", "i"], name="y", axis=1),
                                      x=(2, 9, 3), i=((2, 3), "int32"))),
    ("gather-float-index", _graph(_gather_float_index, x=(2, 9, 3), z=(4,))),
    ("expand", _one("expand", (3, 1, 4), shape=(2, 3, 5, 4))),
    ("argmax", _one("argmax", axis=2, keepdims=0)),
    ("argmin-last-keepdims", _one("argmin", axis=-1, keepdims=1, select_last_index=1)),
    ("argmax-ties-first", _chain(X, ("floor", {}), ("argmax", {"axis": 3, "keepdims": 0}))),
    ("argmax-ties-last", _chain(X, ("floor", {}), ("argmax", {"axis": 1, "keepdims": 1, "select_last_index": 1}))),
    ("where-runtime-cond", _graph(_where, x=(2, 3, 4), z=(3, 1))),
    ("where-const-cond", _graph(_where_const_cond, x=(2, 3, 5, 7))),
    ("compare-logic-cast", _graph(_logic, x=(2, 3, 4), z=(4,))),
    ("scatter-rows", _graph(_scatter(_i32([2], [0])), x=(4, 2, 3), u=(2, 2, 3))),
    ("scatter-elements-dup", _graph(_scatter(_i32([0, 1, 2], [3, 0, 0], [0, 1, 2], [-1, -1, 1])), x=(4, 2, 3),
                                    u=(4,))),
    ("scatter-const-data", _graph(_scatter(_i32([[1, 1]], [[3, 0]]), data_const=True), u=(2, 1, 3))),
    ("resize-torch-nearest", _one("resize", sizes=(2, 3, 10, 14), mode="nearest", coord_mode="asymmetric",
                                  nearest_mode="floor")),
    ("resize-torch-bilinear", _one("resize", sizes=(2, 3, 10, 14), mode="linear", coord_mode="half_pixel")),
    ("resize-align-corners", _one("resize", sizes=(2, 3, 9, 4), mode="linear", coord_mode="align_corners")),
    ("resize-pytorch-half-pixel-to-1", _one("resize", sizes=(2, 3, 1, 11), mode="linear",
                                            coord_mode="pytorch_half_pixel")),
    ("resize-linear-scales", _one("resize", sizes=(2, 3, 7, 5), scales=(1.0, 1.0, 1.5, 0.75), mode="linear",
                                  coord_mode="asymmetric")),
    ("resize-trilinear", _one("resize", (1, 2, 3, 4, 6), sizes=(1, 2, 6, 6, 3), mode="linear")),
    *[(f"resize-nearest-{c}-{m}", _one("resize", sizes=(2, 3, 9, 4), mode="nearest", coord_mode=c, nearest_mode=m))
      for c in COORDS for m in NEAREST],
    # exact halves (asymmetric x2: every other coordinate is k + 0.5): the rounding modes differ there
    *[(f"resize-nearest-ties-{m}", _one("resize", sizes=(2, 3, 10, 14), mode="nearest", coord_mode="asymmetric",
                                        nearest_mode=m)) for m in NEAREST],
]


@pytest.mark.parametrize(("case", "build"), CASES, ids=[c[0] for c in CASES])
def test_on_every_target(case: str, build: Callable[[], Graph]) -> None:
    _check_on_every_target(build())


#: (id, input shape, begin, end, step, (a view on llvm, a view on cuda))
VIEWS = [
    ("rows-of-batch-1", (1, 6, 4), (0, 2, 0), (1, 5, 4), (1, 1, 1), (True, True)),
    ("one-batch", (3, 6, 4), (1, 2, 0), (2, 5, 4), (1, 1, 1), (True, True)),
    ("batches", (3, 6, 4), (1, 0, 0), (3, 6, 4), (1, 1, 1), (True, True)),
    ("unaligned", (3, 6, 4), (1, 1, 2), (2, 2, 4), (1, 1, 1), (True, False)),
    ("not-contiguous", (3, 6, 4), (0, 2, 0), (3, 5, 4), (1, 1, 1), (False, False)),
    ("reversed", (3, 6, 4), (2, 5, 3), (-4, -7, -5), (-1, -1, -1), (False, False)),
    ("one-element-any-step", (3, 6, 4), (2, 5, 3), (1, 4, 2), (-1, -1, -1), (True, False)),
]


@pytest.mark.parametrize(("case", "shape", "begin", "end", "step", "views"), VIEWS, ids=[v[0] for v in VIEWS])
def test_contiguous_slices_are_views(case: str, shape: tuple, begin: tuple, end: tuple, step: tuple,
                                     views: tuple[bool, bool]) -> None:
    """A slice that is one block of its input's memory runs as a view (no kernel, no copy); on a GPU
    only where the block starts 16-byte aligned."""
    g = Graph("view")
    g.add_input("x", shape)
    y = g.add_node("slice", ["x"], name="y", begin=begin, end=end, step=step)
    g.set_outputs(y, g.add_node("relu", ["x"], name="r"))  # x has two readers: the slice stays alone
    g.infer_types()
    for kind, want in zip(("llvm", "cuda"), views, strict=True):
        got = compile_model(g, target=kind).kernels["y"].target
        assert got == ("view" if want else kind), (kind, got)
    x = np.random.default_rng(SEED).standard_normal(shape).astype(np.float32)
    m = compile_model(g, target="llvm")
    got = m.run({"x": x}).outputs[0]
    np.testing.assert_array_equal(got, reference_run(g, {"x": x})[0])
    if views[0]:
        assert np.shares_memory(got, m.run({"x": x}).values["x"])
    _check_on_every_target(g)


def test_split_parts_and_a_take_of_one_index_are_views() -> None:
    """Split's parts along the first axis (one slice each) and ``qkv[0]`` (a take of one index)."""
    g = Graph("split")
    g.add_input("x", (3, 2, 4, 8))
    parts = [g.add_node("slice", ["x"], name=f"p{k}", begin=(k, 0, 0, 0), end=(k + 1, 2, 4, 8), step=(1, 1, 1, 1))
             for k in range(2)]
    q = g.add_node("take", ["x"], name="q", indices=(2,), ishape=(), axis=0)
    g.set_outputs(*parts, q)
    g.infer_types()
    assert [view_offset(g.node(n), g, "cuda") for n in ("p0", "p1", "q")] == [0, 64, 128]
    for kind in ("llvm", "cuda"):
        m = compile_model(g, target=kind)
        assert {k.target for k in m.kernels.values()} == {"view"}
        assert [m.kernels[n].offset for n in ("p0", "p1", "q")] == [0, 64, 128]  # worked out once, by place
    _check_on_every_target(g)
    # a plan file keeps each view's offset (loading does not place its views again)
    loaded = CompiledModel.from_bytes(compile_model(g, target="llvm").to_bytes())
    assert [loaded.kernels[n].offset for n in ("p0", "p1", "q")] == [0, 64, 128]
    x = {"x": np.arange(3 * 2 * 4 * 8, dtype=np.float32).reshape(3, 2, 4, 8)}
    for got, want in zip(loaded.run(x).outputs, reference_run(g, x), strict=True):
        np.testing.assert_array_equal(got, want)


def test_onnx_exported_patterns_have_no_host_step() -> None:
    """What exporters write, imported from ONNX: Split's parts, ``x[:, 0]`` (Gather of one index),
    F.interpolate (Resize nearest x2, bilinear down), a reflect Pad, masked_fill with a run-time mask
    (Less + Where), a mask built by ScatterND and ArgMax: no host step on llvm or cuda, the same
    values as onnxruntime (the reference agrees with it) and the numpy reference."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import helper
    from support.onnx_models import feeds_for, model, reference

    from vdla.compiler.graph.onnx_import import from_onnx

    f32, i64 = np.float32, np.int64
    nodes = [
        helper.make_node("Split", ["x", "sp"], ["a", "b"], axis=1),
        helper.make_node("Resize", ["a", "", "s2"], ["ra"], mode="nearest", coordinate_transformation_mode="asymmetric",
                         nearest_mode="floor"),
        helper.make_node("Pad", ["ra", "pads"], ["pa"], mode="reflect"),
        helper.make_node("Resize", ["b", "", "s05"], ["rb"], mode="linear", coordinate_transformation_mode="half_pixel"),
        helper.make_node("Less", ["b", "k0"], ["c"]),
        helper.make_node("Where", ["c", "kneg", "b"], ["w"]),
        helper.make_node("ScatterND", ["w", "idx", "upd"], ["ws"]),
        helper.make_node("ArgMax", ["ws"], ["am"], axis=1, keepdims=0),
        helper.make_node("Gather", ["x", "zero"], ["g0"], axis=1),
    ]
    inits = {"sp": np.array([1, 3], i64), "s2": np.array([1, 1, 2, 2], f32), "s05": np.array([1, 1, 0.5, 0.5], f32),
             "pads": np.array([0, 0, 1, 2, 0, 0, 2, 1], i64), "k0": np.array(-0.5, f32), "kneg": np.array(-1.0, f32),
             "idx": np.array([[0, 1, 2], [0, 2, 5]], i64), "upd": np.full((2, 6), 7.0, f32),
             "zero": np.array(0, i64)}
    m = model(nodes, {"x": (1, 4, 6, 6)}, 13, ("pa", "rb", "ws", "am", "g0"), inits)
    g = from_onnx(m)
    x = feeds_for({"x": (1, 4, 6, 6)}, SEED)
    want, source = reference(m, x)
    assert source == "onnxruntime"
    for got, w in zip(reference_run(g, x), want, strict=True):
        np.testing.assert_allclose(got, np.asarray(w).astype(got.dtype), rtol=2e-5, atol=2e-5)
    _check_on_every_target(g)
    c = compile_model(g, target="cuda")
    views = sorted(n for n, k in c.kernels.items() if k.target == "view")
    assert views == ["b", "g0"], c.table()  # Split's part "a" is fused into the resize's kernel


def test_gpu_views_start_at_their_offset() -> None:
    """A view of GPU memory (no GPU needed: a stand-in device hands out addresses) points
    ``offset`` elements into its owner's buffer, and so does a reshape of it."""
    from vdla.runtime.cuda_driver import DeviceArray

    class Dev:
        def alloc(self, nbytes: int) -> int:
            return 4096

        def free(self, ptr: int) -> None:
            pass

    a = DeviceArray(Dev(), (3, 6, 4), "float32")
    v = a.view(28, (1, 3, 4))
    assert v.ptr == 4096 + 28 * 4 and v.base is a and v.shape == (1, 3, 4)
    r = v.reshape((12,))
    assert r.ptr == v.ptr and r.base is a
    assert r.view(4, (2, 4)).ptr == v.ptr + 16
    with pytest.raises(ValueError, match="outside"):
        a.view(70, (1, 3))


@pytest.mark.parametrize(("first", "pool", "attrs"), [
    ("concat", "max_pool2d", {"kernel": 3, "strides": 2, "padding": 1}),       # Inception: concat, then pool
    ("pad", "avg_pool2d", {"kernel": 2, "strides": 2, "padding": 0}),
    ("relu", "global_avg_pool2d", {}),
])
def test_pool_after_an_injective_chain(first: str, pool: str, attrs: dict) -> None:
    """The fusion's rule 3 (a reduction and the injective chain feeding it): the pool schedules
    inline the chain, as schedule_reduce does."""
    g = Graph("pool")
    g.add_input("x", (1, 3, 8, 8))
    g.add_input("z", (1, 2, 8, 8))
    if first == "concat":
        v = g.add_node("concat", ["x", "z"], name="v", axis=1)
    elif first == "pad":
        v = g.add_node("pad", ["x"], name="v", pads=(0, 0, 1, 1, 0, 0, 1, 1), mode="reflect")
    else:
        v = g.add_node("relu", ["x"], name="v")
    g.set_outputs(g.add_node(pool, [v], name="p", **attrs), g.add_node("relu", ["z"], name="rz"))
    g.infer_types()
    fused = compile_model(g, target="llvm").graph.topo_order()
    assert any(n.attrs.get("pattern") == f"{first}+{pool}" for n in fused)
    _check_on_every_target(g)
