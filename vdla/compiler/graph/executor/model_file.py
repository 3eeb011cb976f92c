"""The compiled-model file format: one file per compiled model (``vdla build -o model.vdla``).

::

    "VDLAMODL" | u32 version | u32 header length | u32 crc32(rest) | JSON header | blobs

The header holds the graph (nodes, attributes, nested fused bodies), the target, the kernel
table and the offsets of the binary blobs (the graph's constants as an ``.npz`` and every VDLA
function's own versioned bytes). :func:`decode` checks magic, version, size and checksum
(the framing shared with the other formats, :mod:`vdla.runtime.container`) and rebuilds no
VDLA kernel: the instruction streams are loaded as built. ``llvm`` functions are JIT code and
``cuda`` functions live in a GPU context, so neither is serialised: the file holds the plan
(the graph after the shared passes, where each node runs) and loading builds those functions
again for the file's target (well under a second for ResNet-18's few CPU nodes of a VDLA
model; a float model's whole plan takes as long as its first compile, and no GPU is needed
to load a cuda one). :class:`.run.CompiledModel` saves and loads through here.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ....config import Config
from ....runtime import container
from ...targets.target import TargetError
from ..ir import Graph, GraphError, Node, TensorType
from ..strategy.vdla import AluChain
from .place import place
from .plan import Step

__all__ = ["MAGIC", "VERSION", "ModelFileError", "encode", "decode", "is_model_file"]

MAGIC = b"VDLAMODL"
VERSION = 1


class ModelFileError(ValueError):
    """A compiled-model file is truncated, corrupt or of another version."""


def encode(model: Any) -> bytes:
    """The bytes of a compiled model (its graph, config, kernels, functions and info)."""
    blobs: list[bytes] = []
    buf = io.BytesIO()
    consts = dict(model.graph.consts)
    for name, k in model.kernels.items():
        if k.bias_packed is not None:
            consts[f"__bias__/{name}"] = k.bias_packed
        if k.shifts_packed is not None:
            consts[f"__shifts__/{name}"] = k.shifts_packed
        if k.weight_packed is not None:
            consts[f"__weight__/{name}"] = k.weight_packed
    np.savez(buf, **{f"c{i}": a for i, a in enumerate(consts.values())})
    blobs.append(buf.getvalue())
    for f in model.functions:
        blobs.append(f.to_bytes())
    offs, pos = [], 0
    for b in blobs:
        offs.append([pos, len(b)])
        pos += len(b)
    head = {
        "format": "vdla compiled model",
        "graph": _graph_to_json(model.graph, const_names=False),
        "const_names": list(consts),
        "target": model.target,
        "config": model.config.to_dict() if model.config is not None else None,
        "config_name": model.config.name if model.config is not None else None,
        "kernels": [_kernel_to_json(k) for k in model.kernels.values()],
        "blobs": offs,
        "info": {k: v for k, v in model.info.items() if isinstance(v, int | float | str)},
    }
    return container.pack(MAGIC, VERSION, head, b"".join(blobs))


def decode(blob: bytes, source: str = "model") -> tuple[Graph, Config | None, dict[str, Step], list[Any],
                                                       dict[str, Any], str]:
    """(graph, config, kernels, functions, info, target) of a compiled model's bytes (config None for
    a float model); ModelFileError names what is wrong."""
    from ...targets.vdla.module import VDLAFileError, VDLAFunction  # noqa: I001

    head, data = container.unpack(
        blob, magic=MAGIC, version=VERSION, what="compiled vdla model", source=source, error=ModelFileError,
        payload_size=_blobs_size, version_hint="; rebuild it with `vdla build`",
    )
    try:
        blobs = [data[o : o + n] for o, n in head["blobs"]]
        if any(len(b) != n for b, (_, n) in zip(blobs, head["blobs"])):
            raise ModelFileError(f"{source}: truncated blob")
        with np.load(io.BytesIO(blobs[0]), allow_pickle=False) as z:
            arrays = [z[f"c{i}"] for i in range(len(head["const_names"]))]
        consts = dict(zip(head["const_names"], arrays))
        target = str(head.get("target", "vdla"))  # files before float models were all VDLA models
        config = _config_from_json(head) if target == "vdla" else None
        graph = _graph_from_json(head["graph"], consts)
        functions = [VDLAFunction.from_bytes(b, f"{source}: kernel {i}") for i, b in enumerate(blobs[1:])]
        kernels = {}
        for kj in head["kernels"]:
            k = _kernel_from_json(kj, consts)
            kernels[k.node] = k
    except ModelFileError:
        raise
    except (VDLAFileError, ValueError, KeyError, TypeError, IndexError, GraphError) as e:
        raise ModelFileError(f"{source}: corrupt compiled model: {type(e).__name__}: {e}") from None
    missing = [n.name for n in graph.nodes if n.name not in kernels]
    if missing:
        raise ModelFileError(f"{source}: no kernel for node(s) {', '.join(missing[:5])}")
    for f in functions:
        assert config is not None
        diff = f.config.architecture_differences(config)
        if diff:
            raise ModelFileError(f"{source}: kernel {f.name!r} was built for another configuration: {'; '.join(diff)}")
    # llvm and cuda functions are not serialisable (JIT code, a GPU context): build them here
    for k in kernels.values():
        if k.target in ("llvm", "cuda", "cpu"):  # "cpu": a host step, as files before the one executor named it
            k.target = "host"
    info = dict(head.get("info", {}))
    code_target = "llvm" if target == "vdla" else target  # a VDLA model's CPU side is built for llvm
    try:
        info["llvm_compile_s" if target == "vdla" else "compile_s"] = place(graph, kernels, code_target)
    except TargetError as e:  # a target this machine's back end does not know (an architecture ...)
        raise ModelFileError(f"{source}: compiled for {target!r}, which does not build here: {e}") from None
    return graph, config, kernels, functions, info, target


def _blobs_size(head: Mapping[str, Any]) -> int:
    """The payload bytes a model header promises: its blobs are written back to back."""
    return sum(int(n) for _, n in head["blobs"])


def is_model_file(path: str | Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(8) == MAGIC
    except OSError:
        return False


# -- serialisation helpers ----------------------------------------------------------------


def _attr_to_json(v: Any) -> Any:
    if isinstance(v, Graph):
        return {"__graph__": _graph_to_json(v, const_names=True)}
    if isinstance(v, tuple):
        return {"__tuple__": [_attr_to_json(x) for x in v]}
    if isinstance(v, np.generic):
        return v.item()
    return v


def _attr_from_json(v: Any, consts: Mapping[str, np.ndarray]) -> Any:
    if isinstance(v, dict) and "__graph__" in v:
        return _graph_from_json(v["__graph__"], consts)
    if isinstance(v, dict) and "__tuple__" in v:
        return tuple(_attr_from_json(x, consts) for x in v["__tuple__"])
    return v


def _graph_to_json(g: Graph, const_names: bool) -> dict[str, Any]:
    # inputs declared wider than computed (float64, int64): a key of their own, written only where
    # there are such inputs, so that a version-1 reader predating it still reads the file
    wide = {k: t.boundary for k, t in g.inputs.items() if t.boundary is not None}
    return {
        "name": g.name,
        "inputs": [[k, list(t.shape), t.dtype] for k, t in g.inputs.items()],
        **({"boundary": wide} if wide else {}),
        "consts": list(g.consts),
        "nodes": [
            {"name": n.name, "op": n.op, "inputs": n.inputs, "target": n.target,
             "attrs": {k: _attr_to_json(v) for k, v in n.attrs.items()},
             "notes": {k: v for k, v in n.notes.items() if isinstance(v, str | int | float | list)}}
            for n in g.nodes
        ],
        "outputs": g.outputs,
    }


def _graph_from_json(d: Mapping[str, Any], consts: Mapping[str, np.ndarray]) -> Graph:
    g = Graph(d["name"])
    boundary = d.get("boundary", {})
    for k, shape, dtype in d["inputs"]:
        g.inputs[k] = TensorType(tuple(shape), dtype, boundary.get(k))
    for k in d["consts"]:
        if k not in consts:
            raise ModelFileError(f"constant {k!r} missing")
        g.consts[k] = consts[k]
    for nd in d["nodes"]:
        attrs = {k: _attr_from_json(v, consts) for k, v in nd["attrs"].items()}
        g.nodes.append(Node(nd["name"], nd["op"], list(nd["inputs"]), attrs, nd["target"], dict(nd["notes"])))
    g.outputs = list(d["outputs"])
    return g.infer_types()


def _kernel_to_json(k: Step) -> dict[str, Any]:
    d: dict[str, Any] = {"node": k.node, "target": k.target, "reason": k.reason, "func": k.func, "macs": k.macs,
                         "host_reason": k.host_reason, "offset": k.offset}
    if k.chain is not None:
        c = k.chain
        d["chain"] = {"anchor": c.anchor, "data": c.data, "weight": c.weight, "residual": c.residual,
                      "ops": [[o, v] for o, v in c.ops], "strides": list(c.strides), "padding": list(c.padding),
                      "groups": c.groups, "kernel": c.kernel, "depthwise": c.depthwise}
    return d


def _kernel_from_json(d: Mapping[str, Any], consts: Mapping[str, np.ndarray]) -> Step:
    ch = None
    bias = consts.get(f"__bias__/{d['node']}")
    if d.get("chain"):
        c = d["chain"]
        ch = AluChain(c["anchor"], c["data"], c["weight"], c["residual"], None,
                      [(o, v) for o, v in c["ops"]], tuple(c["strides"]), tuple(c["padding"]),
                      int(c.get("groups", 1)), int(c.get("kernel", 0)), None, bool(c.get("depthwise", False)))
    k = Step(d["node"], d["target"], d["reason"], d["func"], ch, bias, d.get("macs", 0),
               d.get("host_reason", d.get("cpu_reason", "")))
    k.shifts_packed = consts.get(f"__shifts__/{d['node']}")
    k.weight_packed = consts.get(f"__weight__/{d['node']}")
    k.offset = int(d.get("offset", 0))  # files before slice views held flatten/reshape views only
    return k


def _config_from_json(head: Mapping[str, Any]) -> Config:
    from ....config import preset

    d = head.get("config")
    if d:
        try:
            return Config.from_dict(d)
        except Exception as e:
            raise ModelFileError(f"bad configuration in the file: {e}") from None
    return preset(head["config_name"])
