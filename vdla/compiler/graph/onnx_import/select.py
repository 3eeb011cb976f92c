"""Selection, comparison and resampling on graph values (on known arrays they are folded by
:mod:`.consts`): Where (a run-time or constant condition), Equal / Less / Greater /
LessOrEqual / GreaterOrEqual (uint8 0/1 results: the graph has no bool), Not / And / Or,
ScatterND (reduction none), Resize (opset 10's scales; 11+: scales or sizes, every
coordinate transformation but tf_crop_and_resize, nearest and linear; 18's axes) and
Upsample (opsets 7 and 9).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["SelectOps"]

_COMPARE = {"Equal": "equal", "Less": "less", "Greater": "greater", "LessOrEqual": "less_equal",
            "GreaterOrEqual": "greater_equal"}
_LOGIC = {"And": "logical_and", "Or": "logical_or"}


class SelectOps:
    def condition(self, name: str) -> str:
        """Graph value of a condition: a known bool array becomes a uint8 constant."""
        if name in self.known and name not in self.env and self.known[name].dtype == np.bool_:
            self.env[name] = self.g.add_const(name, self.known[name].astype(np.uint8))
        return self.value(name)

    def operands(self, a: str, b: str) -> tuple[str, str]:
        """Two operands of a comparison: a known one meeting a float32 value is float32."""
        ka, kb = a in self.known and a not in self.env, b in self.known and b not in self.env
        ta = None if ka else self.g.type_of(self.value(a)).dtype
        tb = None if kb else self.g.type_of(self.value(b)).dtype
        return self.operand(a, tb), self.operand(b, ta)

    def op_Where(self, n: Any, i: int) -> None:
        self.attrs(n, i, {})
        c = self.condition(n.input[0])
        x, y = self.operands(n.input[1], n.input[2])
        self.emit(n, "where", [c, x, y])

    def _compare(self, n: Any, i: int) -> None:
        self.attrs(n, i, {})
        if self.opset < 7:
            raise self.err(n, i, "opset < 7 broadcasting (attributes broadcast, axis) is not supported")
        a, b = self.operands(n.input[0], n.input[1])
        self.emit(n, _COMPARE[n.op_type], [a, b])

    def _logic(self, n: Any, i: int) -> None:
        self.attrs(n, i, {})
        if self.opset < 7:
            raise self.err(n, i, "opset < 7 broadcasting (attributes broadcast, axis) is not supported")
        self.emit(n, _LOGIC[n.op_type], [self.condition(v) for v in n.input[:2]])

    op_Equal = op_Less = op_Greater = op_LessOrEqual = op_GreaterOrEqual = _compare
    op_And = op_Or = _logic

    def op_Not(self, n: Any, i: int) -> None:
        self.attrs(n, i, {})
        self.emit(n, "logical_not", [self.condition(n.input[0])])

    def op_ScatterND(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"reduction": "none"})
        if a["reduction"] != "none":
            raise self.bad(n, i, "reduction", a["reduction"], "none only")
        data = self.value(n.input[0])
        idx = self.const(n.input[1])
        if idx is not None:  # checked here: the built kernels clamp an index, they cannot refuse one
            self._scatter_indices(n, i, np.asarray(idx), self.g.type_of(data).shape)
        upd = self.operand(n.input[2], self.g.type_of(data).dtype)
        self.emit(n, "scatter_nd", [data, self.value(n.input[1]), upd])

    def _scatter_indices(self, n: Any, i: int, idx: np.ndarray, shape: tuple[int, ...]) -> None:
        """Constant index tuples of a ScatterND: each value within [-d, d) of its axis."""
        if idx.ndim < 1 or idx.shape[-1] > len(shape):
            raise self.err(n, i, f"indices of shape {list(idx.shape)} for data of shape {list(shape)} (the last "
                                 f"axis holds index tuples of at most {len(shape)} values)")
        q = idx.shape[-1]
        flat = idx.reshape(-1, q).astype(np.int64)
        dims = np.array(shape[:q], np.int64)
        bad = np.flatnonzero(((flat < -dims) | (flat >= dims)).any(axis=1))
        if bad.size:
            k = np.unravel_index(int(bad[0]), idx.shape[:-1])
            raise self.err(n, i, f"index tuple {flat[bad[0]].tolist()} (indices{list(map(int, k))}) is out of range "
                                 f"for data of shape {list(shape)} ({bad.size} such tuple{'s' if bad.size > 1 else ''})")

    # -- resampling -----------------------------------------------------------------------
    def _resize(self, n: Any, i: int, x: str, mode: str, scales: list[float] | None, sizes: list[int] | None,
                coord: str, nearest: str) -> None:
        shape = self.g.type_of(x).shape
        if mode not in ("nearest", "linear"):
            raise self.bad(n, i, "mode", mode, "nearest or linear")
        if sizes is not None:
            out = [int(s) for s in sizes]
            sc = None
        else:
            assert scales is not None
            if len(scales) != len(shape) or min(scales) <= 0:
                raise self.err(n, i, f"scales {scales} need {len(shape)} positive values for input shape {shape}")
            # onnxruntime's output extent: the float32 product, truncated
            out = [int(np.float32(s) * np.float32(d)) for s, d in zip(scales, shape)]
            sc = tuple(float(np.float32(s)) for s in scales)
        if len(out) != len(shape) or min(out) < 1:
            raise self.err(n, i, f"output shape {out} is empty or does not match the input's rank {len(shape)}")
        self.emit(n, "resize", [x], sizes=tuple(out), scales=sc, mode=mode, coord_mode=coord, nearest_mode=nearest)

    def op_Resize(self, n: Any, i: int) -> None:
        x = self.value(n.input[0])
        r = len(self.g.type_of(x).shape)
        if self.opset < 11:  # Resize-10: X, scales; asymmetric coordinates, Upsample's nearest rule
            a = self.attrs(n, i, {"mode": "nearest"})
            scales = [float(v) for v in self.need_const(n, i, 1, "scales").reshape(-1)]
            self._resize(n, i, x, a["mode"], scales, None, "asymmetric", "simple")
            return
        a = self.attrs(n, i, {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
                              "nearest_mode": "round_prefer_floor", "cubic_coeff_a": -0.75, "exclude_outside": 0,
                              "extrapolation_value": 0.0, "antialias": 0, "axes": None,
                              "keep_aspect_ratio_policy": "stretch"})
        coord = a["coordinate_transformation_mode"]
        if coord == "tf_crop_and_resize":
            raise self.bad(n, i, "coordinate_transformation_mode", coord, "regions of interest are not supported")
        if a["keep_aspect_ratio_policy"] != "stretch":
            raise self.bad(n, i, "keep_aspect_ratio_policy", a["keep_aspect_ratio_policy"], "stretch only")
        sc = self.const(n.input[2]) if self.has_input(n, 2) else None
        sz = self.const(n.input[3]) if self.has_input(n, 3) else None
        for pos, v in ((2, sc), (3, sz)):
            if self.has_input(n, pos) and v is None:
                raise self.err(n, i, f"{('scales', 'sizes')[pos - 2]} (input {pos}) must be a constant "
                                     "(or computable at import)")
        scales = [float(v) for v in sc.reshape(-1)] if sc is not None and sc.size else None
        sizes = [int(v) for v in sz.reshape(-1)] if sz is not None and sz.size else None
        if (scales is None) == (sizes is None):
            raise self.err(n, i, "exactly one of scales and sizes must be given")
        axes = [int(v) % r for v in a["axes"]] if a["axes"] is not None else list(range(r))
        shape = self.g.type_of(x).shape
        if scales is not None:
            full_s = [1.0] * r
            for ax, v in zip(axes, scales, strict=True):
                full_s[ax] = v
            scales, sizes_full = full_s, None
        else:
            sizes_full = list(shape)
            for ax, v in zip(axes, sizes or [], strict=True):
                sizes_full[ax] = v
        if a["antialias"] and min(scales if scales is not None else
                                  [o / d for o, d in zip(sizes_full or [], shape)]) < 1:
            raise self.bad(n, i, "antialias", a["antialias"], "an antialiased downscale is not supported")
        self._resize(n, i, x, a["mode"], scales, sizes_full, coord, a["nearest_mode"])

    def op_Upsample(self, n: Any, i: int) -> None:
        x = self.value(n.input[0])
        if self.opset < 9:
            a = self.attrs(n, i, {"mode": "nearest", "scales": None, "height_scale": None, "width_scale": None})
            if a["scales"] is None:
                raise self.err(n, i, "attribute scales is required")
            scales = [float(v) for v in a["scales"]]
        else:
            a = self.attrs(n, i, {"mode": "nearest"})
            scales = [float(v) for v in self.need_const(n, i, 1, "scales").reshape(-1)]
        mode = "linear" if a["mode"] in ("linear", "bilinear") else a["mode"]
        self._resize(n, i, x, mode, scales, None, "asymmetric", "simple")
