"""The cuda cost model: GPU features of the loop IR (checked against the build and ptxas), and the
XGBoost rank model learning a GPU-shaped cost surface.

No GPU here, so the labels are a PROXY, not measurements: ``data/cuda_proxy_points.json`` holds
72 points of three ResNet-18-shaped conv2d_nchw.cuda tasks proven by ptxas (sm_90), their
features and ptxas's registers and spills, labelled by the documented analytic latency model
of :mod:`cuda_proxy` (``python tests/compiler/autotvm/cuda_proxy.py`` writes it again). The
model must rank held-out points and a held-out layer's points by it (Spearman's rho)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
from support.cuda import needs_ptxas

from vdla.compiler.autotvm import measure_cuda as M
from vdla.compiler.autotvm.features import GPU_FEATURES, REGISTERS_AT, config_features, note_registers
from vdla.compiler.autotvm.measure import LocalBuilder
from vdla.compiler.autotvm.task import create
from vdla.compiler.autotvm.tuner.xgb_tuner import _PARAMS

_spec = importlib.util.spec_from_file_location("cuda_proxy", Path(__file__).with_name("cuda_proxy.py"))
proxy = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(proxy)  # type: ignore[union-attr]
TASKS = json.loads(proxy.DATA.read_text())["tasks"]


def _xy(task: dict, knobs_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    X = np.array([p["features"] for p in task["points"]], np.float32)
    if knobs_only:
        X = X[:, REGISTERS_AT + 1:]
    y = np.array([task["flop"] / p["proxy_s"] for p in task["points"]])
    return X, y / y.max()  # each point's share of its task's best, as the tuner labels them


def _rho(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def _fit(X: np.ndarray, y: np.ndarray) -> object:
    import xgboost as xgb

    return xgb.train(dict(_PARAMS, seed=0), xgb.DMatrix(X, label=y), num_boost_round=60)


def _predict(model: object, X: np.ndarray) -> np.ndarray:
    import xgboost as xgb

    return model.predict(xgb.DMatrix(X))  # type: ignore[attr-defined]


def _pooled(knobs_only: bool) -> float:
    """Mean over 3 splits of the per-task rho on a third of the points, trained on the rest (all tasks)."""
    data = [_xy(t, knobs_only) for t in TASKS]
    X, y = np.concatenate([d[0] for d in data]), np.concatenate([d[1] for d in data])
    which = np.concatenate([[k] * len(d[1]) for k, d in enumerate(data)])
    rhos = []
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(len(y))
        tr, te = perm[: 2 * len(y) // 3], perm[2 * len(y) // 3:]
        p = _predict(_fit(X[tr], y[tr]), X[te])
        rhos.append(np.mean([_rho(p[which[te] == k], y[te][which[te] == k]) for k in range(len(data))]))
    return float(np.mean(rhos))


def test_the_model_ranks_held_out_points() -> None:
    pytest.importorskip("xgboost")
    itervar, knobs = _pooled(False), _pooled(True)
    assert itervar >= 0.75, itervar  # 0.86 when recorded; knob values alone: 0.80
    assert itervar > knobs - 0.02


def test_the_model_transfers_to_a_layer_it_never_saw() -> None:
    """Trained on two layers' points (XGBTuner's transfer learning), it ranks the third's."""
    pytest.importorskip("xgboost")
    for k, task in enumerate(TASKS):
        rest = [_xy(t) for j, t in enumerate(TASKS) if j != k]
        model = _fit(np.concatenate([r[0] for r in rest]), np.concatenate([r[1] for r in rest]))
        X, y = _xy(task)
        assert _rho(_predict(model, X), y) >= 0.6, task["layer"]  # 0.72-0.86 when recorded


def test_the_data_set_is_what_the_features_compute_today() -> None:
    """The recorded features are those of this code (else: regenerate with cuda_proxy.py)."""
    t = TASKS[2]
    task = create("conv2d_nchw.cuda", t["args"], "cuda -arch=sm_90")
    for p in t["points"][:2]:
        note_registers(task, p["index"], p["registers"])
        got = config_features(task, task.config_space.get(p["index"]))
        np.testing.assert_allclose(got, p["features"], rtol=1e-5, atol=1e-5)
        assert proxy.raw_gpu(task, task.config_space.get(p["index"])) == p["raw"]


@needs_ptxas
def test_gpu_features_agree_with_the_build_and_ptxas() -> None:
    task = create("conv2d_nchw.cuda", [[1, 16, 14, 14], [16, 16, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1]],
                  "cuda -arch=sm_80")
    cfg = task.config_space.get(task.fallback().index)
    b = M.build_one(None, task.name, task.args, task.target, cfg.to_json_dict(), LocalBuilder(60))
    assert isinstance(b, M.CudaBuild)
    k = b.kernels[0]
    start = REGISTERS_AT + 1 - len(GPU_FEATURES)
    before = dict(zip(GPU_FEATURES, config_features(task, cfg)[start:REGISTERS_AT + 1]))
    M.note_builds([M.MeasureInput(task, cfg)], [b])
    g = dict(zip(GPU_FEATURES, config_features(task, cfg)[start:REGISTERS_AT + 1]))
    assert g["threads"] == pytest.approx(math.log2(1 + k.threads))
    assert g["blocks"] == pytest.approx(math.log2(1 + math.prod(k.grid)))
    assert g["shared_bytes"] == pytest.approx(math.log2(1 + k.shared_bytes))
    assert g["registers"] == k.registers  # ptxas's count once built; an estimate before
    assert before["registers"] != k.registers or before["registers"] == g["registers"]


def test_xgb_tuner_plans_a_cuda_task_from_its_records(dask_client) -> None:  # type: ignore[no-untyped-def]
    """XGBTuner on a cuda task: fit on 24 recorded points (PROXY costs), anneal with the features
    computed on the Dask workers, and plan unmeasured points the template accepts."""
    pytest.importorskip("xgboost")
    from vdla.compiler.autotvm.features import instantiable
    from vdla.compiler.autotvm.measure import MeasureInput, MeasureResult
    from vdla.compiler.autotvm.tuner import XGBTuner

    t = TASKS[2]
    task = create("conv2d_nchw.cuda", t["args"], "cuda -arch=sm_90")
    recs = []
    for p in t["points"]:
        note_registers(task, p["index"], p["registers"])
        recs.append((MeasureInput(task, task.config_space.get(p["index"])), MeasureResult([p["proxy_s"]], 0, 0.0, 0.0)))
    tun = XGBTuner(task, plan_size=4, sa_chains=4, sa_steps=3, seed=0)
    tun._client = dask_client  # as tune() sets it from the measure option
    tun.load_history(recs)
    assert tun.fits == 1 and tun.prefetched >= 4  # the annealer's points' features came from the workers
    batch = tun.next_batch(4)
    assert len(batch) == 4 and all(c.index not in {p["index"] for p in t["points"]} for c in batch)
    assert all(instantiable(task, c) for c in batch)
    # the model never plans a point the GPU would not launch (known from its loop IR)
    many = dict(task.fallback().knobs(), tile_f=[1, 1, 64, 1], tile_y=[2, 1, 4, 1], tile_x=[2, 1, 4, 1])  # 1024 threads
    assert tun._gpu_valid(task.config_space.index_of(many))
    many["tile_x"] = [1, 1, 8, 1]  # 2048
    assert not tun._gpu_valid(task.config_space.index_of(many))
