"""LSTM, GRU and RNN (unrolled over the sequence at import) against onnxruntime: every
direction, layout 0 and 1 (onnx.reference: onnxruntime lacks batch-first kernels), initial
states, peepholes, constant sequence_lens, GRU's linear_before_reset."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import helper  # noqa: E402
from support.onnx_models import model, reference  # noqa: E402

from vdla.compiler.graph import run  # noqa: E402
from vdla.compiler.graph.onnx_import import from_onnx  # noqa: E402

T, B, IN, H = 4, 2, 5, 3  # steps, batch, input size, hidden size
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}

CASES = [
    # cell, opset, attrs, extras (B, initial_h, initial_c, P, sequence_lens), outputs
    ("LSTM", 7, {}, (), ("y", "yh", "yc")),
    ("LSTM", 14, {"direction": "reverse"}, ("B", "h0", "c0"), ("y", "yh", "yc")),
    ("LSTM", 14, {"direction": "bidirectional"}, ("B", "h0", "c0", "P", "sl"), ("y", "yh", "yc")),
    ("LSTM", 14, {"layout": 1}, ("B", "h0"), ("y", "yh")),
    ("LSTM", 7, {}, ("B",), ("", "yh")),
    ("GRU", 7, {}, ("B",), ("y", "yh")),
    ("GRU", 14, {"linear_before_reset": 1}, ("B",), ("y", "yh")),
    ("GRU", 14, {"linear_before_reset": 1, "direction": "bidirectional"}, ("B", "h0"), ("y", "yh")),
    ("GRU", 14, {"direction": "reverse", "layout": 1}, ("B", "h0"), ("y",)),
    ("RNN", 7, {"direction": "bidirectional"}, ("B", "h0"), ("y", "yh")),
    ("RNN", 14, {}, (), ("y",)),
]


@pytest.mark.parametrize("cell, opset, attrs, extras, outs", CASES,
                         ids=[f"{c[0]}-{c[1]}-{'-'.join(f'{k}{v}' for k, v in c[2].items()) or 'default'}-{k}"
                              for k, c in enumerate(CASES)])
def test_recurrent_layer_matches_onnxruntime(cell, opset, attrs, extras, outs):
    seed = len(extras) * 10 + opset
    rng = np.random.default_rng(seed)
    nd = 2 if attrs.get("direction") == "bidirectional" else 1
    ng = GATES[cell]
    layout = attrs.get("layout", 0)
    inits = {"W": rng.standard_normal((nd, ng * H, IN)).astype(np.float32) * 0.5,
             "R": rng.standard_normal((nd, ng * H, H)).astype(np.float32) * 0.5}
    names = ["x", "W", "R"]
    state = (B, nd, H) if layout else (nd, B, H)
    optional = {"B": lambda: rng.standard_normal((nd, 2 * ng * H)).astype(np.float32) * 0.3,
                "sl": lambda: np.full(B, T, np.int32),
                "h0": lambda: rng.standard_normal(state).astype(np.float32),
                "c0": lambda: rng.standard_normal(state).astype(np.float32),
                "P": lambda: rng.standard_normal((nd, 3 * H)).astype(np.float32) * 0.3}
    for k in ("B", "sl", "h0", "c0", "P"):
        if cell != "LSTM" and k in ("c0", "P"):
            continue
        if k in extras:
            inits[k] = optional[k]()
            names.append(k)
        else:
            names.append("")
    while names[-1] == "":
        names.pop()
    node = helper.make_node(cell, names, list(outs), name="rnn", hidden_size=H, **attrs)
    xshape = (B, T, IN) if layout else (T, B, IN)
    m = model([node], {"x": xshape}, opset, [o for o in outs if o], inits)
    x = rng.standard_normal(xshape).astype(np.float32)
    want, source = reference(m, {"x": x})
    # onnxruntime has no batch-first (layout 1) kernels: onnx's reference evaluator checks those
    assert source == ("onnx.reference" if layout else "onnxruntime")
    for mode in ("scan", "unroll"):
        g = from_onnx(m, rnn=mode)
        assert sum(n.op == "dense" for n in g.nodes) >= nd  # the input projection: one dense per direction
        scans = sum(n.op in ("lstm_scan", "gru_scan") for n in g.nodes)
        assert scans == (nd if mode == "scan" and cell != "RNN" and "P" not in extras else 0)
        got = run(g, x)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"seed {seed}, rnn={mode}")


@pytest.mark.parametrize("op, steps, batch, hidden, attrs", [
    ("lstm_scan", 1, 1, 4, {}), ("lstm_scan", 7, 3, 10, {}),
    ("gru_scan", 1, 2, 3, {"linear_before_reset": 0}), ("gru_scan", 6, 3, 10, {"linear_before_reset": 1})])
def test_scan_on_llvm_matches_numpy(op, steps, batch, hidden, attrs):
    """``lstm_scan`` / ``gru_scan`` built for llvm with the TE scan equal their numpy semantics."""
    from vdla.compiler.graph import Graph
    from vdla.compiler.graph.strategy import kernel_cache

    rng = np.random.default_rng(steps * 100 + hidden)
    g = Graph("lstm")
    ng = 4 if op == "lstm_scan" else 3
    g.add_input("gx", (steps, batch, ng * hidden))
    shapes = ((("r", (4 * hidden, hidden)), ("h0", (batch, hidden)), ("c0", (batch, hidden))) if op == "lstm_scan"
              else (("r", (3 * hidden, hidden)), ("rbh", (hidden,)), ("h0", (batch, hidden))))
    ins = ["gx"] + [g.add_const(nm, rng.standard_normal(s).astype(np.float32) * 0.4) for nm, s in shapes]
    g.set_outputs(g.add_node(op, ins, name="seq", **attrs))
    g.infer_types()
    k = kernel_cache("llvm").get(g.node("seq"), g)
    assert not isinstance(k, str), k
    x = rng.standard_normal((steps, batch, ng * hidden)).astype(np.float32)
    np.testing.assert_allclose(k({**g.consts, "gx": x}), run(g, x)[0], rtol=1e-5, atol=1e-6)
