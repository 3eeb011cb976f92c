"""Tuning records of llvm name the CPU that measured them (``"host"``: its name and ISA
features); applying a log measured on a CPU with other features says so once (and still uses
its schedules); the same CPU, another name with the same features, or an older record
without ``"host"``, say nothing."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import llvmlite.binding as llvm
import pytest
from support.autotvm import VDLA_DENSE

from vdla.compiler import autotvm
from vdla.compiler.autotvm.measure import MeasureInput, MeasureResult
from vdla.compiler.autotvm.record import HostMismatchWarning, decode, decode_raw, encode, host_record
from vdla.compiler.autotvm.tuning import tuning_context

MATMUL = ["matmul.x86", [16, 128, 48]]


def _line(target: str = "llvm", index: int = 1) -> str:
    """A record as `vdla tune` writes it (a made-up time; the rest is the real encoding)."""
    task = autotvm.task.create(*MATMUL, target)
    return encode(MeasureInput(task, task.config_space.get(index)), MeasureResult([1e-4], 0, 0.1, 1.0, "", "s"))


def _log(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in records))
    return path


def _apply(log: Path) -> tuple[list[warnings.WarningMessage], Any]:
    """The warnings of applying ``log`` (through ``vdla run/build --tuning-log``'s context) and what it picks."""
    task = autotvm.task.create(*MATMUL, "llvm")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tuning_context(str(log), "llvm") as ctx:
            picked = ctx.query("llvm", task.workload)
    return [w for w in caught if issubclass(w.category, HostMismatchWarning)], picked


def _other_cpu(d: dict[str, Any]) -> dict[str, Any]:
    """``d`` as measured on an AVX-512 machine (or, on one, on a machine without AVX-512)."""
    d = json.loads(json.dumps(d))
    feats = set(d["host"]["features"])
    d["host"] = {"cpu": "znver5", "features": sorted(feats ^ {"+avx512f"})}
    return d


def test_an_llvm_record_names_this_cpu_and_round_trips() -> None:
    line = _line()
    d = decode_raw(line)
    cpu, enabled = llvm.get_host_cpu_name(), {f for f in llvm.get_host_cpu_features().flatten().split(",")
                                              if f.startswith("+")}
    assert d["host"] == host_record() and d["host"]["cpu"] == cpu
    feats = d["host"]["features"]
    assert feats == sorted(feats) and set(feats) <= enabled and feats  # enabled ISA features only
    assert {"+avx2", "+fma"} & enabled <= set(feats)  # the vector ones codegen uses are kept
    assert not {f for f in feats if f.startswith(("+xsave", "+rdrnd", "+cx16", "+64bit"))}  # system ones are not
    inp, res = decode(d)
    assert inp.task.name == MATMUL[0] and inp.config.index == 1 and res.costs == [1e-4]
    assert encode(inp, res) == line  # decoded and written again: the same line, host and all


def test_records_of_the_accelerator_carry_no_host() -> None:
    task = autotvm.task.create(*VDLA_DENSE, "vdla")
    line = encode(MeasureInput(task, task.config_space.get(0)), MeasureResult([100.0], 0, 0.1, 1.0, "", "cycles"))
    assert "host" not in json.loads(line)


def test_a_log_from_another_cpu_warns_once_and_is_still_used(tmp_path: Path) -> None:
    here = json.loads(_line(index=1))
    other = _other_cpu(here)
    log = _log(tmp_path / "znver5.log", other, _other_cpu(json.loads(_line(index=2))), other)
    caught, picked = _apply(log)
    assert len(caught) == 1, [str(w.message) for w in caught]
    msg = str(caught[0].message)
    assert f"tuning log '{log}' was measured on znver5" in msg and f"this CPU is {host_record()['cpu']}" in msg
    assert "avx512f" in msg and "their timings may not carry over" in msg and "\n" not in msg
    assert ("lacks avx512f" in msg) == ("+avx512f" not in host_record()["features"])
    assert picked is not None and picked.index == 1  # the schedule is used all the same


@pytest.mark.parametrize("case", ["same host", "another name, same features", "old record", "vdla record"])
def test_no_warning(case: str, tmp_path: Path) -> None:
    d = json.loads(_line())
    if case == "another name, same features":
        d["host"]["cpu"] = "some-other-name"
    elif case == "old record":
        del d["host"]
    elif case == "vdla record":  # a host on a record of another target is not compared
        d = _other_cpu(d)
        d["target"] = "vdla"
    caught, picked = _apply(_log(tmp_path / "t.log", d))
    assert caught == []
    assert (picked is not None) == (case != "vdla record")


def test_the_committed_log_of_this_cpu_family_applies_when_no_log_is_given(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``vdla run|build --target llvm`` without ``--tuning-log``: the log named after this host's CPU
    in ``autotvm/logs`` is applied; ``--tuning-log none`` applies nothing, nor does another target."""
    from vdla.compiler.autotvm import tuning

    monkeypatch.setattr(tuning, "LOGS", tmp_path)
    task = autotvm.task.create(*MATMUL, "llvm")
    with tuning_context(None, "llvm") as ctx:  # no log for this CPU yet
        assert ctx is None
    (tmp_path / "llvm_someothercpu.log").write_text(_line(index=2) + "\n")
    assert tuning.default_log("llvm") is None  # another family's log is not this host's
    (tmp_path / f"llvm_{llvm.get_host_cpu_name()}.log").write_text(_line(index=3) + "\n")
    assert tuning.default_log("llvm") == tmp_path / f"llvm_{llvm.get_host_cpu_name()}.log"
    with tuning_context(None, "llvm") as ctx:
        assert ctx.query("llvm", task.workload).index == 3
    for log, target in (("none", "llvm"), (None, "vdla"), (None, None)):
        with tuning_context(log, target) as ctx:
            assert ctx is None
