"""``vdla run MODEL --compare``: the same model on llvm (fp32), cuda (fp32, or skipped without a GPU)
and VDLA (int8 on the golden simulator) in one table; each row checked against its numpy reference."""

from __future__ import annotations

import json

import pytest

from vdla.cli import main
from vdla.compiler.graph.compare import compare
from vdla.compiler.graph.ir import GraphError
from vdla.compiler.graph.job import run_job
from vdla.config import Config, preset
from vdla.runtime.cuda_driver import device_count


@pytest.mark.parametrize("model", ["resnet_block", "mlp"])
def test_three_rows_measured_and_checked(model: str) -> None:
    res = compare(model, reduced=True, repeat=2)
    assert [r.target for r in res.rows] == ["llvm", "cuda", "vdla"]
    llvm, cuda, vdla = res.rows
    assert llvm.ok and llvm.seconds and llvm.seconds > 0 and "built for llvm" in llvm.nodes
    if device_count() == 0:
        assert (cuda.ok, cuda.seconds, cuda.detail) == (None, None, "skipped: no CUDA device")
        assert res.relative(cuda) is None
    else:
        assert cuda.ok and cuda.seconds and cuda.seconds > 0
    # the VDLA row's cycles are the golden simulator's, counted at the configuration's clock
    job = run_job(model, "fsim", Config(), reduced=True, check_fp32=False)
    assert vdla.ok and vdla.cycles == job.total_cycles > 0 and vdla.clock_mhz == Config().clock_mhz
    assert vdla.seconds is not None and vdla.seconds >= vdla.cycles / (vdla.clock_mhz * 1e6)
    assert res.relative(llvm) == 1.0 and res.relative(vdla) == pytest.approx(llvm.seconds / vdla.seconds)
    assert res.ok


def test_cli_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "resnet_block", "--reduced", "--compare", "-q"]) == 0
    table = capsys.readouterr().out
    for line in ("llvm   float32   this CPU", "vdla   int8      VDLA default", "result: PASS"):
        assert line in table
    assert ("skipped: no CUDA device" in table) == (device_count() == 0)
    assert main(["run", "resnet_block", "--reduced", "--compare", "-q", "--json", "--config", "small"]) == 0
    d = json.loads(capsys.readouterr().out)
    rows = {r["target"]: r for r in d["rows"]}
    assert d["ok"] and set(rows) == {"llvm", "cuda", "vdla"}
    assert rows["vdla"]["clock_mhz"] == preset("small").clock_mhz and rows["vdla"]["cycles"] > 0
    assert rows["llvm"]["speedup_vs_llvm"] == 1.0


def test_compiled_model_file_is_refused(tmp_path: object) -> None:
    from vdla.compiler.graph.build import build_model
    from vdla.compiler.graph.zoo import load_model

    path = f"{tmp_path}/m.vdla"
    build_model(load_model("mlp", reduced=True), Config()).save(path)
    with pytest.raises(GraphError, match="compiled VDLA model .* give the float model"):
        compare(path)
    with pytest.raises(GraphError, match="unknown model 'nosuch'"):
        compare("nosuch")
