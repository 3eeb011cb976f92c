"""``vdla build MODEL --target llvm|cuda|vdla``: every target compiles through the one graph
executor; the plan (``--json``) says where each node runs and why, checked against what the
executor itself placed."""

from __future__ import annotations

import json

import pytest

from vdla import cli
from vdla.compiler.graph.executor import compile_model
from vdla.compiler.graph.zoo import load_model


@pytest.mark.parametrize(("model", "target", "host"), [
    ("mlp", "cuda", []),  # PTX is built without a GPU
    ("resnet18", "llvm", []),
    ("dcgan_generator", "llvm", ["relu1", "relu2", "relu3", "relu4", "image"]),  # conv2d_transpose: no topi operator
])
def test_build_plan_json(model: str, target: str, host: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["build", model, "--reduced", "--target", target, "--json", "-q"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["host_nodes"] == host
    m = compile_model(load_model(model, reduced=True).graph, target=target)
    assert [(d["name"], d["target"]) for d in plan["nodes"]] == [(n, k.target) for n, k in m.kernels.items()]
    kind = target.split()[0]
    for d in plan["nodes"]:
        assert d["target"] in (kind, "view", "host")
        assert (d["target"] == "host") == bool(d["reason"])  # a host step always says why
        if d["target"] == "view":
            assert d["op"] in ("flatten", "reshape")


def test_build_table_names_the_host_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["build", "dcgan_generator", "--reduced", "--target", "llvm", "-q"]) == 0
    out = capsys.readouterr().out
    assert "conv2d_transpose has no topi operator" in out
    assert "of 6 nodes on llvm" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["build", "mlp", "--target", "opencl"], "--target 'opencl': unknown target kind 'opencl'"),
    (["build", "mlp", "--target", "llvm", "-o", "x.vdla"], "-o: a compiled-model file holds a VDLA model"),
    # a bad architecture is the target's error, not a host fallback per node
    (["build", "mlp", "--target", "cuda -arch=sm_12"], "--target 'cuda -arch=sm_12': unsupported GPU architecture"),
])
def test_build_bad_target(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("vdla build: error: ") and message in err and err.count("\n") == 1
