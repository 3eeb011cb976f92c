"""Hard-sigmoid and hard-swish (MobileNetV3) on the integers: the patterns exporters write fold to
``hard_sigmoid`` / ``hard_swish`` (:func:`vdla.compiler.graph.quantize.fold_hard_activations`);
the quantiser runs them as an int32 gate ``clip(q + 3/s, 0, 6/s)``, the product with ``q``
(``int_hard_swish``) and a fixed-point multiply (:meth:`_Quantizer.hard`), within one int8 step
of the float function on the whole int8 grid; VDLA runs them in the producing convolution's
kernel (ADD, MAX, MIN, MUL with a copy of the accumulator, SHR), bit-exact against the int8
reference on the golden functional simulator.

The property test runs with a fixed hypothesis seed (``@seed(35)``), so a failure reproduces.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from vdla.compiler.graph import Graph, run
from vdla.compiler.graph.executor import compile_model
from vdla.compiler.graph.models import sample_input
from vdla.compiler.graph.passes import prepare, simplify
from vdla.compiler.graph.quantize import QConfig, fold_hard_activations, layer_snr, quantize, quantize_graph
from vdla.config import preset

onnx = pytest.importorskip("onnx")
from onnx import TensorProto  # noqa: E402
from onnx import helper as oh  # noqa: E402
from onnx import numpy_helper as onh  # noqa: E402

from vdla.compiler.graph.onnx_import import from_onnx  # noqa: E402

# -- the patterns ------------------------------------------------------------------------------


def _pattern(variant: str) -> Graph:
    g = Graph(variant)
    y = g.add_node("relu", [g.add_input("x", (1, 4, 3, 3))], name="y")
    three, six = g.add_const("three", np.array(3, np.float32)), g.add_const("six", np.array(6, np.float32))
    sixth = g.add_const("sixth", np.array(1 / 6, np.float32))
    if variant.startswith("hsig*x"):
        h = g.add_node("hard_sigmoid", [y], name="h", alpha=1 / 6, beta=0.5)
        out = g.add_node("mul", [y, h] if variant.endswith("xh") else [h, y], name="out")
    else:
        c = g.add_node("clip", [g.add_node("add", [y, three], name="a")], name="c", min=0.0, max=6.0)
        if variant == "relu6(x+3)/6":
            out = g.add_node("div", [c, six], name="out")
        elif variant == "relu6(x+3)*(1/6)":
            out = g.add_node("mul", [c, sixth], name="out")
        elif variant == "x*relu6(x+3)/6":
            out = g.add_node("div", [g.add_node("mul", [y, c], name="m"), six], name="out")
        else:  # relu6(x+3)*x*(1/6)
            out = g.add_node("mul", [g.add_node("mul", [c, y], name="m"), sixth], name="out")
    g.set_outputs(out)
    return g.infer_types()


@pytest.mark.parametrize("variant, op", [
    ("relu6(x+3)/6", "hard_sigmoid"), ("relu6(x+3)*(1/6)", "hard_sigmoid"), ("x*relu6(x+3)/6", "hard_swish"),
    ("relu6(x+3)*x*(1/6)", "hard_swish"), ("hsig*x-xh", "hard_swish"), ("hsig*x-hx", "hard_swish"),
])
def test_patterns_fold_to_one_node_with_the_same_values(variant, op):
    g = _pattern(variant)
    f = fold_hard_activations(g)
    assert [n.op for n in f.nodes] == ["relu", op] and f.nodes[-1].name == "out" and f.nodes[-1].inputs == ["y"]
    x = {"x": np.random.default_rng(0).uniform(-8, 8, (1, 4, 3, 3)).astype(np.float32)}
    np.testing.assert_allclose(run(f, x)[0], run(g, x)[0], atol=1e-5)


@pytest.mark.parametrize("variant", ["Min(Relu(x),6)", "Min(Max(x,0),6)", "Max(Min(x,6),0)", "Clip(0,inf)->Clip(-inf,6)"])
def test_relu6_written_with_max_and_min_folds_to_one_clip(variant):
    """ReLU6 as exporters may write it without Clip: one ``clip(0, 6)`` node the quantiser runs
    on the integers (and VDLA as MAX, MIN after the requantising shift)."""
    g = Graph(variant)
    x = g.add_input("x", (1, 4, 3, 3))
    six, zero = g.add_const("six", np.array(6, np.float32)), g.add_const("zero", np.array(0, np.float32))
    if variant == "Min(Relu(x),6)":
        out = g.add_node("minimum", [g.add_node("relu", [x], name="r"), six], name="out")
    elif variant == "Min(Max(x,0),6)":
        out = g.add_node("minimum", [g.add_node("maximum", [x, zero], name="r"), six], name="out")
    elif variant == "Max(Min(x,6),0)":
        out = g.add_node("maximum", [g.add_node("minimum", [x, six], name="r"), zero], name="out")
    else:
        out = g.add_node("clip", [g.add_node("clip", [x], name="r", min=0.0)], name="out", max=6.0)
    g.set_outputs(out)
    f = fold_hard_activations(g.infer_types())
    assert [(n.op, n.inputs, n.attrs) for n in f.nodes] == [("clip", ["x"], {"min": 0.0, "max": 6.0})]
    xv = {"x": np.random.default_rng(1).uniform(-9, 9, (1, 4, 3, 3)).astype(np.float32)}
    np.testing.assert_array_equal(run(f, xv)[0], run(g, xv)[0])


def test_a_pattern_whose_inner_value_has_another_reader_stays():
    g = _pattern("x*relu6(x+3)/6")
    g.set_outputs("out", "c")  # the clip is read outside the pattern
    assert [n.op for n in fold_hard_activations(g).nodes] == [n.op for n in g.nodes]


# -- the integer form against the float function, on the int8 grid -----------------------------


def _identity_conv(op: str, alpha: float = 1 / 6, beta: float = 0.5) -> Graph:
    """x -> 1x1 conv with weight 1 (its output is x on the int8 grid) -> op."""
    g = Graph(op)
    x = g.add_input("x", (1, 1, 1, 255))
    c = g.add_node("conv2d", [x, g.add_const("w", np.ones((1, 1, 1, 1), np.float32))], name="conv")
    attrs = {"alpha": alpha, "beta": beta} if op == "hard_sigmoid" else {}
    g.set_outputs(g.add_node(op, [c], name="act", **attrs))
    return g.infer_types()


@seed(35)
@settings(max_examples=60, deadline=None, print_blob=True)
@given(op=st.sampled_from(["hard_swish", "hard_sigmoid", "hard_sigmoid-0.2"]), kx=st.integers(-12, 3),
       dk=st.integers(-2, 3))
def test_integer_form_within_one_step_on_the_whole_int8_grid(op, kx, dk):
    """For every int8 input q at scale sx = 2**kx (and an output scale so = 2**(kx - dk) for
    hard-swish, 2**-6 .. for hard-sigmoid), the quantised graph's int8 output is within one
    output step of round(f(q sx) / so), f the float function."""
    alpha, beta = (0.2, 0.5) if op.endswith("0.2") else (1 / 6, 0.5)
    name = op.split("-")[0]
    g = _identity_conv(name, alpha, beta)
    sx = 2.0**kx
    so = 2.0 ** (kx - dk) if name == "hard_swish" else 2.0 ** (-7 + dk)
    q = np.arange(-127, 128)
    x = {"x": (q * sx).astype(np.float32).reshape(1, 1, 1, 255)}
    scales = {"x": sx, "conv": sx, "act": so}
    qg = quantize_graph(g, scales, QConfig(skip_conv=()))
    assert any(n.op == ("int_hard_swish" if name == "hard_swish" else "clip") for n in qg.nodes)
    got = run(qg, x)[0].reshape(-1)
    want = run(g, x)[0].reshape(-1)
    np.testing.assert_array_less(np.abs(got - np.clip(want, -127 * so, 127 * so)), so * 1.0001)


# -- on VDLA -----------------------------------------------------------------------------------

rng = np.random.default_rng(35)


def _conv(nodes, inits, x, cin, cout, name, k=1, groups=1):
    w = (rng.standard_normal((cout, cin // groups, k, k)) / np.sqrt(cin // groups * k * k)).astype(np.float32)
    inits += [onh.from_array(w, f"{name}.w"), onh.from_array(rng.standard_normal(cout).astype(np.float32) * 0.1,
                                                              f"{name}.b")]
    nodes.append(oh.make_node("Conv", [x, f"{name}.w", f"{name}.b"], [name], pads=[k // 2] * 4, group=groups))
    return name


def _hswish(nodes, inits, x, name, form):
    if form == "HardSwish":
        nodes.append(oh.make_node("HardSwish", [x], [name]))
    elif form == "HardSigmoid*x":
        nodes.append(oh.make_node("HardSigmoid", [x], [f"{name}.h"], alpha=1 / 6, beta=0.5))
        nodes.append(oh.make_node("Mul", [x, f"{name}.h"], [name]))
    else:  # x * clip(x + 3, 0, 6) / 6, as older exports write it
        inits += [onh.from_array(np.array(v, np.float32), f"{name}.{k}") for k, v in (("3", 3), ("0", 0), ("6", 6))]
        nodes += [oh.make_node("Add", [x, f"{name}.3"], [f"{name}.a"]),
                  oh.make_node("Clip", [f"{name}.a", f"{name}.0", f"{name}.6"], [f"{name}.c"]),
                  oh.make_node("Mul", [x, f"{name}.c"], [f"{name}.m"]),
                  oh.make_node("Div", [f"{name}.m", f"{name}.6"], [name])]
    return name


def mobilenet_v3_block(form: str, opset: int, c: int = 16, size: int = 8):
    """MobileNetV3's inverted residual with hard-swish: stem conv (float, the first), expand 1x1 +
    hard-swish, depthwise 3x3 + hard-swish, project 1x1, residual add, then a 1x1 conv +
    hard-sigmoid (a gate, as squeeze-excite ends) and a last 1x1 conv."""
    nodes, inits = [], []
    s = _hswish(nodes, inits, _conv(nodes, inits, "x", 8, c, "stem", 3), "stem.hs", form)
    e = _hswish(nodes, inits, _conv(nodes, inits, s, c, 4 * c, "exp"), "exp.hs", form)
    d = _hswish(nodes, inits, _conv(nodes, inits, e, 4 * c, 4 * c, "dw", 3, groups=4 * c), "dw.hs", form)
    p = _conv(nodes, inits, d, 4 * c, c, "proj")
    nodes.append(oh.make_node("Add", [s, p], ["add"]))
    g1 = _conv(nodes, inits, "add", c, c, "gate")
    nodes.append(oh.make_node("HardSigmoid", [g1], ["gate.hsig"], alpha=1 / 6, beta=0.5))
    out = _conv(nodes, inits, "gate.hsig", c, c, "last")
    graph = oh.make_graph(nodes, f"mnv3-{form}", [oh.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, size, size])],
                          [oh.make_tensor_value_info(out, TensorProto.FLOAT, [1, c, size, size])], inits)
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)])


CASES = [("HardSwish", 14, "default"), ("HardSigmoid*x", 13, "default"), ("x*relu6(x+3)/6", 13, "default"),
         ("HardSwish", 20, "default"), ("HardSwish", 17, "small"), ("x*relu6(x+3)/6", 21, "batch2")]


@pytest.mark.parametrize("form, opset, cfg", CASES, ids=[f"{f}-op{o}-{c}" for f, o, c in CASES])
def test_mobilenet_v3_block_on_vdla_bit_exact(form, opset, cfg, tmp_path):
    model = mobilenet_v3_block(form, opset)
    onnx.checker.check_model(model)
    g = from_onnx(model)
    config = preset(cfg)
    batch = config.batch
    if batch > 1:
        g.inputs["x"] = type(g.inputs["x"])((batch, *g.inputs["x"].shape[1:]), "float32")
        g.infer_types()
    cal = sample_input(g, 100, count=2)
    m = compile_model(prepare(g, cal, config, QConfig(int8_shortcut=True)), config)
    rows = {name: (op, target, why) for name, op, target, why in m.summary()}
    hard = [name for name, (op, _, _) in rows.items() if "int_hard_swish" in op]
    assert len(hard) == 2 and all(rows[h][1] == "vdla" for h in hard), rows  # exp and dw
    assert rows["gate.hsig.requant"][1] == "vdla" and "clip+mul" in rows["gate.hsig.requant"][0]
    macs = {n: k.macs for n, k in m.kernels.items()}
    on = sum(v for n, v in macs.items() if m.kernels[n].target == "vdla")
    stem = next(v for n, v in macs.items() if n.startswith("stem"))
    assert on == sum(macs.values()) - stem  # every conv but the first (float, by policy) on VDLA
    assert not [why for _, _, why in rows.values() if why.startswith("fallback")]
    x = sample_input(g, 3)
    res = m.run(x, reference=True)
    assert all(r.exact is not False for r in res.layers)
    assert all(r.exact and r.max_err == 0 for r in res.layers if r.target == "vdla")
    if form == "HardSwish" and cfg == "default" and opset == 14:  # the gate's chain through a model file
        back = type(m).load(m.save(tmp_path / "mnv3.vdla"))
        assert [k.chain.ops for k in back.kernels.values() if k.chain] == [k.chain.ops for k in m.kernels.values()
                                                                            if k.chain]
        np.testing.assert_array_equal(back.run(x).outputs[0], res.outputs[0])
    # and the int8 graph stays close to the float one, layer by layer (on a calibration input:
    # the quantisation's own error, not a range the two calibration inputs did not see)
    gs = simplify(g)
    snr = dict((v, db) for v, _, db in layer_snr(gs, quantize(gs, cal, QConfig(int8_shortcut=True)), cal[0]))
    assert min(snr[v] for v in ("exp.hs", "dw.hs", "gate.hsig")) > 20, snr


@pytest.mark.parametrize("by, target, why", [
    ("scalar", "vdla", "int32 ALU op after a VDLA producer"),
    ("tensor", "cpu", "an int32 mul by a tensor (the ALU multiplies by an immediate)"),
])
def test_partition_puts_an_int32_mul_on_vdla_only_by_a_scalar(by, target, why):
    from vdla.compiler.graph.partition import PartitionPolicy, partition

    r = np.random.default_rng(0)
    g = Graph("mul")
    g.add_input("x", (1, 16, 4, 4), "int8")
    w = g.add_const("w", r.integers(-127, 128, (16, 16, 1, 1)).astype(np.int8))
    y = g.add_node("conv2d", ["x", w], name="conv")
    k = g.add_const("k", np.array(3, np.int32) if by == "scalar" else r.integers(-3, 4, (1, 16, 4, 4)).astype(np.int32))
    g.set_outputs(g.add_node("requantize", [g.add_node("mul", [y, k], name="mul")], name="out", shift=4))
    p = partition(g.infer_types(), PartitionPolicy(skip_first_conv=False))
    assert (p.node("mul").target, p.node("mul").notes["reason"]) == (target, why)
