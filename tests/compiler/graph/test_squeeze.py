"""Squeeze-excite on the packed int8 layout (:mod:`vdla.compiler.graph.squeeze`): the packed pool
and multiply against the unpacked chains they replace, and an SE block as PyTorch's exporter
writes it (GlobalAveragePool, 1x1 Conv + Relu, 1x1 Conv + HardSigmoid, Mul) at opsets 13-21 on
VDLA: every conv on the core, two host steps per block that never unpack, bit-exact against
the int8 reference, the float graph against onnxruntime, and the int8 tensors' SNR.

Random inputs come from ``np.random.default_rng(SEED)``; the seed is printed.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.graph import int8

from vdla.compiler.graph import GraphError
from vdla.compiler.graph.ops.registry import get_op
from vdla.compiler.targets.vdla.packing import pack_activation, unpack_activation

SEED = 35


def _op(name: str, attrs: dict, *xs: np.ndarray) -> np.ndarray:
    return get_op(name).compute(attrs, list(xs))


def _chain_quant(v: np.ndarray, scale: float) -> np.ndarray:
    return _op("quantize", {"scale": scale, "zero_point": 0, "dtype": "int8"}, v)


@pytest.mark.parametrize("c, h", [(16, 7), (40, 14), (96, 1)])
def test_mul_packed_is_the_unpacked_chain_exactly(c, h):
    print("seed", SEED)
    rng = np.random.default_rng(SEED)
    x, gate = int8(rng, (1, c, h, h), -127, 127), int8(rng, (1, c, 1, 1), 0, 127)
    sa, sb, so = 2.0**-5, 2.0**-7, 2.0**-6
    want = _chain_quant(_op("mul", {}, _op("dequantize", {"scale": sa, "zero_point": 0}, x),
                            _op("dequantize", {"scale": sb, "zero_point": 0}, gate)), so)
    got = _op("mul_packed", {"a_scale": sa, "b_scale": sb, "out_scale": so}, pack_activation(x, 1, 16, pad=True),
              pack_activation(gate, 1, 16, pad=True))
    np.testing.assert_array_equal(unpack_activation(got, x.shape), want)


@pytest.mark.parametrize("c, h", [(16, 7), (40, 14), (576, 7)])
def test_global_avg_pool_packed_is_the_exact_mean_quantised(c, h):
    print("seed", SEED)
    rng = np.random.default_rng(SEED)
    x = int8(rng, (1, c, h, h), -127, 127)
    si, so = 2.0**-4, 2.0**-6
    got = unpack_activation(_op("global_avg_pool2d_packed", {"in_scale": si, "out_scale": so},
                                pack_activation(x, 1, 16, pad=True)), (1, c, 1, 1))
    exact = x.astype(np.float64).sum(axis=(2, 3), keepdims=True) * si / (h * h)
    np.testing.assert_array_equal(got, np.clip(np.rint(exact.astype(np.float32) / np.float32(so)), -128, 127))
    # and the float32 chain it replaces, to within one step of the int8 grid (its mean rounds in float32)
    chain = _chain_quant(_op("global_avg_pool2d", {}, _op("dequantize", {"scale": si, "zero_point": 0}, x)), so)
    assert int(np.abs(got.astype(np.int32) - chain).max()) <= 1


def test_packed_ops_reject_bad_operands():
    from vdla.compiler.graph.types import TensorType

    with pytest.raises(GraphError, match="global_avg_pool2d_packed needs a packed int8"):
        get_op("global_avg_pool2d_packed").infer({"in_scale": 1.0, "out_scale": 1.0},
                                                 [TensorType((1, 16, 4, 4), "int8")])
    with pytest.raises(GraphError, match="mul_packed needs a packed int8 tensor"):
        get_op("mul_packed").infer({"a_scale": 1.0, "b_scale": 1.0, "out_scale": 1.0},
                                   [TensorType((1, 2, 4, 4, 1, 16), "int8"), TensorType((1, 3, 1, 1, 1, 16), "int8")])


def se_block(opset: int, c: int = 40, size: int = 14):
    """conv 1x1 + ReLU (VDLA), then squeeze-excite as torch.onnx writes torchvision's
    SqueezeExcitation, then a 1x1 conv."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto
    from onnx import helper as oh
    from onnx import numpy_helper as onh

    rng = np.random.default_rng(SEED)
    inits, nodes = [], []

    def conv(x: str, cin: int, cout: int, name: str) -> str:
        inits.append(onh.from_array((rng.standard_normal((cout, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32),
                                    f"{name}.w"))
        inits.append(onh.from_array(rng.normal(0, 0.1, cout).astype(np.float32), f"{name}.b"))
        nodes.append(oh.make_node("Conv", [x, f"{name}.w", f"{name}.b"], [name]))
        return name

    nodes.append(oh.make_node("Relu", [conv("x", 16, c, "pw")], ["pw.relu"]))
    nodes.append(oh.make_node("GlobalAveragePool", ["pw.relu"], ["se.pool"]))
    nodes.append(oh.make_node("Relu", [conv("se.pool", c, 16, "se.fc1")], ["se.relu"]))
    nodes.append(oh.make_node("HardSigmoid", [conv("se.relu", 16, c, "se.fc2")], ["se.gate"], alpha=1 / 6, beta=0.5))
    nodes.append(oh.make_node("Mul", ["pw.relu", "se.gate"], ["se.scale"]))
    out = conv("se.scale", c, 24, "proj")
    graph = oh.make_graph(nodes, f"se-{opset}", [oh.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, size, size])],
                          [oh.make_tensor_value_info(out, TensorProto.FLOAT, [1, 24, size, size])], inits)
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize("opset", [13, 18, 21])
def test_squeeze_excite_block_on_vdla(opset):
    ort = pytest.importorskip("onnxruntime")
    from vdla.compiler.graph import run
    from vdla.compiler.graph.executor import compile_model
    from vdla.compiler.graph.models import sample_input
    from vdla.compiler.graph.onnx_import import from_onnx
    from vdla.compiler.graph.passes import prepare, simplify
    from vdla.compiler.graph.quantize import QConfig, layer_snr, quantize
    from vdla.compiler.graph.zoo import _ALL_P
    from vdla.config import preset

    print("seed", SEED, "opset", opset)
    model = se_block(opset)
    g = from_onnx(model)
    x = sample_input(g, SEED)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(run(g, x)[0], sess.run(None, x)[0], rtol=1e-4, atol=1e-5)  # the import
    cfg, q = preset("default"), QConfig(skip_conv=(), int8_shortcut=True)
    cal = sample_input(g, 100, count=2)
    m = compile_model(prepare(g, cal, cfg, q, _ALL_P), cfg)
    rows = {name: (op, target) for name, op, target, _ in m.summary()}
    host = sorted(op for op, target in rows.values() if target not in ("vdla", "view"))
    # the input's quantize+pack, the squeeze and the excite on packed int8, the output's unpack
    assert host == ["global_avg_pool2d_packed", "mul_packed", "quantize+pack", "unpack+dequantize"], rows
    assert sum(t == "vdla" for _, t in rows.values()) == 4  # pw, fc1, fc2 (with the gate), proj
    res = m.run(x, reference=True)
    assert all(r.exact is not False for r in res.layers)
    gs = simplify(g)
    snr = dict((v, db) for v, _, db in layer_snr(gs, quantize(gs, cal, q), cal[0]))
    assert min(snr.values()) > 15, snr
