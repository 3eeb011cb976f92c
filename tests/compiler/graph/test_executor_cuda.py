"""Whole models through the graph executor on the cuda target: every node mapped onto topi runs a GPU
kernel (PTX assembled by ptxas), the kernels' loop IR run on the CPU reproduces the numpy reference,
and ``vdla run MODEL --target cuda`` builds, then says clearly that there is no GPU (or runs and
checks, with one)."""

from __future__ import annotations

import numpy as np
import pytest
from support.cuda import ARCHS, needs_gpu, needs_ptxas

from vdla import cli
from vdla.compiler.graph import models
from vdla.compiler.graph.compare import run_float
from vdla.compiler.graph.executor import compile_model
from vdla.compiler.graph.reference import run as reference_run
from vdla.compiler.graph.zoo import load_model
from vdla.compiler.targets.cuda import runtime
from vdla.compiler.targets.cuda.ptxas import assemble


@needs_ptxas
@pytest.mark.parametrize("arch", ARCHS)
def test_mlp_kernels_assemble(arch: str) -> None:
    m = compile_model(load_model("mlp", reduced=True).graph, target=f"cuda -arch={arch}")
    assert [k.target for k in m.kernels.values()] == ["cuda"] * len(m.kernels)
    for ptx in {k.kernel.func.ptx for k in m.kernels.values()}:
        assemble(ptx, arch)


@pytest.mark.parametrize(
    ("model", "numpy_nodes"),
    [("mlp", []), ("resnet_block", []), ("mobilenet_v1", ["flatten"]), pytest.param("resnet18", ["flatten"], marks=pytest.mark.slow)],
)
def test_model_schedules_match_the_reference_on_the_cpu(model: str, numpy_nodes: list[str]) -> None:
    spec = load_model(model, reduced=True)
    m = compile_model(spec.graph, target="cuda")
    assert [k.node for k in m.kernels.values() if k.target != "cuda"] == numpy_nodes
    assert all(k.target == "view" for k in m.kernels.values() if k.node == "flatten")
    x = models.sample_input(spec.graph, 0)
    for got, want in zip(m.run_on_cpu(x), reference_run(spec.graph, x, check=False), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.skipif(runtime.device_count() > 0, reason="this machine has a GPU")
def test_cli_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "mlp", "--reduced", "--target", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "compiled mlp for cuda: 4 of 4 nodes on the GPU" in err
    assert "vdla run: error: no CUDA device" in err


def test_cli_unknown_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "mlp", "--reduced", "--target", "opencl"]) == 2
    assert "--target 'opencl'" in capsys.readouterr().err


@needs_gpu
def test_resnet18_on_the_gpu() -> None:
    res = run_float("resnet18", "cuda", reduced=True)
    assert res.ok, res.table()
    # every kernel and host node timed; a view (a reshape of GPU memory) launches nothing
    assert all(r.seconds > 0 for r in res.layers if r.target != "view")
    assert any(r.target == "cuda" for r in res.layers)
    assert res.model.host_steps() == []
    assert res.copies == 2  # the input up, the output down: every value between them stays on the GPU


@needs_gpu
@pytest.mark.parametrize("model", ["resnet18", "mobilenet_v1", "dcgan_generator"])
def test_whole_gpu_plans_replay_as_a_cuda_graph(model: str) -> None:
    """The first run launches kernel by kernel and captures them; later runs are one graph launch,
    on new inputs each time (copied into the plan's input buffers), matching the reference."""
    g = load_model(model, reduced=True).graph
    m = compile_model(g, target="cuda")
    assert m.host_steps() == []
    for seed in range(3):
        x = models.sample_input(g, seed)
        res = m.run(x)
        want = reference_run(g, x, check=False)
        for got, w in zip(res.outputs, want, strict=True):
            np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(w).max())))
        if seed == 0:  # the capture run: a record per node
            assert len(res.layers) == len(m.kernels)
        else:
            assert [r.node for r in res.layers] == ["(cuda graph)"]
        assert res.copies == 1 + len(g.outputs)  # the input up, the outputs down
    # per-step timing asks for the kernels one by one
    assert len(m.run(x, time_layers=True).layers) == len(m.kernels)


# ---------------------------------------------------------------------------- grouped convolutions

#: (id, in channels, out channels, size, kernel, stride, padding, dilation, groups, bias, GPU kernel?)
GROUPED = [
    ("dw-s2-bias-relu", 16, 16, 9, 3, 2, 1, 1, 16, True, True),
    ("dw-mult2-nobias", 8, 16, 6, 3, 1, 1, 1, 8, False, True),
    ("dw-asym-pad-dilated", 4, 4, 9, 3, 1, (0, 1, 2, 0), 2, 4, True, True),
    ("dw-5x5-one-channel", 1, 3, 7, 5, 1, 2, 1, 1, True, True),  # groups 1: the ordinary conv2d path
    ("groups2-not-depthwise", 8, 8, 5, 3, 1, 1, 1, 2, True, True),  # the grouped schedule
]


def _grouped(cin: int, cout: int, size: int, k: int, stride: int, pad: object, dil: int, groups: int,
             bias: bool) -> object:  # fmt: skip
    from vdla.compiler.graph.ir import Graph

    rng = np.random.default_rng(7)
    g = Graph("grouped")
    g.add_input("x", (1, cin, size, size), "float32")
    ins = ["x", g.add_const("w", rng.standard_normal((cout, cin // groups, k, k)).astype("float32"))]
    if bias:
        ins.append(g.add_const("b", rng.standard_normal(cout).astype("float32")))
    y = g.add_node("conv2d", ins, name="conv", strides=stride, padding=pad, groups=groups, dilation=dil)
    g.set_outputs(g.add_node("relu", [y], name="act"))
    return g.infer_types()


@pytest.mark.parametrize("case", GROUPED, ids=[c[0] for c in GROUPED])
def test_depthwise_convs_run_as_gpu_kernels(case: tuple) -> None:  # type: ignore[type-arg]
    """Depthwise conv2d (groups == channels) nodes build with the depthwise GPU schedule, other
    groupings with the grouped one (PTX assembled for every architecture), and their loop IR
    matches numpy. The llvm strategy maps them the same way."""
    from vdla.compiler.graph.strategy import BuiltKernel, kernel_cache
    from vdla.compiler.targets.cuda.ptxas import find_ptxas

    *shape, on_gpu = case[1:]
    g = _grouped(*shape)
    x = {"x": np.random.default_rng(3).standard_normal(g.inputs["x"].shape).astype("float32")}
    want = reference_run(g, x, check=False)[0]
    for arch in ARCHS:
        m = compile_model(g, target=f"cuda -arch={arch}")
        (ly,) = m.kernels.values()  # conv (+ bias) + relu fused into one node
        if not on_gpu:
            assert ly.target == "host" and "fewer groups than channels" in ly.host_reason
            continue
        assert ly.target == "cuda", ly.host_reason
        if find_ptxas() is not None:
            assemble(ly.kernel.func.ptx, arch)
    np.testing.assert_allclose(m.run_on_cpu(x)[0], want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
    fg = m.graph
    k = kernel_cache("llvm").get(fg.node(next(iter(m.kernels))), fg)
    assert isinstance(k, BuiltKernel) == on_gpu
    if on_gpu:
        env = dict(fg.consts, **x)
        np.testing.assert_allclose(k(env), want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
