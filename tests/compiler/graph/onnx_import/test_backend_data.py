"""The models the onnx package ships as backend test data: PyTorch's single-layer exports
(pytorch-converted, pytorch-operator) and simple models, each with its recorded inputs and
outputs, and the nine model-zoo architectures (AlexNet, DenseNet-121, Inception v1/v2,
ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512; their weights are ConstantOfShape
nodes, replaced here by seeded random ones so the comparison with onnxruntime means
something). What stays unsupported is listed with the reason the importer gives."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import numpy_helper  # noqa: E402
from support.onnx_models import reference  # noqa: E402

from vdla.compiler.graph import GraphError, passes, run  # noqa: E402
from vdla.compiler.graph.onnx_import import from_onnx  # noqa: E402

DATA = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data"
NODE_SETS = ("pytorch-converted", "pytorch-operator", "simple")

#: models the importer refuses, with the message it gives (a regex)
REFUSED = {
    "test_expand_shape_model1": "Expand .*the shape \\(input 1\\) must be a constant",
    "test_expand_shape_model2": "Expand .*the shape \\(input 1\\) must be a constant",
    "test_expand_shape_model3": "Expand .*the shape \\(input 1\\) must be a constant",
    "test_expand_shape_model4": "Expand .*the shape \\(input 1\\) must be a constant",
    "test_gradient_of_add": "unsupported ONNX operator ai.onnx.preview.training.Gradient",
    "test_gradient_of_add_and_mul": "unsupported ONNX operator ai.onnx.preview.training.Gradient",
    "test_sequence_model8": "dynamic dimension 'n' .*--shape X=",
    **{f"test_sequence_model{k}": "unsupported ONNX operator (SequenceEmpty|SequenceConstruct|SplitToSequence)"
       for k in range(1, 8)},
    **{f"test_strnorm_model_{k}": "unsupported element type STRING" for k in (
        "monday_casesensintive_lower", "monday_casesensintive_nochangecase", "monday_casesensintive_upper",
        "monday_empty_output", "monday_insensintive_upper_twodim", "nostopwords_nochangecase")},
}
#: double inputs holding values float32 cannot represent (the recorded data is uninitialised
#: memory): the graph level computes in float32, so these differ by design
FLOAT64_GARBAGE = {"test_operator_add_broadcast", "test_operator_add_size1_right_broadcast",
                   "test_operator_add_size1_singleton_broadcast", "test_operator_addconstant"}


def _node_models():
    if not DATA.is_dir():
        return []
    return sorted(p for s in NODE_SETS for p in (DATA / s).glob("test_*") if (p / "model.onnx").is_file())


def _tensor(p: Path) -> np.ndarray:
    t = onnx.TensorProto()
    t.ParseFromString(p.read_bytes())
    return numpy_helper.to_array(t)


@pytest.mark.parametrize("d", _node_models(), ids=lambda p: p.name)
def test_shipped_model_imports_and_matches_its_recorded_outputs(d: Path):
    m = onnx.load(str(d / "model.onnx"))
    if d.name in REFUSED:
        with pytest.raises(GraphError, match=REFUSED[d.name]):
            from_onnx(m)
        return
    g = from_onnx(m)
    ds = sorted(d.glob("test_data_set_*"))[0]
    ins = [_tensor(p) for p in sorted(ds.glob("input_*.pb"))]
    outs = [_tensor(p) for p in sorted(ds.glob("output_*.pb"))]
    if d.name in FLOAT64_GARBAGE:
        assert max(np.abs(a[np.isfinite(a)]).max() for a in ins) > np.finfo(np.float32).max
        return
    with np.errstate(all="ignore"):
        got = run(g, {k: a.astype(g.inputs[k].dtype) for k, a in zip(g.inputs, ins)})
    assert len(got) == len(outs)
    for a, b in zip(got, outs):
        np.testing.assert_allclose(a, b.astype(a.dtype), rtol=1e-3, atol=1e-5, equal_nan=True)


def _randomised(path: Path, seed: int = 0):
    """The model with each ConstantOfShape weight replaced by a seeded random initializer."""
    m = onnx.load(str(path))
    rng = np.random.default_rng(seed)
    known = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    known.update({n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in m.graph.node if n.op_type == "Constant"})
    keep = []
    for n in m.graph.node:
        if n.op_type == "ConstantOfShape" and n.input[0] in known:
            shape = tuple(int(s) for s in known[n.input[0]])
            if len(shape) >= 2:  # weights: variance-preserving; 1-D (biases, batch-norm params): positive
                a = rng.uniform(-1, 1, shape) * np.sqrt(3.0 / int(np.prod(shape[1:])))
            else:
                a = rng.uniform(0.5, 1.5, shape)
            m.graph.initializer.append(numpy_helper.from_array(a.astype(np.float32), n.output[0]))
        else:
            keep.append(n)
    del m.graph.node[:]
    m.graph.node.extend(keep)
    return m


ZOO = ["squeezenet", "shufflenet", pytest.param("bvlc_alexnet", marks=pytest.mark.slow),
       pytest.param("densenet121", marks=pytest.mark.slow), pytest.param("inception_v1", marks=pytest.mark.slow),
       pytest.param("inception_v2", marks=pytest.mark.slow), pytest.param("resnet50", marks=pytest.mark.slow),
       pytest.param("vgg19", marks=pytest.mark.slow), pytest.param("zfnet512", marks=pytest.mark.slow)]


@pytest.mark.parametrize("name", ZOO)
def test_zoo_architecture_matches_onnxruntime(name: str):
    pytest.importorskip("onnxruntime")
    path = DATA / "light" / f"light_{name}.onnx"
    if not path.is_file():
        pytest.skip(f"{path} is not shipped with this onnx")
    m = _randomised(path)
    g = from_onnx(m)
    x = {k: np.random.default_rng(0).standard_normal(t.shape).astype(np.float32) for k, t in g.inputs.items()}
    want, source = reference(m, x)
    assert source == "onnxruntime"
    got = run(passes.simplify(g), x)[0]
    w = np.asarray(want[0])
    np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(w).max())))
    assert (got.reshape(len(got), -1).argmax(1) == w.reshape(len(w), -1).argmax(1)).all()


@pytest.mark.slow
@pytest.mark.parametrize("name, on_vdla", [("squeezenet", 25), ("inception_v1", 56)])
def test_zoo_architecture_on_vdla_bit_exact(name: str, on_vdla: int, tmp_path):
    """The zoo model (random weights) through ``vdla run``: its convolutions on VDLA, every
    integer node bit-exact against the int8 reference, the fp32 path against onnxruntime."""
    from vdla.compiler.graph.job import run_job

    path = DATA / "light" / f"light_{name}.onnx"
    if not path.is_file():
        pytest.skip(f"{path} is not shipped with this onnx")
    p = tmp_path / f"{name}.onnx"
    onnx.save(_randomised(path), str(p))
    res = run_job(str(p), "fsim")
    assert len(res.vdla_layers) == on_vdla
    assert res.ok and all(c.ok for c in res.checks), [c.line() for c in res.checks]
