"""`vdla sweep --no-synth` on a tiny grid, on a real 2-worker LocalCluster: results, cache, errors, overflow."""

from __future__ import annotations

import json

import pytest

from vdla.cli import main
from vdla.compiler.graph.job import run_job
from vdla.config import Config
from vdla.explore.space import apply
from vdla.explore.sweep import Options, pareto, run_sweep
from vdla.hardware.boards import board

BOARD = "ulx3s-25f"
MODEL = "resnet_block"  # reduced: 8x8x16, a second per point
GRID = [{}, {"block_out": 8}, {"acc_buff_size": 65536, "block_out": 8}, {"block_in": 3}, {"loop_iter_width": 2}]


@pytest.fixture(scope="module")
def first(dask_client, tmp_path_factory):  # type: ignore[no-untyped-def]
    cache = tmp_path_factory.mktemp("cache")
    opts = Options(board=BOARD, model=MODEL, reduced=True, synth=False)
    return cache, opts, run_sweep(GRID, opts, cache_dir=cache)


def test_points_ok_overflow_and_error(first):
    _, _, res = first
    ok, narrow_bram, wide_acc, bad, short_loops = res.points
    assert [p["status"] for p in res.points] == ["ok", "overflow", "overflow", "error", "fallback"]
    assert res.computed == 5 and res.cached == 0
    # the overflow names the resource and the part, from the estimate, before any model run
    assert narrow_bram["overflow"] == ["BRAM: 58 > 56 on LFE5U-25F"] and "cycles" not in narrow_bram
    assert wide_acc["overflow"][0].startswith("BRAM: ")
    # a bad point is recorded with its error; the others still ran
    assert bad["error"] == "ConfigError: block_in must be a positive power of two, got 3"
    # 2-bit loop counts: the convs' GEMM loops do not fit, the build rejects them, they run on the CPU
    assert short_loops["error"].startswith("2 layer(s) fell back to the CPU: relu1.requant: ")
    assert short_loops["vdla_layers"] == 0 and short_loops["key"] not in {p["key"] for p in pareto(res.points, "LUT")}
    assert ok["resources"]["used"] == {"LUT": 11938, "DSP": 24, "BRAM": 45}
    assert pareto(res.points, "LUT") == [ok]


def test_cycles_are_the_golden_cycle_model(first):
    """The point's cycles are what `vdla run` reports for the same Config on fsim (independent path)."""
    _, _, res = first
    ok = res.points[0]
    cfg = apply(board(BOARD).config, {})
    job = run_job(MODEL, "fsim", cfg, reduced=True, check_fp32=False)
    assert ok["cycles"] == job.total_cycles > 0
    assert ok["exact"] is True and job.ok
    assert ok["dram_bytes"] == sum(r.bytes_moved for r in job.vdla_layers)
    assert ok["latency_ms"] == pytest.approx(ok["cycles"] / (ok["clock_mhz"] * 1e3))
    assert ok["clock_mhz"] == int(ok["fmax_mhz"]) and 0 < ok["gemm_util"] <= 1


def test_rerun_hits_the_cache_and_computes_only_what_changed(first, dask_client):
    cache, opts, res = first
    again = run_sweep(GRID, opts, cache_dir=cache)
    # results come from the cache; the point that raised is tried again
    assert [p.get("cached") for p in again.points] == [True, True, True, False, True]
    assert again.points[0]["cycles"] == res.points[0]["cycles"]
    # through the scheduler's address this time (what --scheduler does)
    from vdla.cluster import close_clients

    addr = dask_client.scheduler.address
    try:
        more = run_sweep(GRID + [{"timing.gemm_latency": Config().timing.gemm_latency + 1}], opts, cache_dir=cache,
                         scheduler=addr)
    finally:
        close_clients(addr)  # before the cluster goes, or this client would try to reconnect at exit
    assert more.computed == 2 and more.points[-1]["status"] == "ok"
    # a deeper GEMM pipeline costs cycles on the cycle model, not resources in the estimate
    assert more.points[-1]["cycles"] > res.points[0]["cycles"]
    assert more.points[-1]["resources"] == res.points[0]["resources"]


def test_cli_writes_table_json_and_plot(first, tmp_path, capsys):
    cache, _, _ = first
    out, png = tmp_path / "sweep.json", tmp_path / "sweep.png"
    rc = main(["sweep", "--board", BOARD, "--model", MODEL, "--reduced", "--no-synth", "-q",
               "--vary", "block_out=4,8", "--cache", str(cache), "-o", str(out), "--plot", str(png)])
    assert rc == 0  # an overflowing point is a result, not a failure
    text = capsys.readouterr().out
    rows = text.splitlines()
    assert rows[1].split()[:2] == ["bo", "status"] and rows[3].split()[:2] == ["8", "overflow"]
    assert "BRAM: 58 > 56 on LFE5U-25F" in rows[3]
    doc = json.loads(out.read_text())
    assert doc["cached"] == 2 and [p["status"] for p in doc["points"]] == ["ok", "overflow"]
    assert doc["pareto"]["LUT"] == [doc["points"][0]["key"]]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv, words", [
    (["--vary", "blok=1"], "unknown parameter 'blok'"),
    (["--board", "nope"], "unknown board 'nope'"),
    (["--vary", "batch"], "expected NAME=V1,V2"),
])
def test_cli_bad_input(argv, words, capsys):
    assert main(["sweep", "--no-synth", *argv]) == 2
    assert words in capsys.readouterr().err


def test_cache_key_follows_the_config_and_a_model_file(tmp_path):
    from vdla.explore.sweep import point_key

    base = board(BOARD).config
    opts = Options(board=BOARD, model=str(tmp_path / "m.onnx"))
    (tmp_path / "m.onnx").write_bytes(b"one")
    k1 = point_key("src", base, {}, opts)
    assert point_key("src", base, {"block_out": base.block_out}, opts) == k1  # the same Config
    assert point_key("src", base, {"block_out": 8}, opts) != k1
    assert point_key("other sources", base, {}, opts) != k1
    (tmp_path / "m.onnx").write_bytes(b"two")
    assert point_key("src", base, {}, opts) != k1


def test_worker_killed_mid_sweep_loses_no_point(dask_client, tmp_path):
    """A worker dying under a point: the point is retried on the other worker or recorded as failed."""
    import os
    import threading

    dask_client.wait_for_workers(2, timeout=60)
    pids = list(dask_client.run(os.getpid).values())
    killer = threading.Timer(1.0, lambda: os.kill(pids[0], 9))
    grid = [{"timing.alu_latency": n} for n in range(6, 12)]
    killer.start()
    try:
        res = run_sweep(grid, Options(board=BOARD, model=MODEL, reduced=True), cache_dir=tmp_path)
    finally:
        killer.cancel()
    assert len(res.points) == len(grid)
    for p in res.points:
        assert p["status"] == "ok" or p["error"].startswith("task failed: "), p
    assert sum(p["status"] == "ok" for p in res.points) >= len(grid) - 2
    dask_client.wait_for_workers(2, timeout=60)
