"""Workload tables: the ResNet-18 convolution layers C1-C12 of the TVM paper (Table 2, §6.4 / REQUEST18).

``RESNET18`` is the table (batch 1, NCHW, square inputs, ``pad = k // 2``); ``OFFLOADED``
is C2-C12, the layers VTA offloads (C1's 3 input channels are not whole blocks). One table
for everyone: the accelerator's tests and benchmarks, ``vdla tune C5`` (the tuner's
``layer_task``), the CPU and GPU benchmarks. It sits in topi (below targets, graph and
autotvm), so any of them may import it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ConvLayer", "RESNET18", "OFFLOADED"]


@dataclass(frozen=True)
class ConvLayer:
    """One conv2d layer: ``size`` x ``size`` input of ``ic`` channels, ``oc`` filters of ``k`` x ``k``, ``stride``."""

    name: str
    size: int  # input height = width
    ic: int
    oc: int
    k: int
    stride: int

    @property
    def pad(self) -> int:
        """The padding on each side (``k // 2``: "same" for stride 1)."""
        return self.k // 2

    @property
    def out_size(self) -> int:
        """The output height = width."""
        return (self.size + 2 * self.pad - self.k) // self.stride + 1

    def macs(self, batch: int = 1, size: int | None = None) -> int:
        """Multiply-accumulates of the layer (at input size ``size`` if given)."""
        s = size or self.size
        o = (s + 2 * self.pad - self.k) // self.stride + 1
        return batch * o * o * self.oc * self.ic * self.k * self.k

    def scaled(self, size: int) -> ConvLayer:
        """The same layer on a ``size`` x ``size`` input (a smaller test of the same shape)."""
        return ConvLayer(self.name, size, self.ic, self.oc, self.k, self.stride)


#: C1-C12 of the TVM paper
RESNET18: list[ConvLayer] = [
    ConvLayer("C1", 224, 3, 64, 7, 2),
    ConvLayer("C2", 56, 64, 64, 3, 1),
    ConvLayer("C3", 56, 64, 64, 1, 1),
    ConvLayer("C4", 56, 64, 128, 3, 2),
    ConvLayer("C5", 56, 64, 128, 1, 2),
    ConvLayer("C6", 28, 128, 128, 3, 1),
    ConvLayer("C7", 28, 128, 256, 3, 2),
    ConvLayer("C8", 28, 128, 256, 1, 2),
    ConvLayer("C9", 14, 256, 256, 3, 1),
    ConvLayer("C10", 14, 256, 512, 3, 2),
    ConvLayer("C11", 14, 256, 512, 1, 2),
    ConvLayer("C12", 7, 512, 512, 3, 1),
]
#: C2-C12: the layers the accelerator runs (C1 stays on the CPU)
OFFLOADED: list[ConvLayer] = RESNET18[1:]
