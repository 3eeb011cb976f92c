"""Whole models on the cuda target: every node mapped onto topi runs a GPU kernel (PTX assembled by
ptxas), the kernels' loop IR run on the CPU reproduces the numpy reference, and ``vdla run MODEL
--target cuda`` builds, then says clearly that there is no GPU (or runs and checks, with one)."""

from __future__ import annotations

import numpy as np
import pytest
from support.cuda import ARCHS, needs_gpu, needs_ptxas

from vdla import cli
from vdla.compiler.graph import models
from vdla.compiler.graph.job import load_model
from vdla.compiler.graph.reference import run as reference_run
from vdla.compiler.targets.cuda import runtime
from vdla.compiler.targets.cuda.model import compile_model, run_cuda_job
from vdla.compiler.targets.cuda.ptxas import assemble


@needs_ptxas
@pytest.mark.parametrize("arch", ARCHS)
def test_mlp_kernels_assemble(arch: str) -> None:
    m = compile_model(load_model("mlp", reduced=True).graph, f"cuda -arch={arch}")
    assert [ly.target for ly in m.layers] == ["cuda"] * len(m.layers)
    for ptx in {ly.func.ptx for ly in m.layers}:
        assemble(ptx, arch)


@pytest.mark.parametrize(
    ("model", "numpy_nodes"),
    [("mlp", []), ("resnet_block", []), pytest.param("resnet18", ["flatten"], marks=pytest.mark.slow)],
)
def test_model_schedules_match_the_reference_on_the_cpu(model: str, numpy_nodes: list[str]) -> None:
    spec = load_model(model, reduced=True)
    m = compile_model(spec.graph)
    assert [ly.node for ly in m.layers if ly.target != "cuda"] == numpy_nodes
    assert all(ly.target == "view" for ly in m.layers if ly.node == "flatten")
    x = models.sample_input(spec.graph, 0)
    for got, want in zip(m.run_on_cpu(x), reference_run(spec.graph, x, check=False), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.skipif(runtime.device_count() > 0, reason="this machine has a GPU")
def test_cli_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "mlp", "--reduced", "--target", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "compiled mlp for cuda -arch=sm_80: 4 of 4 nodes on the GPU" in err
    assert "vdla run: error: no CUDA device" in err


def test_cli_unknown_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "mlp", "--reduced", "--target", "opencl"]) == 2
    assert "--target 'opencl'" in capsys.readouterr().err


@needs_gpu
def test_resnet18_on_the_gpu() -> None:
    res = run_cuda_job("resnet18", reduced=True)
    assert res.ok, res.table()
    assert all(ly.seconds > 0 for ly in res.model.layers)
