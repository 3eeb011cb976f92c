"""The graph passes in one place, and the standard pipeline that chains them.

Each pass is a function ``Graph -> Graph`` returning a new graph:
:func:`fold_constants`, :func:`remove_identity`, :func:`fold_batch_norm`,
:func:`quantize` (with a calibration set), :func:`partition`, :func:`unfold_shallow_convs`,
:func:`to_packed_layout` and :func:`fuse`. :func:`prepare` runs them in the order the
VDLA flow needs (fold -> quantise -> partition -> unfold -> pack -> fuse).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...config import Config
from .channels import int8_channel_ops, share_channel_scales
from .cpu_layout import to_nchwc
from .fold import fold_batch_norm, fold_constants, remove_identity
from .fuse import fuse, unfuse
from .ir import Graph
from .layout import real_macs, to_packed_layout
from .partition import PartitionPolicy, partition
from .quantize import QConfig, calibrate, quantize, quantize_graph
from .squeeze import pool_packed
from .unfold import unfold_shallow_convs

__all__ = [
    "fold_constants",
    "remove_identity",
    "fold_batch_norm",
    "quantize",
    "partition",
    "unfold_shallow_convs",
    "to_packed_layout",
    "fuse",
    "unfuse",
    "simplify",
    "prepare",
]


#: The float convolutions a VDLA flow leaves on the CPU go on NCHW[x]c from this many MACs: plain
#: NCHW ran ResNet-18's stem at 7 GFLOP/s, the packed kernel at about 80, and the transforms into
#: and out of the packed layout cost about half a millisecond, which a smaller conv does not win back.
NCHWC_MIN_MACS = 2_000_000


def _float_cpu_macs(g: Graph) -> int:
    return sum(real_macs(n, g) for n in g.nodes
               if n.op == "conv2d" and n.target != "vdla" and n.type is not None and n.type.dtype == "float32")


def simplify(graph: Graph) -> Graph:
    """Target-independent clean-up: constant folding, identity removal, batch-norm folding."""
    return fold_batch_norm(remove_identity(fold_constants(graph)))


def prepare(
    graph: Graph,
    calibration: Sequence[Any] | None = None,
    config: Config | None = None,
    qconfig: QConfig | None = None,
    policy: PartitionPolicy | None = None,
    *,
    pack: bool = True,
    fusion: bool = True,
) -> Graph:
    """The VDLA flow up to (not including) code generation.

    A float graph is simplified, quantised when ``calibration`` is given (an already-int8
    graph, e.g. from :func:`.quantize.qdq_to_int`, is used as is; values joined by a concat,
    channel split or shuffle share one scale, :func:`.channels.share_channel_scales`), its
    channel plumbing moved to int8 (:func:`.channels.int8_channel_ops`), partitioned, its shallow
    VDLA convolutions unfolded (:func:`.unfold.unfold_shallow_convs`), packed (int8 global average
    pools on the packed tensors, :func:`.squeeze.pool_packed`; float convolutions left on the CPU on
    its NCHW[x]c layout, :func:`.cpu_layout.to_nchwc`)
    to ``config``'s layouts and fused.
    """
    g = simplify(graph)
    if calibration is not None:
        q = qconfig or QConfig()
        scales = calibrate(g, calibration, q.qmax, q.calibration, q.percentile)
        # one scale across a concat / channel split / shuffle, so they stay in int8 (channels.py)
        g = quantize_graph(g, share_channel_scales(g, scales), q)
    g = int8_channel_ops(g)
    g = partition(g, policy, config)
    g = unfold_shallow_convs(g, config)  # a stem's few channels x its taps on the GEMM's reduction
    if pack:
        g = pool_packed(to_packed_layout(g, config or Config()))
        # the float convolutions left on the CPU (VTA's flow: the first one) on the CPU's packed
        # NCHW[x]c kernels, as a float model's are on llvm, where that pays for the layout
        # transforms around them (ResNet-18's 7x7 stem: 33.8 -> 2.9 ms)
        if _float_cpu_macs(g) >= NCHWC_MIN_MACS:
            g = to_nchwc(g)
    if fusion:
        g = fuse(g)
    return g
