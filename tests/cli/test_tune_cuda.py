"""``vdla tune --target cuda`` without a GPU (one line, nothing logged), a model's cuda tasks, a
template that cannot serve the target, and a log from another GPU architecture (a warning
naming both)."""

from __future__ import annotations

import json
import time
import warnings

import pytest

from vdla.cli import main
from vdla.compiler.autotvm.measure import MeasureErrorNo, MeasureInput, MeasureResult
from vdla.compiler.autotvm.measure_cuda import _probe_gpu
from vdla.compiler.autotvm.record import encode
from vdla.compiler.autotvm.task import create
from vdla.compiler.autotvm.tuning import ArchMismatchWarning, model_tasks, tuning_context

CONV = [[1, 16, 14, 14], [16, 16, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1]]


def test_no_gpu_is_one_line(dask_client, tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    if _probe_gpu():
        pytest.skip("this machine has a GPU")
    monkeypatch.chdir(tmp_path)
    assert main(["tune", "C2", "--target", "cuda", "--trials", "2", "--log", "x.log", "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["vdla tune: error: no CUDA device: tuning cuda needs a GPU worker; pass --scheduler ADDRESS"]
    assert not (tmp_path / "x.log").exists()


@pytest.mark.parametrize("argv, message", [
    (["conv2d_nchw.cuda", "--args", json.dumps(CONV), "--target", "llvm"],
     "template 'conv2d_nchw.cuda' serves target 'cuda', not 'llvm'"),
    (["conv2d_NCHWc.x86", "--args", "[1, 16, 14, 14, 16, 3, 1, 1]", "--target", "cuda"],
     "template 'conv2d_NCHWc.x86' serves target 'llvm', not 'cuda'"),
])
def test_a_template_for_another_target_is_one_line(argv, message, capsys, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    assert main(["tune", *argv, "--trials", "2", "--log", "x.log", "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_model_tasks_on_cuda() -> None:
    tasks = model_tasks("resnet18", "cuda -arch=sm_90", reduced=True)
    names = {t.name for t in tasks}
    # the 3x3 stride-1 convs' Winograd tasks beside their direct ones (ResNet-18's 1x1 convs have stride 2)
    assert names == {"conv2d_nchw.cuda", "conv2d_nchw_winograd.cuda", "dense.cuda"}
    assert {t.target for t in tasks} == {"cuda -arch=sm_90"}
    assert all(t.fallback().index is not None for t in tasks)  # each layer's hand tiles are a point


def _log(tmp_path, arch: str):  # type: ignore[no-untyped-def]
    """A log of one cuda record (its time is a placeholder: only the architecture is read here)."""
    task = create("conv2d_nchw.cuda", CONV, f"cuda -arch={arch}")
    res = MeasureResult([1e-5], int(MeasureErrorNo.NO_ERROR), 1.0, time.time())
    path = tmp_path / f"{arch}.log"
    path.write_text(encode(MeasureInput(task, task.config_space.get(1234)), res) + "\n")
    return path


def test_a_log_of_another_arch_warns_naming_both(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = _log(tmp_path, "sm_90")
    with pytest.warns(ArchMismatchWarning, match=r"measured on sm_90 but this build is for sm_80"):
        with tuning_context(str(path), "cuda -arch=sm_80") as ctx:
            assert len(ctx) == 1  # used all the same
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tuning_context(str(path), "cuda -arch=sm_90") as ctx:
            assert len(ctx) == 1


def test_a_committed_log_of_the_present_gpu_is_the_default(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """As TVM's TopHub: logs/cuda_<arch>.log applies when the GPU present is of that architecture."""
    from vdla.compiler.autotvm import tuning
    from vdla.compiler.targets.cuda import target as cuda_target

    path = _log(tmp_path, "sm_90")
    path.rename(tmp_path / "cuda_sm_90.log")
    monkeypatch.setattr(tuning, "LOGS", tmp_path)
    monkeypatch.setattr(cuda_target, "present_arch", lambda: "sm_90")  # the GPU's answer (no GPU here)
    assert tuning.default_log("cuda") == tmp_path / "cuda_sm_90.log"
    with tuning_context(None, "cuda") as ctx:
        assert ctx is not None and len(ctx) == 1
    monkeypatch.setattr(cuda_target, "present_arch", lambda: "sm_80")
    assert tuning.default_log("cuda") is None
    monkeypatch.setattr(cuda_target, "present_arch", lambda: None)
    assert tuning.default_log("cuda") is None
    with tuning_context(None, "cuda") as ctx:
        assert ctx is None


def test_build_with_a_log_of_another_arch_says_so_once(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """``vdla build MODEL --target cuda -arch=... --tuning-log LOG``: the build's own architecture is
    the one compared with the log's (one warning line naming both), and the build goes on."""
    path = _log(tmp_path, "sm_90")
    argv = ["build", "mlp", "--reduced", "--target", "cuda -arch=sm_80", "--tuning-log", str(path), "-q",
            "-o", str(tmp_path / "mlp.vdla")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("measured on sm_90 but this build is for sm_80") == 1, err
    argv[4] = "cuda -arch=sm_90"
    assert main(argv) == 0
    assert "measured on" not in capsys.readouterr().err
