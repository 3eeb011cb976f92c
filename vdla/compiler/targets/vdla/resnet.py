"""The ResNet-18 convolution layers C1-C12 of the TVM paper (Table in §6.4 / REQUEST18)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConvLayer:
    name: str
    size: int  # input height = width
    ic: int
    oc: int
    k: int
    stride: int

    @property
    def pad(self) -> int:
        return self.k // 2

    @property
    def out_size(self) -> int:
        return (self.size + 2 * self.pad - self.k) // self.stride + 1

    def macs(self, batch: int = 1, size: int | None = None) -> int:
        s = size or self.size
        o = (s + 2 * self.pad - self.k) // self.stride + 1
        return batch * o * o * self.oc * self.ic * self.k * self.k

    def scaled(self, size: int) -> ConvLayer:
        return ConvLayer(self.name, size, self.ic, self.oc, self.k, self.stride)


RESNET18 = [
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
OFFLOADED = RESNET18[1:]
