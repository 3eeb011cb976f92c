"""Recurrent layers: LSTM, GRU and RNN (opsets 7 and 14: forward, reverse, bidirectional,
``layout`` 0 and 1, peepholes, GRU's ``linear_before_reset``, initial states).

The input projection of every time step is one ``dense`` over all ``T * batch`` rows (the
big GEMM, which VDLA can run). An LSTM's or GRU's recurrence is then one ``lstm_scan`` /
``gru_scan`` node (:mod:`..ops.rnn`), which llvm builds with the TE ``scan`` (the importer's
``rnn="scan"``, the default); with ``rnn="unroll"`` (and for RNN and peephole LSTMs) it is unrolled
over the static sequence length: per step one ``dense`` of the hidden state by the
recurrence weights and the gate functions, every matmul an ordinary ``dense`` node that
partitions, quantises and fuses like any other. Variable ``sequence_lens``,
``clip``, ``input_forget`` and non-default activations are refused by name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["RnnOps"]

#: gates per cell and the default activations ONNX gives them
_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
_DEFAULT_ACTS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}


class RnnOps:
    def _rnn(self, n: Any, i: int, cell: str) -> None:
        allowed = {"activation_alpha": None, "activation_beta": None, "activations": None, "clip": None,
                   "direction": "forward", "hidden_size": None, "layout": 0}
        if cell == "LSTM":
            allowed["input_forget"] = 0
        if cell == "GRU":
            allowed["linear_before_reset"] = 0
        a = self.attrs(n, i, allowed)
        for k in ("activation_alpha", "activation_beta", "clip"):
            if a[k] is not None:
                raise self.bad(n, i, k, a[k], "not supported")
        if a.get("input_forget", 0):
            raise self.bad(n, i, "input_forget", a["input_forget"])
        dirs = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}.get(a["direction"])
        if dirs is None:
            raise self.bad(n, i, "direction", a["direction"])
        acts = [s.decode() if isinstance(s, bytes) else s for s in (a["activations"] or [])]
        if acts and acts != _DEFAULT_ACTS[cell] * len(dirs):
            raise self.bad(n, i, "activations", acts, f"only the defaults {_DEFAULT_ACTS[cell]}")
        w = self.need_const(n, i, 1, "W").astype(np.float32)
        r = self.need_const(n, i, 2, "R").astype(np.float32)
        ng = _GATES[cell]
        hs = int(a["hidden_size"] or r.shape[-1])
        if w.shape[0] != len(dirs) or w.shape[1] != ng * hs or r.shape != (len(dirs), ng * hs, hs):
            raise self.err(n, i, f"W {w.shape} / R {r.shape} do not fit {len(dirs)} direction(s) of {ng} gates "
                                 f"of hidden_size {hs}")
        b = (self.need_const(n, i, 3, "B").astype(np.float32) if self.has_input(n, 3)
             else np.zeros((len(dirs), 2 * ng * hs), np.float32))
        if self.has_input(n, 4):
            sl = self.const(n.input[4])
            if sl is None:
                raise self.err(n, i, "sequence_lens (input 4) must be constant (variable lengths are not supported)")
        x = self.value(n.input[0])
        xs = self.g.type_of(x).shape
        if len(xs) != 3:
            raise self.err(n, i, f"X must be 3-D, got {self.g.type_of(x)}")
        if a["layout"]:
            x = self.helper_node(n, "transpose", [x], "x_tbi", perm=(1, 0, 2))
            xs = self.g.type_of(x).shape
        steps, batch, _ = xs
        if self.has_input(n, 4) and not np.all(np.asarray(self.const(n.input[4])) == steps):
            raise self.err(n, i, f"sequence_lens {np.asarray(self.const(n.input[4])).tolist()} differ from the "
                                 f"sequence length {steps} (variable lengths are not supported)")
        if cell == "LSTM" and self.has_input(n, 7):
            p = self.need_const(n, i, 7, "P (peepholes)").astype(np.float32)
        else:
            p = None
        rows = self.reshape(n, x, (steps * batch, xs[2]), "rows")
        ys, hn, cn = [], [], []
        for d, reverse in enumerate(dirs):
            h0 = self._state(n, i, 5, d, batch, hs, a["layout"])
            c0 = self._state(n, i, 6, d, batch, hs, a["layout"]) if cell == "LSTM" else None
            if cell == "LSTM" and p is None and self.rnn == "scan":
                outs, h, c = self._direction_scan(n, d, reverse, rows, steps, batch, hs, w[d], r[d], b[d], h0, c0)
            elif cell == "GRU" and self.rnn == "scan":
                outs, h, c = self._direction_gru_scan(n, d, reverse, rows, steps, batch, hs, w[d], r[d], b[d], h0,
                                                      int(a.get("linear_before_reset", 0)))
            else:
                outs, h, c = self._direction(n, cell, d, reverse, rows, steps, batch, hs, w[d], r[d], b[d],
                                             None if p is None else p[d], h0, c0,
                                             bool(a.get("linear_before_reset", 0)))
            ys.append(outs)
            hn.append(h)
            cn.append(c)
        self._outputs(n, ys, hn, cn, steps, batch, hs, a["layout"])

    def _state(self, n: Any, i: int, pos: int, d: int, batch: int, hs: int, layout: int) -> str | None:
        """Direction ``d``'s initial state (input ``pos``) as a (batch, hidden) value, or None (zeros)."""
        if not self.has_input(n, pos):
            return None
        v = self.value(n.input[pos])
        s = self.g.type_of(v).shape
        if layout:
            v = self.helper_node(n, "transpose", [v], f"init{pos}_dbh", perm=(1, 0, 2))
            s = self.g.type_of(v).shape
        if s[1:] != (batch, hs):
            raise self.err(n, i, f"initial state (input {pos}) {s} is not (directions, {batch}, {hs})")
        v = self.helper_node(n, "slice", [v], f"init{pos}_d{d}", begin=(d, 0, 0), end=(d + 1, batch, hs), step=(1, 1, 1))
        return self.reshape(n, v, (batch, hs), f"init{pos}_d{d}.bh")

    def _direction(self, n: Any, cell: str, d: int, reverse: bool, rows: str, steps: int, batch: int, hs: int,
                   w: np.ndarray, r: np.ndarray, b: np.ndarray, p: np.ndarray | None, h: str | None, c: str | None,
                   lbr: bool) -> tuple[str, str, str | None]:
        ng = _GATES[cell]
        wb, rb = b[: ng * hs], b[ng * hs :]
        xbias = wb + rb
        rh_bias = None
        if cell == "GRU" and lbr:  # Rbh stays inside r * (H Rh + Rbh)
            xbias = wb + np.concatenate([rb[: 2 * hs], np.zeros(hs, np.float32)])
            rh_bias = self.g.add_const(f"{self.base(n)}.d{d}.rbh", rb[2 * hs :])
        pre = f"d{d}"
        wc = self.g.add_const(f"{n.input[1]}.d{d}", np.ascontiguousarray(w))
        bc = self.g.add_const(f"{n.input[1]}.d{d}.bias", xbias.astype(np.float32))
        gx = self.helper_node(n, "dense", [rows, wc, bc], f"{pre}.xproj")
        rc = self.g.add_const(f"{n.input[2]}.d{d}", np.ascontiguousarray(r))
        if cell == "GRU":  # the r-gated candidate needs its recurrence product apart from z and r
            rzr = self.g.add_const(f"{n.input[2]}.d{d}.zr", np.ascontiguousarray(r[: 2 * hs]))
            rhh = self.g.add_const(f"{n.input[2]}.d{d}.h", np.ascontiguousarray(r[2 * hs :]))
        pc = [self.g.add_const(f"{n.input[7]}.d{d}.{k}", p[k * hs : (k + 1) * hs].reshape(1, hs))
              for k in range(3)] if p is not None else None
        outs: list[str] = []
        order = range(steps - 1, -1, -1) if reverse else range(steps)

        def node(op: str, ins: list[str], tag: str, **at: Any) -> str:
            return self.helper_node(n, op, ins, f"{pre}.t{t}.{tag}", **at)

        def cols(v: str, k: int, tag: str, width: int) -> str:
            return node("slice", [v], tag, begin=(0, k * hs), end=(batch, (k + 1) * hs), step=(1, 1)) \
                if width > hs else v

        for t in order:
            xt = node("slice", [gx], "x", begin=(t * batch, 0), end=((t + 1) * batch, ng * hs), step=(1, 1))
            if cell == "GRU":
                xz, xr = cols(xt, 0, "xz", ng * hs), cols(xt, 1, "xr", ng * hs)
                xh = cols(xt, 2, "xh", ng * hs)
                if h is not None:
                    hzr = node("dense", [h, rzr], "hzr")
                    z = node("sigmoid", [node("add", [xz, cols(hzr, 0, "hz", 2 * hs)], "z_in")], "z")
                    rg = node("sigmoid", [node("add", [xr, cols(hzr, 1, "hr", 2 * hs)], "r_in")], "r")
                    if lbr:
                        hh = node("dense", [h, rhh, rh_bias], "hh")
                        cand_in = node("add", [xh, node("mul", [rg, hh], "rhh")], "h_in")
                    else:
                        hh = node("dense", [node("mul", [rg, h], "rh"), rhh], "hh")
                        cand_in = node("add", [xh, hh], "h_in")
                else:  # zero initial state: R's products vanish (the reset bias stays)
                    z = node("sigmoid", [xz], "z")
                    if lbr:
                        rg = node("sigmoid", [xr], "r")
                        bias = node("expand", [rh_bias], "rbh", shape=(batch, hs))
                        cand_in = node("add", [xh, node("mul", [rg, bias], "rhh")], "h_in")
                    else:
                        cand_in = xh
                cand = node("tanh", [cand_in], "cand")
                if h is not None:  # H = cand + z * (H_prev - cand)
                    h = node("add", [cand, node("mul", [z, node("sub", [h, cand], "diff")], "zdiff")], "h")
                else:
                    h = node("sub", [cand, node("mul", [z, cand], "zc")], "h")
            elif cell == "LSTM":
                g = node("add", [xt, node("dense", [h, rc], "hproj")], "gates") if h is not None else xt
                gi, go, gf, gc = (cols(g, k, tag, ng * hs) for k, tag in enumerate(("gi", "go", "gf", "gc")))
                if pc is not None and c is not None:
                    gi = node("add", [gi, node("mul", [c, pc[0]], "pi")], "gi_p")
                    gf = node("add", [gf, node("mul", [c, pc[2]], "pf")], "gf_p")
                ig = node("sigmoid", [gi], "i")
                fg = node("sigmoid", [gf], "f")
                cc = node("tanh", [gc], "cand")
                ic = node("mul", [ig, cc], "ic")
                c = node("add", [ic, node("mul", [fg, c], "fc")], "c") if c is not None else ic
                if pc is not None:
                    go = node("add", [go, node("mul", [c, pc[1]], "po")], "go_p")
                h = node("mul", [node("sigmoid", [go], "o"), node("tanh", [c], "tc")], "h")
            else:  # RNN
                g = node("add", [xt, node("dense", [h, rc], "hproj")], "in") if h is not None else xt
                h = node("tanh", [g], "h")
            outs.append(h)
        if reverse:
            outs.reverse()
        assert h is not None
        y = [self.reshape(n, v, (1, batch, hs), f"{pre}.t{t}.1bh") for t, v in enumerate(outs)]
        return (y[0] if len(y) == 1 else self.helper_node(n, "concat", y, f"{pre}.y", axis=0)), h, c

    def _direction_scan(self, n: Any, d: int, reverse: bool, rows: str, steps: int, batch: int, hs: int,
                        w: np.ndarray, r: np.ndarray, b: np.ndarray, h: str | None,
                        c: str | None) -> tuple[str, str, str]:
        """One LSTM direction as ``dense`` (the input projection) + ``lstm_scan`` (the
        recurrence, built with the TE scan): (Y (T, B, H), last h, last c)."""
        pre = f"d{d}"
        wc = self.g.add_const(f"{n.input[1]}.d{d}", np.ascontiguousarray(w))
        bc = self.g.add_const(f"{n.input[1]}.d{d}.bias", (b[: 4 * hs] + b[4 * hs :]).astype(np.float32))
        gx = self.helper_node(n, "dense", [rows, wc, bc], f"{pre}.xproj")
        gx = self.reshape(n, gx, (steps, batch, 4 * hs), f"{pre}.xproj.tb")
        if reverse:
            gx = self.helper_node(n, "slice", [gx], f"{pre}.xproj.rev", begin=(steps - 1, 0, 0), end=(-1, batch, 4 * hs),
                                  step=(-1, 1, 1))
        zeros = np.zeros((batch, hs), np.float32)
        h = h or self.g.add_const(f"{self.base(n)}.{pre}.h0", zeros)
        c = c or self.g.add_const(f"{self.base(n)}.{pre}.c0", zeros)
        rc = self.g.add_const(f"{n.input[2]}.d{d}", np.ascontiguousarray(r))
        seq = self.helper_node(n, "lstm_scan", [gx, rc, h, c], f"{pre}.scan")  # (T, 2, B, H)

        def part(k: int, t0: int, t1: int, step: int, tag: str) -> str:
            return self.helper_node(n, "slice", [seq], f"{pre}.{tag}", begin=(t0, k, 0, 0), end=(t1, k + 1, batch, hs),
                                    step=(step, 1, 1, 1))

        y = part(0, steps - 1, -1, -1, "y.rev") if reverse else part(0, 0, steps, 1, "y")
        y = self.reshape(n, y, (steps, batch, hs), f"{pre}.y.tbh")
        last_h = self.reshape(n, part(0, steps - 1, steps, 1, "h_last"), (batch, hs), f"{pre}.h_last.bh")
        last_c = self.reshape(n, part(1, steps - 1, steps, 1, "c_last"), (batch, hs), f"{pre}.c_last.bh")
        return y, last_h, last_c

    def _direction_gru_scan(self, n: Any, d: int, reverse: bool, rows: str, steps: int, batch: int, hs: int,
                            w: np.ndarray, r: np.ndarray, b: np.ndarray, h: str | None,
                            lbr: int) -> tuple[str, str, None]:
        """One GRU direction as ``dense`` + ``gru_scan`` (the TE scan): (Y (T, B, H), last h, None)."""
        pre = f"d{d}"
        wb, rb = b[: 3 * hs], b[3 * hs :]
        xbias = wb + np.concatenate([rb[: 2 * hs], np.zeros(hs, np.float32)])
        wc = self.g.add_const(f"{n.input[1]}.d{d}", np.ascontiguousarray(w))
        bc = self.g.add_const(f"{n.input[1]}.d{d}.bias", xbias.astype(np.float32))
        gx = self.helper_node(n, "dense", [rows, wc, bc], f"{pre}.xproj")
        gx = self.reshape(n, gx, (steps, batch, 3 * hs), f"{pre}.xproj.tb")
        if reverse:
            gx = self.helper_node(n, "slice", [gx], f"{pre}.xproj.rev", begin=(steps - 1, 0, 0), end=(-1, batch, 3 * hs),
                                  step=(-1, 1, 1))
        h = h or self.g.add_const(f"{self.base(n)}.{pre}.h0", np.zeros((batch, hs), np.float32))
        rc = self.g.add_const(f"{n.input[2]}.d{d}", np.ascontiguousarray(r))
        rbh = self.g.add_const(f"{self.base(n)}.{pre}.rbh", rb[2 * hs :].astype(np.float32))
        seq = self.helper_node(n, "gru_scan", [gx, rc, rbh, h], f"{pre}.scan", linear_before_reset=lbr)
        y = seq
        if reverse:
            y = self.helper_node(n, "slice", [seq], f"{pre}.y.rev", begin=(steps - 1, 0, 0), end=(-1, batch, hs),
                                 step=(-1, 1, 1))
        last = self.helper_node(n, "slice", [seq], f"{pre}.h_last", begin=(steps - 1, 0, 0), end=(steps, batch, hs),
                                step=(1, 1, 1))
        return y, self.reshape(n, last, (batch, hs), f"{pre}.h_last.bh"), None

    def _outputs(self, n: Any, ys: list[str], hn: list[str], cn: list[Any], steps: int, batch: int, hs: int,
                 layout: int) -> None:
        def stack(vals: list[str], tag: str) -> str:
            parts = [self.reshape(n, v, (1, batch, hs), f"{tag}{k}.1bh") for k, v in enumerate(vals)]
            return parts[0] if len(parts) == 1 else self.helper_node(n, "concat", parts, tag, axis=0)

        if n.output[0]:
            parts = [self.reshape(n, v, (steps, 1, batch, hs), f"y.d{d}.t1bh") for d, v in enumerate(ys)]
            y = parts[0] if len(parts) == 1 else self.helper_node(n, "concat", parts, "y.tdbh", axis=1)
            if layout:
                self.emit(n, "transpose", [y], perm=(2, 0, 1, 3))
            else:
                self.env[n.output[0]] = y
        for k, vals in ((1, hn), (2, cn)):
            if len(n.output) > k and n.output[k]:
                if vals[0] is None:
                    raise self.err(n, self.idx, f"output {k} is not produced by this cell")
                s = stack(vals, f"state{k}")
                if layout:
                    self.emit(n, "transpose", [s], out=k, perm=(1, 0, 2))
                else:
                    self.env[n.output[k]] = s

    def op_LSTM(self, n: Any, i: int) -> None:
        self._rnn(n, i, "LSTM")

    def op_GRU(self, n: Any, i: int) -> None:
        self._rnn(n, i, "GRU")

    def op_RNN(self, n: Any, i: int) -> None:
        self._rnn(n, i, "RNN")
