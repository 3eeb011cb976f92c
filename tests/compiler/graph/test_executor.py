"""The executor and the main job: models compiled node by node onto VDLA and the CPU,
run on fsim/pysim (and verilator when registered), bit-exact against the int8 reference;
compiled-model files; the `vdla run MODEL` / `vdla build` commands."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from support import REPO

from vdla.cli import main
from vdla.compiler.graph import executor, models, passes, reference
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.executor import CompiledModel, ModelFileError, alu_chain, compile_model
from vdla.compiler.graph.executor import compile as graph_compile
from vdla.compiler.graph.job import run_job
from vdla.compiler.graph.partition import PartitionPolicy
from vdla.compiler.graph.quantize import QConfig
from vdla.compiler.graph.zoo import load_model
from vdla.config import Config, preset
from vdla.runtime import Device
from vdla.runtime.device import BACKENDS, BUILTIN_BACKENDS


@pytest.fixture(scope="module")
def resnet_model() -> CompiledModel:
    return build_model(load_model("resnet18", reduced=True), Config())


def test_resnet18_reduced_every_conv_but_the_first_on_vdla_bit_exact(resnet_model):
    m = resnet_model
    on = [n for n, k in m.kernels.items() if k.target == "vdla"]
    assert len(on) == 19  # 16 block convs + 3 downsample shortcuts
    # the float CPU nodes that map onto topi are built for llvm; the rest stay on numpy, with the reason
    assert {n for n, k in m.kernels.items() if k.target == "llvm"} == {"relu1", "maxpool", "fc"}
    assert m.kernels["flatten"].target == "view" and not m.kernels["flatten"].host_reason
    x = models.sample_input(m.graph, 3)
    res = m.run(x, Device("fsim", config=m.config), reference=True)
    assert all(r.exact for r in res.layers)
    assert all(r.max_err == 0 for r in res.layers if r.target != "llvm")  # integer and numpy nodes bit-exact
    assert np.array_equal(res.outputs[0], res.reference[0])
    want = reference.run(m.graph, x)[0]
    assert np.allclose(res.outputs[0], want, rtol=0, atol=executor.FP32_RTOL * max(1.0, np.abs(want).max()))
    vd = [r for r in res.layers if r.target == "vdla"]
    assert all(r.cycles > 0 and r.bytes_moved > 0 and 0 < r.gemm_util <= 1 for r in vd)


def test_save_load_runs_without_recompiling(resnet_model, tmp_path, monkeypatch):
    path = resnet_model.save(tmp_path / "r.vdla")
    monkeypatch.setattr(graph_compile, "build_kernel", lambda *a, **k: pytest.fail("recompiled"))
    m2 = CompiledModel.load(path)
    assert len(m2.functions) == len(resnet_model.functions)
    # the llvm CPU kernels are not in the file: loading rebuilds them
    assert {n: k.target for n, k in m2.kernels.items()} == {n: k.target for n, k in resnet_model.kernels.items()}
    assert all(k.kernel is not None for k in m2.kernels.values() if k.target == "llvm")
    x = models.sample_input(m2.graph, 4)
    a = resnet_model.run(x).outputs[0]
    b = m2.run(x).outputs[0]
    assert np.array_equal(a, b)


def test_llvm_cpu_kernels_shared_and_optional(resnet_model):
    from vdla.compiler.graph.strategy import kernel_cache
    from vdla.compiler.graph.strategy.topi_ops import signature

    g = resnet_model.graph
    cache = kernel_cache("llvm")
    k1 = cache.get(g.node("fc"), g)
    k2 = cache.get(g.node("fc"), g)
    assert len(cache) == 1 and k1.func is k2.func  # one build per signature
    assert signature(g.node("relu1"), g) != signature(g.node("maxpool"), g)
    m = compile_model(g, resnet_model.config, llvm=False)
    assert not any(k.target == "llvm" for k in m.kernels.values())
    x = models.sample_input(g, 5)
    a = m.run(x, reference=True)
    assert all(r.exact and r.max_err == 0 for r in a.layers)  # numpy CPU path: bit-exact everywhere
    b = resnet_model.run(x, reference=True)
    assert np.allclose(a.outputs[0], b.outputs[0], rtol=0, atol=1e-4 * max(1.0, np.abs(a.outputs[0]).max()))


def test_model_file_errors(resnet_model, tmp_path):
    blob = resnet_model.to_bytes()
    with pytest.raises(ModelFileError, match="truncated"):
        CompiledModel.from_bytes(blob[:10])
    with pytest.raises(ModelFileError, match="not a compiled vdla model"):
        CompiledModel.from_bytes(b"VDLAPROG" + blob[8:])
    bad_version = blob[:8] + (99).to_bytes(4, "little") + blob[12:]
    with pytest.raises(ModelFileError, match="version 99"):
        CompiledModel.from_bytes(bad_version)
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 0xFF
    with pytest.raises(ModelFileError, match="checksum"):
        CompiledModel.from_bytes(bytes(flipped))
    with pytest.raises(ModelFileError, match="truncated|checksum"):
        CompiledModel.from_bytes(blob[:-100])
    (tmp_path / "bad.vdla").write_bytes(blob[:-100])
    assert main(["run", str(tmp_path / "bad.vdla"), "-q"]) == 2


def test_alu_chain_residual_rewrite_and_fallback_reason(resnet_model):
    g = resnet_model.graph
    ch = alu_chain(g.node("layer1.0.relu2.requant"), g)
    ops = [o for o, _ in ch.ops]
    # ((acc + bias') >> k) + residual, then >> (n - k) when n > k; clamps after the shifts
    assert ops[:3] == ["bias", "shr", "res"] and ch.residual is not None
    assert set(ops[3:]) <= {"shr", "max", "min"} and ops[-1] == "min"
    assert alu_chain(g.node("fc"), g) == "dense is not a fused GEMM kernel"


@pytest.mark.parametrize("name", ["mobilenet_v1", "mlp", "dcgan_generator"])
def test_other_models_reduced_on_fsim(name):
    res = run_job(name, "fsim", reduced=True, check_fp32=False)
    assert res.ok, res.table()
    targets = {r.node: r for r in res.layers}
    if name == "mobilenet_v1":  # pointwise and depthwise (grouped) convs on VDLA, all but the float first conv
        assert sum(r.target == "vdla" for r in res.layers) == 26
        assert all(r.target == "vdla" for n, r in targets.items() if ".dw" in n)
    elif name == "mlp":  # hidden dense layers on VDLA, the float classifier on the CPU
        assert sum(r.target == "vdla" for r in res.layers) == 2
    else:  # every conv2d_transpose (with its bias/ReLU/requantise tail) on VDLA
        assert [r.node for r in res.layers if r.target == "vdla"] == [
            "relu1.requant", "relu2.requant", "relu3.requant", "relu4.requant", "deconv5.requant"]
        assert not any(r.reason.startswith("fallback") for r in res.layers)


def _block(cfg: Config) -> CompiledModel:
    g = models.resnet_block(input_size=4, channels=16)
    q = passes.prepare(g, models.sample_input(g, 100, count=1), cfg, QConfig(skip_conv=(), int8_shortcut=True),
                       PartitionPolicy(skip_first_conv=False))
    return compile_model(q, cfg)


# Verilator's run of the block (80 s on 2 cores) in nox -s slow; Amaranth's simulator here
@pytest.mark.parametrize("device", ["pysim", pytest.param("verilator", marks=pytest.mark.slow)])
def test_resnet_block_on_rtl_bit_exact(device):
    if device not in BACKENDS and device not in BUILTIN_BACKENDS:
        pytest.skip(f"Device({device!r}) is not available here")
    cfg = preset("default")
    m = _block(cfg)
    assert sum(k.target == "vdla" for k in m.kernels.values()) == 2
    try:
        dev = Device(device, config=cfg)
    except Exception as e:  # verilator without its toolchain
        pytest.skip(f"{device}: {e}")
    x = models.sample_input(m.graph, 1)
    res = m.run(x, dev, reference=True)
    assert all(r.exact for r in res.layers)
    assert all(r.cycles and r.cycles > 0 for r in res.layers if r.target == "vdla")


def test_cli_build_run_json_and_errors(tmp_path, capsys):
    out = tmp_path / "mlp.vdla"
    assert main(["build", "mlp", "--reduced", "-o", str(out), "-q"]) == 0
    assert "2 on VDLA" in capsys.readouterr().out
    assert main(["run", str(out), "--json", "-q"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["ok"] and d["total_cycles"] > 0 and d["checks"][0]["ok"] is True
    assert main(["run", "nosuchmodel", "-q"]) == 2
    assert "unknown model 'nosuchmodel'" in capsys.readouterr().err


def test_cli_runs_an_onnx_file(tmp_path, capsys):
    pytest.importorskip("onnx")
    from vdla.compiler.graph.onnx_export import save_onnx

    path = save_onnx(models.mlp(in_features=32, hidden=(16,)), tmp_path / "m.onnx")
    assert main(["run", str(path), "-q"]) == 0
    out = capsys.readouterr().out
    assert "result: PASS" in out and "ONNX m.onnx" in out


def test_main_job_output_lines():
    """The demo's command (`vdla run resnet18 --device fsim`), at the reduced size."""
    nox = (REPO / "noxfile.py").read_text()
    assert '"run", "resnet18", "--device", "fsim"' in nox
    # VDLA_PROGRESS=1: progress as on a terminal (a pipe gets none otherwise, see vdla.progress)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), VDLA_PROGRESS="1")
    proc = subprocess.run([sys.executable, "-m", "vdla.cli", "run", "resnet18", "--device", "fsim", "--reduced"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("vdla run resnet18: resnet18 reduced input 1x3x32x32")
    head = next(ln for ln in lines if ln.lstrip().startswith("#"))
    for col in ("node", "kernel", "target", "cycles", "time", "GEMM%", "bytes", "exact"):
        assert col in head
    rows = [ln for ln in lines if ln[:3].strip().isdigit()]
    assert len(rows) == 25 and sum(" vdla " in r for r in rows) == 19
    assert any(ln.startswith("total VDLA cycles ") and " ms at 100 MHz" in ln for ln in lines)
    assert any(ln.startswith("offloaded layers: VDLA") and "speedup" in ln for ln in lines)
    assert any(ln.startswith("int8 output vs numpy int8 reference: PASS (bit-exact, every") for ln in lines)
    assert sum(" llvm " in r for r in rows) == 3  # conv1+relu, max-pool, classifier
    assert any(r.split()[1] == "flatten" and " view " in r for r in rows)  # a view of its input: no copy
    assert any(ln.startswith("fp32 CPU path vs onnxruntime: ") for ln in lines)
    assert lines[-1] == "result: PASS"
    total = re.search(r"compiling kernel 1/(\d+)", proc.stderr)  # progress: stderr, one line per distinct kernel
    assert total and f"compiling kernel {total.group(1)}/{total.group(1)}" in proc.stderr
