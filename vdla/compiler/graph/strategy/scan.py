"""Recurrences built with the TE ``scan``: an LSTM's (``lstm_scan``) and a GRU's (``gru_scan``)
sequence as one CPU function each (the llvm target's strategy for these two ops).

Each step's recurrent product, gates and state update are computes over the scan's state;
step 0 of the state is the initial value.
"""

from __future__ import annotations

from typing import Any

from ... import te
from ...driver import build
from ..ir import Graph, Node
from .kernel import BuiltKernel

__all__ = ["lstm", "gru"]


def lstm(node: Node, graph: Graph, target: Any, name: str) -> BuiltKernel | str:
    """``lstm_scan`` with the TE ``scan``: states h and c over T + 1 steps (step 0 the initial
    state), each step's recurrent product, gates and update as computes over the state."""
    steps, batch, g4 = graph.type_of(node.inputs[0]).shape
    hs = g4 // 4
    gx = te.placeholder((steps, batch, g4), "float32", name="gates_x")
    r = te.placeholder((g4, hs), "float32", name="r")
    h0 = te.placeholder((batch, hs), "float32", name="h0")
    c0 = te.placeholder((batch, hs), "float32", name="c0")
    s_h = te.placeholder((steps + 1, batch, hs), "float32", name="s_h")
    s_c = te.placeholder((steps + 1, batch, hs), "float32", name="s_c")
    init_h = te.compute((1, batch, hs), lambda _, i, j: h0[i, j], name="init_h")
    init_c = te.compute((1, batch, hs), lambda _, i, j: c0[i, j], name="init_c")
    k = te.reduce_axis((0, hs), name="k")
    h2h = te.compute((steps + 1, batch, g4), lambda t, i, g: te.sum(s_h[t - 1, i, k] * r[g, k], axis=k), name="h2h")
    gates = te.compute((steps + 1, batch, g4), lambda t, i, g: gx[t - 1, i, g] + h2h[t, i, g], name="gates")
    shape = (steps + 1, batch, hs)
    next_c = te.compute(shape, lambda t, i, j: te.sigmoid(gates[t, i, 2 * hs + j]) * s_c[t - 1, i, j]
                        + te.sigmoid(gates[t, i, j]) * te.tanh(gates[t, i, 3 * hs + j]), name="next_c")
    next_h = te.compute(shape, lambda t, i, j: te.sigmoid(gates[t, i, hs + j]) * te.tanh(next_c[t, i, j]),
                        name="next_h")
    # the updates are copies, so next_c (read by next_h) is stored inside the step's scope
    update_h = te.compute(shape, lambda *i: next_h[i], name="update_h")
    update_c = te.compute(shape, lambda *i: next_c[i], name="update_c")
    scan_h, scan_c = te.scan([init_h, init_c], [update_h, update_c], [s_h, s_c], inputs=[gx], name="lstm_scan")
    out = te.compute((steps, 2, batch, hs), lambda t, s, i, j: te.if_then_else(
        s == 0, scan_h[t + 1, i, j], scan_c[t + 1, i, j]), name="lstm_out")
    try:
        sched = te.create_schedule(out.op)
        func = build(sched, [gx, r, h0, c0, out], target=target, name=name)
    except Exception as e:  # a schedule or codegen limit: numpy it is
        return f"llvm build failed: {type(e).__name__}: {e}"
    return BuiltKernel("llvm", func, list(node.inputs), (steps, 2, batch, hs), "float32")


def gru(node: Node, graph: Graph, target: Any, name: str) -> BuiltKernel | str:
    """``gru_scan`` with the TE ``scan`` (see :func:`lstm`)."""
    steps, batch, g3 = graph.type_of(node.inputs[0]).shape
    hs = g3 // 3
    lbr = bool(node.attrs["linear_before_reset"])
    gx = te.placeholder((steps, batch, g3), "float32", name="gates_x")
    r = te.placeholder((g3, hs), "float32", name="r")
    rbh = te.placeholder((hs,), "float32", name="rbh")
    h0 = te.placeholder((batch, hs), "float32", name="h0")
    s_h = te.placeholder((steps + 1, batch, hs), "float32", name="s_h")
    init_h = te.compute((1, batch, hs), lambda _, i, j: h0[i, j], name="init_h")
    shape = (steps + 1, batch, hs)
    k = te.reduce_axis((0, hs), name="k")
    zr = te.compute((steps + 1, batch, 2 * hs), lambda t, i, g: te.sum(s_h[t - 1, i, k] * r[g, k], axis=k), name="zr")
    z = te.compute(shape, lambda t, i, j: te.sigmoid(gx[t - 1, i, j] + zr[t, i, j]), name="z")
    rg = te.compute(shape, lambda t, i, j: te.sigmoid(gx[t - 1, i, hs + j] + zr[t, i, hs + j]), name="reset")
    k2 = te.reduce_axis((0, hs), name="k2")
    if lbr:
        hh = te.compute(shape, lambda t, i, j: te.sum(s_h[t - 1, i, k2] * r[2 * hs + j, k2], axis=k2), name="hh")
        cand = te.compute(shape, lambda t, i, j: te.tanh(gx[t - 1, i, 2 * hs + j] + rg[t, i, j] * (hh[t, i, j] + rbh[j])),
                          name="cand")
    else:
        rh = te.compute(shape, lambda t, i, j: rg[t, i, j] * s_h[t - 1, i, j], name="rh")
        hh = te.compute(shape, lambda t, i, j: te.sum(rh[t, i, k2] * r[2 * hs + j, k2], axis=k2), name="hh")
        cand = te.compute(shape, lambda t, i, j: te.tanh(gx[t - 1, i, 2 * hs + j] + hh[t, i, j] + rbh[j]),
                          name="cand")
    update = te.compute(shape, lambda t, i, j: cand[t, i, j] + z[t, i, j] * (s_h[t - 1, i, j] - cand[t, i, j]),
                        name="update_h")
    scan_h = te.scan(init_h, update, s_h, inputs=[gx], name="gru_scan")
    out = te.compute((steps, batch, hs), lambda t, i, j: scan_h[t + 1, i, j], name="gru_out")
    try:
        func = build(te.create_schedule(out.op), [gx, r, rbh, h0, out], target=target, name=name)
    except Exception as e:  # a schedule or codegen limit: numpy it is
        return f"llvm build failed: {type(e).__name__}: {e}"
    return BuiltKernel("llvm", func, list(node.inputs), (steps, batch, hs), "float32")
