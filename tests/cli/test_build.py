"""``vdla build MODEL --target llvm|cuda|vdla``: every target compiles through the one graph
executor; the plan (``--json``) says where each node runs and why, checked against what the
executor itself placed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vdla import cli
from vdla.compiler.graph.executor import CompiledModel, compile_model
from vdla.compiler.graph.zoo import load_model


@pytest.mark.parametrize(("model", "target", "host"), [
    ("mlp", "cuda", []),  # PTX is built without a GPU
    pytest.param("resnet18", "llvm", [], marks=pytest.mark.slow),  # 15 s: in nox -s slow
    ("dcgan_generator", "llvm", []),  # conv2d_transpose: topi.conv2d_transpose_nchw
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


def test_build_table_names_the_host_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["build", _int_model(tmp_path / "int_tail.onnx"), "--target", "llvm", "-q"]) == 0
    out = capsys.readouterr().out
    assert "add on int32 (llvm kernels are float32" in out
    assert "0 of 1 nodes on llvm" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["build", "mlp", "--target", "opencl"], "--target 'opencl': unknown target kind 'opencl'"),
    # a bad architecture is the target's error, not a host fallback per node
    (["build", "mlp", "--target", "cuda -arch=sm_12"], "--target 'cuda -arch=sm_12': unsupported GPU architecture"),
])
def test_build_bad_target(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("vdla build: error: ") and message in err and err.count("\n") == 1


def _int_model(path: Path) -> str:
    """An ONNX model with an int32 add: integer nodes stay on the host's numpy kernels by design
    (bit-exact), so its plan always has one host step."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])
    y = helper.make_tensor_value_info("y", TensorProto.INT32, [2, 8])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="act"),
             helper.make_node("Cast", ["r"], ["i"], name="to_int", to=TensorProto.INT32),
             helper.make_node("Add", ["i", "one"], ["y"], name="int_add")]
    one = helper.make_tensor("one", TensorProto.INT32, [1], [1])
    g = helper.make_graph(nodes, "int_tail", [x], [y], [one])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


@pytest.mark.parametrize("command", ["build", "run"])
def test_host_steps_warn_once_and_no_host_ops_refuses(command: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    model = _int_model(tmp_path / "int_tail.onnx")
    m = compile_model(load_model(model).graph, target="llvm")
    [(name, op, _, why)] = [r for r in m.summary() if r[2] == "host"]
    listed = f"{name} ({op}: {why.removeprefix('numpy: ')})"  # the node, its op and why, as the plan says
    assert cli.main([command, model, "--target", "llvm", "-q"]) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1, err
    assert warnings[0].startswith(f"vdla {command}: warning: ") and listed in warnings[0]
    assert "1 of 1 nodes run on the host" in warnings[0]
    assert cli.main([command, model, "--target", "llvm", "-q", "--no-host-ops"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"vdla {command}: error: ") and err.count("\n") == 1
    assert "cannot run on llvm" in err and listed in err


def test_float_plan_file_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``vdla build --target llvm|cuda -o FILE`` writes the plan; loading builds its functions
    again (cuda: PTX, no GPU needed) and `vdla run FILE --target llvm` runs it."""
    for target in ("llvm", "cuda -arch=sm_90"):
        out = tmp_path / f"mlp-{target.split()[0]}.vdla"
        assert cli.main(["build", "mlp", "--reduced", "--target", target, "-o", str(out), "-q"]) == 0
        assert f"{out}: the plan for {target}" in capsys.readouterr().out
        m = CompiledModel.load(out)
        assert m.target == target and m.config is None
        want = compile_model(load_model("mlp", reduced=True).graph, target=target)
        assert [(n, k.target) for n, k in m.kernels.items()] == [(n, k.target) for n, k in want.kernels.items()]
        assert {k.target for k in m.kernels.values()} <= {target.split()[0], "view"}
    m = CompiledModel.load(tmp_path / "mlp-llvm.vdla")
    x = {k: np.random.default_rng(0).standard_normal(t.shape).astype(t.dtype) for k, t in m.graph.inputs.items()}
    np.testing.assert_allclose(m.run(x).outputs[0], want_out := compile_model(
        load_model("mlp", reduced=True).graph, target="llvm").run(x).outputs[0], rtol=1e-6)
    assert want_out.size
    assert cli.main(["run", str(tmp_path / "mlp-llvm.vdla"), "--target", "llvm", "-q"]) == 0
    assert "(ok)" in capsys.readouterr().out
    # without --target a model file runs on the VDLA device: a float one says how to run it
    assert cli.main(["run", str(tmp_path / "mlp-llvm.vdla"), "-q"]) == 2
    assert "run it with --target llvm" in capsys.readouterr().err
