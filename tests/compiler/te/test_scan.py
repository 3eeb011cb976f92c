"""``te.scan``: recurrences over a time axis (cumulative sums, the paper's LSTM cell)."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler import build, lower, te
from vdla.compiler.te import TensorError


def _cumsum(m: object = None, n: object = None):  # type: ignore[no-untyped-def]
    m = te.var("m") if m is None else m
    n = te.var("n") if n is None else n
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    update = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    return X, init, update, te.scan(init, update, state, inputs=[X])


def test_cumsum_symbolic_shape() -> None:
    X, _, _, res = _cumsum()
    s = te.create_schedule(res.op)
    text = str(lower(s, [X, res]))
    assert "for (scan.t, 1, (m - 1))" in text
    f = build(s, [X, res])
    for shape in ((7, 5), (1, 3), (30, 33)):
        x = np.random.default_rng(0).standard_normal(shape).astype("float32")
        y = np.zeros_like(x)
        f(x, y)
        np.testing.assert_allclose(y, np.cumsum(x, axis=0), rtol=1e-4, atol=1e-5)


def test_scheduled_update_vectorized_and_consumer() -> None:
    X, _, update, res = _cumsum(20, 37)
    total = te.compute((37,), lambda i: res[19, i] * 2.0, name="last")
    s = te.create_schedule(total.op)
    _, i = s[update].op.axis
    _, vi = s[update].split(i, factor=8)
    s[update].vectorize(vi)
    f = build(s, [X, total])
    x = np.random.default_rng(1).standard_normal((20, 37)).astype("float32")
    out = np.zeros(37, "float32")
    f(x, out)
    np.testing.assert_allclose(out, 2 * x.sum(axis=0), rtol=1e-4, atol=1e-4)


def test_two_step_recurrence_fibonacci_int() -> None:
    """init fills two steps; update reads t-1 and t-2."""
    T = 12
    state = te.placeholder((T, 3), "int64", name="state")
    init = te.compute((2, 3), lambda t, i: (i + 1).astype("int64"), name="init")
    update = te.compute((T, 3), lambda t, i: state[t - 1, i] + state[t - 2, i], name="update")
    res = te.scan(init, update, state)
    f = build(te.create_schedule(res.op), [res])
    y = np.zeros((T, 3), "int64")
    f(y)
    want = np.zeros((T, 3), "int64")
    want[0] = want[1] = [1, 2, 3]
    for t in range(2, T):
        want[t] = want[t - 1] + want[t - 2]
    np.testing.assert_array_equal(y, want)


def lstm(num_step: int, batch: int, hidden: int):  # type: ignore[no-untyped-def]
    """The LSTM of TVM's ``apps/topi_recipe/rnn/lstm.py`` (input projection precomputed)."""
    Xi2h = te.placeholder((num_step, 4, batch, hidden), name="Xi2h")
    Wh2h = te.placeholder((4, hidden, hidden), name="Wh2h")
    s_state_h = te.placeholder((num_step, batch, hidden), name="s_state_h")
    s_state_c = te.placeholder((num_step, batch, hidden), name="s_state_c")
    s_init_c = te.compute((1, batch, hidden), lambda *i: 0.0, name="init_c")
    s_init_h = te.compute((1, batch, hidden), lambda *i: 0.0, name="init_h")
    k = te.reduce_axis((0, hidden), name="ki2h")
    s_h2h = te.compute(
        (num_step, 4, batch, hidden),
        lambda t, x, i, j: te.sum(s_state_h[t - 1, i, k] * Wh2h[x, j, k], axis=k),
        name="s_h2h",
    )
    gates = te.compute(Xi2h.shape, lambda t, x, i, j: Xi2h[t, x, i, j] + s_h2h[t, x, i, j], name="gates")
    gshape = (num_step, batch, hidden)
    in_gate = te.compute(gshape, lambda t, i, j: te.sigmoid(gates[t, 0, i, j]), name="in_gate")
    in_transform = te.compute(gshape, lambda t, i, j: te.tanh(gates[t, 1, i, j]), name="in_transform")
    forget_gate = te.compute(gshape, lambda t, i, j: te.sigmoid(gates[t, 2, i, j]), name="forget_gate")
    out_gate = te.compute(gshape, lambda t, i, j: te.sigmoid(gates[t, 3, i, j]), name="out_gate")
    next_c = te.compute(
        gshape,
        lambda t, i, j: forget_gate[t, i, j] * s_state_c[t - 1, i, j] + in_gate[t, i, j] * in_transform[t, i, j],
        name="next_c",
    )
    next_h = te.compute(gshape, lambda t, i, j: out_gate[t, i, j] * te.tanh(next_c[t, i, j]), name="next_h")
    update_c = te.compute(gshape, lambda *i: next_c[i], name="update_c")
    update_h = te.compute(gshape, lambda *i: next_h[i], name="update_h")
    scan_h, scan_c = te.scan(
        [s_init_h, s_init_c], [update_h, update_c], [s_state_h, s_state_c], inputs=[Xi2h], name="lstm_scan"
    )
    stages = dict(gates=gates, in_gate=in_gate, in_transform=in_transform, forget_gate=forget_gate,
                  out_gate=out_gate, s_h2h=s_h2h)  # fmt: skip
    return Xi2h, Wh2h, scan_h, scan_c, stages


def lstm_ref(xi2h: np.ndarray, wh2h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    def sig(v: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-v))

    T, _, B, H = xi2h.shape
    h = np.zeros((T, B, H), np.float64)
    c = np.zeros((T, B, H), np.float64)
    for t in range(1, T):
        g = xi2h[t] + np.einsum("ik,xjk->xij", h[t - 1], wh2h)
        c[t] = sig(g[2]) * c[t - 1] + sig(g[0]) * np.tanh(g[1])
        h[t] = sig(g[3]) * np.tanh(c[t])
    return h, c


@pytest.mark.parametrize("fused", [False, True])
def test_lstm_against_numpy(fused: bool) -> None:
    T, B, H = 6, 2, 20
    Xi2h, Wh2h, scan_h, scan_c, st = lstm(T, B, H)
    s = te.create_schedule([scan_h.op])
    if fused:  # inline the element-wise gates; vectorise the recurrent matmul's j axis
        for name in ("gates", "in_gate", "in_transform", "forget_gate", "out_gate"):
            s[st[name]].compute_inline()
        h2h = s[st["s_h2h"]]
        _, _, _, j = h2h.op.axis
        (kk,) = h2h.op.reduce_axis
        jo, ji = h2h.split(j, factor=8)
        h2h.reorder(jo, kk, ji)
        h2h.vectorize(ji)
    f = build(s, [Xi2h, Wh2h, scan_h, scan_c])
    rng = np.random.default_rng(3)
    xi = (rng.standard_normal((T, 4, B, H)) * 0.5).astype("float32")
    w = (rng.standard_normal((4, H, H)) * 0.3).astype("float32")
    h = np.zeros((T, B, H), "float32")
    c = np.zeros((T, B, H), "float32")
    f(xi, w, h, c)
    hr, cr = lstm_ref(xi, w)
    np.testing.assert_allclose(h, hr, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c, cr, rtol=1e-4, atol=1e-5)


def test_scan_errors() -> None:
    X = te.placeholder((5, 4), name="X")
    state = te.placeholder((5, 4), name="state")
    init = te.compute((1, 3), lambda _, i: X[0, i], name="init")
    update = te.compute((5, 4), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    with pytest.raises(TensorError, match="dimension 1"):
        te.scan(init, update, state)
    init = te.compute((1, 4), lambda _, i: X[0, i], name="init")
    with pytest.raises(TensorError, match="same number of tensors"):
        te.scan([init], [update, update], [state])
    with pytest.raises(TensorError, match="placeholder"):
        te.scan(init, update, init)
    res = te.scan(init, update, state)
    s = te.create_schedule(res.op)
    with pytest.raises(ValueError, match="scan"):
        s[res].vectorize(update.op.axis[0])
    s[update].compute_inline()
    with pytest.raises(ValueError, match="cannot be inlined"):
        lower(s, [X, res])
