"""Pooling: MaxPool, AveragePool and LpPool in 1-D, 2-D and 3-D (dilations, asymmetric
pads, auto_pad, ceil_mode, count_include_pad), and GlobalAveragePool/GlobalMaxPool/
GlobalLpPool of any rank.

2-D max and average pools without dilation (and average pools without ``ceil_mode``)
become ``max_pool2d`` / ``avg_pool2d``, which llvm builds and VDLA's int8 flow knows;
everything else becomes :mod:`..ops.nd`'s ``pool_nd``. ``ceil_mode`` adds end padding
(never counted by an average) up to the last window that starts inside the input or the
begin padding, as ONNX defines.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PoolOps"]


def ceil_extra(sizes, kernel, strides, dil, pads) -> tuple[int, ...]:
    """End padding that ``ceil_mode=1`` adds per spatial axis."""
    nd = len(sizes)
    out = []
    for j in range(nd):
        ext = (kernel[j] - 1) * dil[j] + 1
        span = sizes[j] + pads[j] + pads[j + nd] - ext
        o = -(-span // strides[j]) + 1
        if (o - 1) * strides[j] >= sizes[j] + pads[j]:  # a window starting in the end padding is dropped
            o -= 1
        out.append(max(0, (o - 1) * strides[j] + ext - (sizes[j] + pads[j] + pads[j + nd])))
    return tuple(out)


class PoolOps:
    def _pool(self, n: Any, i: int, mode: str) -> None:
        # (onnx's schema check in attrs() refuses what the model's opset lacks, e.g. LpPool's
        # ceil_mode and dilations before 18)
        allowed: dict[str, Any] = {"auto_pad": "NOTSET", "kernel_shape": None, "pads": None, "strides": None,
                                   "ceil_mode": 0, "dilations": None}
        if mode == "max":
            allowed["storage_order"] = 0
        elif mode == "avg":
            allowed["count_include_pad"] = 0
        else:
            allowed["p"] = 2
        a = self.attrs(n, i, allowed)
        if a.get("storage_order", 0):
            raise self.bad(n, i, "storage_order", a["storage_order"])
        if len(n.output) > 1 and n.output[1]:
            raise self.err(n, i, "the Indices output is not supported")
        x = self.value(n.input[0])
        xt = self.g.type_of(x)
        nd = len(xt.shape) - 2
        if a["kernel_shape"] is None:
            raise self.err(n, i, "attribute kernel_shape is required")
        k = tuple(a["kernel_shape"])
        if nd < 1 or len(k) != nd:
            raise self.bad(n, i, "kernel_shape", list(k), f"the input {xt} has {max(nd, 0)} spatial axes")
        s, d, p = self.spatial(n, i, a, xt.shape[2:], k)
        ex = ceil_extra(xt.shape[2:], k, s, d, p) if a.get("ceil_mode", 0) else (0,) * nd
        if nd == 1 and d == (1,) and (mode == "max" or (mode == "avg" and not any(ex))):
            # as 2-D with height 1, like a 1-D conv (see nn.py): the int8 flow keeps its layout
            x4 = self.h1.get(n.input[0]) or self.reshape(n, x, xt.shape[:2] + (1, xt.shape[2]), "h1")
            pads = (0, p[0], 0, p[1] + ex[0])
            if mode == "max" and pads[1] < k[0] and pads[3] < k[0]:
                y4 = self.helper_node(n, "max_pool2d", [x4], "h1", kernel=(1, k[0]), strides=(1, s[0]), padding=pads)
            elif mode == "avg":
                y4 = self.helper_node(n, "avg_pool2d", [x4], "h1", kernel=(1, k[0]), strides=(1, s[0]), padding=pads,
                                      count_include_pad=bool(a["count_include_pad"]))
            else:
                y4 = None
            if y4 is not None:
                yt = self.g.type_of(y4).shape
                self.emit(n, "reshape", [y4], shape=(yt[0], yt[1], yt[3]))
                self.h1[n.output[0]] = y4
                return
        plain2d = nd == 2 and all(v == 1 for v in d) and mode != "lp"
        if plain2d and mode == "max":
            pads = (p[0], p[1], p[2] + ex[0], p[3] + ex[1])
            if max(pads[0], pads[2]) < k[0] and max(pads[1], pads[3]) < k[1]:
                self.emit(n, "max_pool2d", [x], kernel=k, strides=s, padding=pads)
                return
        if plain2d and mode == "avg" and not any(ex):
            self.emit(n, "avg_pool2d", [x], kernel=k, strides=s, padding=(p[0], p[1], p[2], p[3]),
                      count_include_pad=bool(a["count_include_pad"]))
            return
        self.emit(n, "pool_nd", [x], mode=mode, kernel_shape=k, stride=s, pads=p, dilations=d, ceil_extra=ex,
                  count_include_pad=int(a.get("count_include_pad", 0)), p=int(a.get("p", 2)))

    def op_MaxPool(self, n: Any, i: int) -> None:
        self._pool(n, i, "max")

    def op_AveragePool(self, n: Any, i: int) -> None:
        self._pool(n, i, "avg")

    def op_LpPool(self, n: Any, i: int) -> None:
        self._pool(n, i, "lp")

    def _global(self, n: Any, i: int, mode: str) -> None:
        a = self.attrs(n, i, {"p": 2} if mode == "lp" else {})
        x = self.value(n.input[0])
        shape = self.g.type_of(x).shape
        if len(shape) < 3:
            raise self.err(n, i, f"needs N,C,spatial... data, got {self.g.type_of(x)}")
        axes = tuple(range(2, len(shape)))
        if mode == "avg" and len(shape) == 4:
            self.emit(n, "global_avg_pool2d", [x])
        elif mode == "lp":
            self.emit(n, "pool_nd", [x], mode="lp", kernel_shape=shape[2:], p=int(a["p"]))
        else:
            self.emit(n, "reduce_mean" if mode == "avg" else "reduce_max", [x], axes=axes, keepdims=1)

    def op_GlobalAveragePool(self, n: Any, i: int) -> None:
        self._global(n, i, "avg")

    def op_GlobalMaxPool(self, n: Any, i: int) -> None:
        self._global(n, i, "max")

    def op_GlobalLpPool(self, n: Any, i: int) -> None:
        self._global(n, i, "lp")
