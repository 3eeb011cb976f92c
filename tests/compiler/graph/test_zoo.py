"""What the VDLA flow offloads per model (:data:`vdla.compiler.graph.zoo.OFFLOADS`): the mobile
models and ONNX files put their first convolution and classifier on VDLA ("all"), ResNet keeps
VTA's flow ("vta"), ``--offload`` switches either way, and the partition follows."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from vdla.cli.common import add_model_arguments
from vdla.compiler.graph import GraphError, models
from vdla.compiler.graph.partition import partition
from vdla.compiler.graph.passes import simplify
from vdla.compiler.graph.quantize import quantize
from vdla.compiler.graph.zoo import OFFLOADS, load_model, quant_options


@pytest.mark.parametrize("name, mode", [("resnet18", "vta"), ("mobilenet_v1", "vta"), ("mobilenet_v2", "all"),
                                        ("shufflenet_v2", "all"), ("squeezenet1_1", "all"), ("mnasnet0_5", "all")])
def test_each_model_offloads_as_its_flow_says(name, mode):
    spec = load_model(name, reduced=True)
    for want in (mode, *(m for m in OFFLOADS if m != mode)):
        s = spec if want == mode else quant_options(spec, offload=want)
        g = simplify(s.graph)
        q = quantize(g, [models.sample_input(g, 0)], s.qconfig)
        p = partition(q, s.policy)
        first = next(n for n in p.topo_order() if n.op == "conv2d")
        dense = [n for n in p.nodes if n.op == "dense"]
        on_vdla = want == "all"
        assert (first.target == "vdla") is on_vdla, (name, want, first.notes["reason"])
        assert all((d.target == "vdla") is on_vdla for d in dense), (name, want)


def test_offload_choices_and_errors():
    p = argparse.ArgumentParser()
    add_model_arguments(p)
    choices = next(a.choices for a in p._actions if a.dest == "offload")
    assert tuple(choices) == OFFLOADS  # the CLI's choices are the library's
    with pytest.raises(GraphError, match="unknown offload 'gpu'"):
        quant_options(load_model("mobilenet_v2", reduced=True), offload="gpu")


def test_mobilenet_v3_small_runs_with_every_mac_on_vdla():
    """Hard-swish, squeeze-excite (hard-sigmoid gate) and 5x5 depthwise blocks: all on VDLA,
    bit-exact against the int8 reference, the fp32 graph against onnxruntime, SNR per int8 tensor."""
    pytest.importorskip("onnxruntime")
    from vdla.compiler.graph.job import run_job

    res = run_job("mobilenet_v3_small", "fsim", reduced=True)
    assert res.ok, [c.line() for c in res.checks]
    names = {c.name for c in res.checks if c.ok}
    assert any("onnxruntime" in n for n in names) and any("int8" in n for n in names), names
    assert res.mac_share == 1.0
    assert len(res.snr) > 40 and all(db > 0 for _, _, db in res.snr)  # every requantised tensor, none noise
    assert "MACs on VDLA: 100.0%" in res.table()


@pytest.mark.parametrize("size, packed", [(64, True), (32, False)])
def test_vta_flow_float_stem_on_the_cpus_packed_layout(size, packed):
    """VTA's flow leaves the first conv float32 on the CPU: from NCHWC_MIN_MACS on it runs on the
    llvm NCHW[x]c kernel (as a float model's convs do), below it in plain NCHW; either way the
    run matches the reference (the float nodes within fp32 tolerance, the rest bit-exact)."""
    from vdla.compiler.graph.build import build_model
    from vdla.compiler.graph.passes import NCHWC_MIN_MACS
    from vdla.config import preset

    m = build_model(load_model("resnet18", reduced=True, size=size), preset("default"))
    rows = {name: (op, target) for name, op, target, _ in m.summary()}
    stem = m.graph.node("relu1")
    macs = int(np.prod(stem.type.shape[:2])) * int(np.prod(stem.type.shape[2:])) * 3 * 49
    assert (macs >= NCHWC_MIN_MACS) is packed
    assert rows["relu1"] == (("conv2d_nchwc+relu", "llvm") if packed else ("conv2d+relu", "llvm")), rows
    res = m.run(models.sample_input(m.graph, 0), reference=True)
    assert all(r.exact is not False for r in res.layers)
