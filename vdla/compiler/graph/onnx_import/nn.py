"""Layers: Conv and ConvTranspose in 1-D, 2-D and 3-D (dilations, groups, asymmetric pads,
auto_pad SAME_UPPER/SAME_LOWER/VALID, output_padding, output_shape), Gemm (transA/transB,
alpha/beta, opset < 7's ``broadcast``), MatMul (2-D, batched, 1-D operands),
BatchNormalization, InstanceNormalization, GroupNormalization, LayerNormalization and LRN.

A 2-D convolution becomes ``conv2d`` (VDLA's and llvm's), a 1-D one a ``conv2d`` of height
1 between two reshapes, so it can run on VDLA too; 3-D ones (and transposed ones with
groups or dilations) become the N-D operators of :mod:`..ops.nd`, on the CPU.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["NNOps", "auto_pads"]


def auto_pads(auto_pad: str, sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
              dil: Sequence[int]) -> tuple[int, ...]:
    """Begins then ends of ONNX's SAME_UPPER / SAME_LOWER / VALID padding."""
    nd = len(sizes)
    if auto_pad == "VALID":
        return (0,) * (2 * nd)
    lo, hi = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dil):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        b = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
        lo.append(b)
        hi.append(total - b)
    return tuple(lo + hi)


class NNOps:
    def spatial(self, n: Any, i: int, a: dict[str, Any], sizes: Sequence[int], kernel: Sequence[int]):
        """(strides, dilations, pads) of a conv/pool node over ``len(sizes)`` spatial axes."""
        nd = len(sizes)
        s = tuple(a.get("strides") or (1,) * nd)
        d = tuple(a.get("dilations") or (1,) * nd)
        for key, v in (("strides", s), ("dilations", d), ("kernel_shape", kernel)):
            if len(v) != nd:
                raise self.bad(n, i, key, list(v), f"needs {nd} values for {nd}-D data")
        ap = a.get("auto_pad") or "NOTSET"
        if ap == "NOTSET":
            p = tuple(a.get("pads") or (0,) * (2 * nd))
            if len(p) != 2 * nd:
                raise self.bad(n, i, "pads", list(p), f"needs {2 * nd} values (begins, then ends)")
        elif ap in ("SAME_UPPER", "SAME_LOWER", "VALID"):
            if a.get("pads"):
                raise self.bad(n, i, "pads", list(a["pads"]), f"given with auto_pad={ap}")
            p = auto_pads(ap, sizes, kernel, s, d)
        else:
            raise self.bad(n, i, "auto_pad", ap)
        return s, d, p

    # -- convolutions -----------------------------------------------------------------------
    def op_Conv(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"auto_pad": "NOTSET", "dilations": None, "group": 1, "kernel_shape": None,
                              "pads": None, "strides": None})
        x, w = self.value(n.input[0]), self.value(n.input[1])
        xt, wt = self.g.type_of(x), self.g.type_of(w)
        nd = len(xt.shape) - 2
        if nd < 1 or len(wt.shape) != nd + 2:
            raise self.err(n, i, f"data {xt} and weight {wt} must be N,C,spatial... and O,C/group,kernel... of one rank")
        k = tuple(wt.shape[2:])
        if a["kernel_shape"] is not None and tuple(a["kernel_shape"]) != k:
            raise self.bad(n, i, "kernel_shape", a["kernel_shape"], f"the weight has {k}")
        s, d, p = self.spatial(n, i, a, xt.shape[2:], k)
        b = [self.value(n.input[2])] if self.has_input(n, 2) else []
        if nd == 2:
            self.emit(n, "conv2d", [x, w] + b, strides=s, padding=(p[0], p[1], p[2], p[3]), dilation=d,
                      groups=a["group"])
        elif nd == 1:  # as 2-D with height 1: VDLA's templates take it
            x2 = self.h1.get(n.input[0]) or self.reshape(n, x, xt.shape[:2] + (1, xt.shape[2]), "h1")
            w2 = self.reshape(n, w, wt.shape[:2] + (1, wt.shape[2]), "w_h1")
            y = self.helper_node(n, "conv2d", [x2, w2] + b, "conv2d", strides=(1, s[0]), padding=(0, p[0], 0, p[1]),
                                 dilation=(1, d[0]), groups=a["group"])
            yt = self.g.type_of(y).shape
            self.emit(n, "reshape", [y], shape=(yt[0], yt[1], yt[3]))
            self.h1[n.output[0]] = y
        else:
            self.emit(n, "conv_nd", [x, w] + b, stride=s, pads=p, dilations=d, groups=a["group"])

    def op_ConvTranspose(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"auto_pad": "NOTSET", "dilations": None, "group": 1, "kernel_shape": None,
                              "output_padding": None, "output_shape": None, "pads": None, "strides": None})
        x, w = self.value(n.input[0]), self.value(n.input[1])
        xt, wt = self.g.type_of(x), self.g.type_of(w)
        nd = len(xt.shape) - 2
        if nd < 1 or len(wt.shape) != nd + 2:
            raise self.err(n, i, f"data {xt} and weight {wt} must be N,C,spatial... and C,O/group,kernel... of one rank")
        k = tuple(wt.shape[2:])
        if a["kernel_shape"] is not None and tuple(a["kernel_shape"]) != k:
            raise self.bad(n, i, "kernel_shape", a["kernel_shape"], f"the weight has {k}")
        s = tuple(a["strides"] or (1,) * nd)
        d = tuple(a["dilations"] or (1,) * nd)
        op = tuple(a["output_padding"] or (0,) * nd)
        if len(s) != nd or len(d) != nd or len(op) != nd:
            raise self.err(n, i, f"strides {s}, dilations {d} and output_padding {op} need {nd} values each")
        sizes = xt.shape[2:]
        full = [(sizes[j] - 1) * s[j] + (k[j] - 1) * d[j] + 1 + op[j] for j in range(nd)]
        ap = a["auto_pad"] or "NOTSET"
        if a["output_shape"] is not None or ap in ("SAME_UPPER", "SAME_LOWER"):
            # the output size is given (output_shape) or implied (SAME: input * stride): derive the pads
            want = list(a["output_shape"])[-nd:] if a["output_shape"] is not None else [sz * st for sz, st in zip(sizes, s)]
            total = [f - o for f, o in zip(full, want)]
            if min(total) < 0:
                # a larger output_shape than the kernel reaches: the rest is output padding
                op = tuple(o + max(0, -t) for o, t in zip(op, total))
                total = [max(0, t) for t in total]
            upper = ap != "SAME_LOWER"
            lo = [t // 2 if upper else t - t // 2 for t in total]
            p = tuple(lo + [t - b for t, b in zip(total, lo)])
        elif ap == "VALID" or ap == "NOTSET":
            p = tuple(a["pads"] or (0,) * (2 * nd)) if ap == "NOTSET" else (0,) * (2 * nd)
            if len(p) != 2 * nd:
                raise self.bad(n, i, "pads", list(p), f"needs {2 * nd} values")
        else:
            raise self.bad(n, i, "auto_pad", ap)
        b = [self.value(n.input[2])] if self.has_input(n, 2) else []
        plain = a["group"] == 1 and all(v == 1 for v in d) and all(o < st for o, st in zip(op, s))
        if nd == 2 and plain:
            self.emit(n, "conv2d_transpose", [x, w] + b, strides=s, padding=(p[0], p[1], p[2], p[3]),
                      output_padding=op)
        elif nd == 1 and plain:
            x2 = self.reshape(n, x, xt.shape[:2] + (1, sizes[0]), "h1")
            w2 = self.reshape(n, w, wt.shape[:2] + (1, k[0]), "w_h1")
            y = self.helper_node(n, "conv2d_transpose", [x2, w2] + b, "conv2d_transpose", strides=(1, s[0]),
                                 padding=(0, p[0], 0, p[1]), output_padding=(0, op[0]))
            yt = self.g.type_of(y).shape
            self.emit(n, "reshape", [y], shape=(yt[0], yt[1], yt[3]))
        else:
            self.emit(n, "conv_transpose_nd", [x, w] + b, stride=s, pads=p, dilations=d, groups=a["group"],
                      out_pad=op)

    # -- matrix products ------------------------------------------------------------------
    def op_Gemm(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0, "broadcast": 0})
        x = self.value(n.input[0])
        if a["transA"]:
            x = self.helper_node(n, "transpose", [x], "transA", perm=(1, 0))
        bconst = self.const(n.input[1])
        has_c = self.has_input(n, 2)
        if bconst is None:
            bv = self.value(n.input[1])
            if a["transB"]:
                bv = self.helper_node(n, "transpose", [bv], "transB", perm=(1, 0))
            if a["alpha"] != 1.0 or has_c:
                y = self.helper_node(n, "matmul", [x, bv], "matmul")
                self._gemm_tail(n, i, a, y, has_c)
            else:
                self.emit(n, "matmul", [x, bv])
            return
        wm = bconst if a["transB"] else bconst.T
        wm = (wm * np.float32(a["alpha"])).astype(wm.dtype) if a["alpha"] != 1.0 else wm
        ins = [x, self.g.add_const(f"{n.input[1]}.w", np.ascontiguousarray(wm))]
        c = self.const(n.input[2]) if has_c else None
        m = wm.shape[0]
        if c is not None and c.size in (1, m) and (c.ndim < 2 or c.shape[0] == 1):
            cb = np.broadcast_to(c.reshape(-1), (m,)) * np.float32(a["beta"])
            ins.append(self.g.add_const(f"{n.input[2]}.b", cb.astype(np.float32)))
            self.emit(n, "dense", ins)
        elif has_c:
            y = self.helper_node(n, "dense", ins, "gemm")
            self._gemm_tail(n, i, {**a, "alpha": 1.0}, y, True)
        else:
            self.emit(n, "dense", ins)

    def _gemm_tail(self, n: Any, i: int, a: dict[str, Any], y: str, has_c: bool) -> None:
        """``alpha * y + beta * C`` for a Gemm whose product is already ``y``."""
        if a["alpha"] != 1.0:
            al = self.g.add_const(f"{n.output[0]}.alpha", np.array(a["alpha"], np.float32))
            y = self.helper_node(n, "mul", [y, al], "alpha")
        if not has_c:
            self.env[n.output[0]] = y
            return
        c = self.const(n.input[2])
        if c is not None:
            cname = f"{n.input[2]}.beta"
            self.known[cname] = (np.asarray(c, np.float32) * np.float32(a["beta"])).astype(np.float32)
        else:
            cname = n.input[2]
            if a["beta"] != 1.0:
                raise self.bad(n, i, "beta", a["beta"], "with a non-constant C")
        self.binary_values(n, i, "add", y, self.operand(cname, "float32"))

    def op_MatMul(self, n: Any, i: int) -> None:
        self.attrs(n, i, {})
        x = self.value(n.input[0])
        xs = self.g.type_of(x).shape
        b = self.const(n.input[1])
        if b is not None and b.ndim == 2 and len(xs) >= 2:
            w = self.g.add_const(f"{n.input[1]}.T", np.ascontiguousarray(b.T))
            if len(xs) == 2:
                self.emit(n, "dense", [x, w])
                return
            # batched data times one matrix: one dense over the rows (VDLA can run it)
            rows = self.reshape(n, x, (math.prod(xs[:-1]), xs[-1]), "rows")
            y = self.helper_node(n, "dense", [rows, w], "dense")
            self.emit(n, "reshape", [y], shape=xs[:-1] + (b.shape[1],))
            return
        bv = self.value(n.input[1])
        bs = self.g.type_of(bv).shape
        if len(xs) >= 2 and len(bs) >= 2:
            self.emit(n, "matmul", [x, bv])
            return
        # 1-D operands (numpy's rule): promote, multiply, drop the added axis
        x2 = self.reshape(n, x, (1,) + xs, "row") if len(xs) == 1 else x
        b2 = self.reshape(n, bv, bs + (1,), "col") if len(bs) == 1 else bv
        y = self.helper_node(n, "matmul", [x2, b2], "matmul")
        ys = list(self.g.type_of(y).shape)
        if len(xs) == 1:
            del ys[-2]
        if len(bs) == 1:
            del ys[-1]
        self.emit(n, "reshape", [y], shape=tuple(ys))

    # -- normalisations ---------------------------------------------------------------------
    def op_BatchNormalization(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"epsilon": 1e-5, "momentum": 0.9, "training_mode": 0, "spatial": 1, "is_test": 1,
                              "consumed_inputs": None})
        if a["training_mode"]:
            raise self.bad(n, i, "training_mode", a["training_mode"], "only inference")
        if a["spatial"] != 1:
            raise self.bad(n, i, "spatial", a["spatial"])
        if any(n.output[1:]):
            raise self.err(n, i, "training outputs (running mean/var) are not supported")
        params = [self.value(v) for v in n.input[1:5]]
        x4 = self.h1.get(n.input[0])
        if x4 is None:
            self.emit(n, "batch_norm", [self.value(n.input[0])] + params, epsilon=float(a["epsilon"]))
            return
        # after a 1-D conv: normalise its height-1 form, so the batch norm folds into the conv
        y4 = self.helper_node(n, "batch_norm", [x4] + params, "h1", epsilon=float(a["epsilon"]))
        self.emit(n, "reshape", [y4], shape=self.g.type_of(self.value(n.input[0])).shape)
        self.h1[n.output[0]] = y4

    def op_InstanceNormalization(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"epsilon": 1e-5})
        self.emit(n, "instance_norm", [self.value(v) for v in n.input[:3]], epsilon=float(a["epsilon"]))

    def op_GroupNormalization(self, n: Any, i: int) -> None:
        """Opset 21: scale and bias per channel; opset 18: per group (repeated per channel here)."""
        a = self.attrs(n, i, {"num_groups": None, "epsilon": 1e-5, "stash_type": 1})
        if a["num_groups"] is None:
            raise self.err(n, i, "attribute num_groups is required")
        if a["stash_type"] != 1:
            raise self.bad(n, i, "stash_type", a["stash_type"], "float32 statistics only")
        x = self.value(n.input[0])
        xt = self.g.type_of(x)
        g = int(a["num_groups"])
        if len(xt.shape) < 2 or g < 1 or xt.shape[1] % g:
            raise self.bad(n, i, "num_groups", g, f"it must divide the channels of {xt}")
        c = xt.shape[1]
        per = "channel" if self.opset >= 21 else "group"
        want = c if per == "channel" else g
        params = []
        for pos, nm in ((1, "scale"), (2, "bias")):
            if tuple(self.shape_of(n.input[pos])) != (want,):
                raise self.err(n, i, f"{nm} has shape {tuple(self.shape_of(n.input[pos]))}, not ({want},): one "
                                     f"per {per} at this opset (per group before opset 21, per channel from 21)")
            k = self.const(n.input[pos])
            if want == c:
                v = self.value(n.input[pos])
            elif k is not None:  # one per group -> one per channel
                v = self.g.add_const(f"{self.base(n)}.{nm}", np.repeat(k.astype(np.float32), c // g))
            else:  # channel k reads its group's value: one take
                v = self.helper_node(n, "take", [self.value(n.input[pos])], f"{nm}_c",
                                     indices=[j // (c // g) for j in range(c)], ishape=(c,), axis=0)
            params.append(v)
        self.emit(n, "group_norm", [x, *params], num_groups=g, epsilon=float(a["epsilon"]))

    def op_LayerNormalization(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"axis": -1, "epsilon": 1e-5, "stash_type": 1})
        if a["stash_type"] != 1:
            raise self.bad(n, i, "stash_type", a["stash_type"], "float32 statistics only")
        if any(n.output[1:]):
            raise self.err(n, i, "the Mean and InvStdDev outputs are not supported")
        ins = [self.value(v) for v in n.input[:3] if v]
        self.emit(n, "layer_norm", ins, axis=int(a["axis"]), epsilon=float(a["epsilon"]))

    def op_LRN(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"size": None, "alpha": 1e-4, "beta": 0.75, "bias": 1.0})
        if a["size"] is None:
            raise self.err(n, i, "attribute size is required")
        self.emit(n, "lrn", [self.value(n.input[0])], size=int(a["size"]), alpha=float(a["alpha"]),
                  beta=float(a["beta"]), bias=float(a["bias"]))
