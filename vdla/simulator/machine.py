"""The accelerator's architectural state and what each instruction does to it.

`Machine` holds the five on-chip buffers (uop, inp, wgt, acc, out) and executes one
decoded instruction at a time against a DRAM byte array, bit-exactly. It knows
nothing about time or dependency tokens: `golden.py` decides the order and the
cycles. Everything is vectorised with numpy; GEMM products go through float BLAS
whenever the sums are provably exact in floating point (numpy's integer matmul has
no BLAS path and is 30-40x slower).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..config import Config
from ..isa import AluOp, Mem, Op, elem_bytes, uop_fields
from . import alu as alu_sem
from .errors import ExecutionError

__all__ = ["Machine", "Counters", "dtype_of"]

_DTYPES = {8: np.int8, 16: np.int16, 32: np.int32}


def dtype_of(width: int) -> type[np.signedinteger]:
    return _DTYPES[width]


@dataclass
class Counters:
    """VTA's profiler counters (bytes moved per memory type, uop-iterations)."""

    inp_load_nbytes: int = 0
    wgt_load_nbytes: int = 0
    acc_load_nbytes: int = 0
    uop_load_nbytes: int = 0
    out_store_nbytes: int = 0
    gemm_counter: int = 0
    alu_counter: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, int]:
        d = {k: v for k, v in self.__dict__.items() if k != "extra"}
        d.update(self.extra)
        return d


@dataclass(frozen=True)
class _Buffer:
    """How one memory type maps DRAM bytes to an SRAM."""

    sram: str  # attribute of Machine holding the SRAM array
    elem_bytes: int  # bytes of one element in DRAM
    dtype: type  # element dtype in DRAM
    counter: str


class Machine:
    """On-chip state of one VDLA core, and the functional semantics of its instructions."""

    def __init__(self, config: Config) -> None:
        c = self.config = config
        self.uop = np.zeros(c.uop_depth, dtype=np.uint32)
        self.uop_dst = np.zeros(c.uop_depth, dtype=np.int64)
        self.uop_src = np.zeros(c.uop_depth, dtype=np.int64)
        self.uop_wgt = np.zeros(c.uop_depth, dtype=np.int64)
        self.inp = np.zeros((c.inp_depth, c.batch, c.block_in), dtype=dtype_of(c.inp_width))
        self.wgt = np.zeros((c.wgt_depth, c.block_out, c.block_in), dtype=dtype_of(c.wgt_width))
        self.acc = np.zeros((c.acc_depth, c.batch, c.block_out), dtype=dtype_of(c.acc_width))
        self.out = np.zeros((c.out_depth, c.batch, c.block_out), dtype=dtype_of(c.out_width))
        # One GEMM uop's dot products are exact in float32 below 2^24, otherwise in float64.
        per_uop = c.block_in << (c.inp_width + c.wgt_width - 2)
        self._fdtype = np.float32 if per_uop < (1 << 24) else np.float64
        self._per_uop_bound = per_uop
        self._inp_f = self.inp.astype(self._fdtype)
        self._wgt_f = self.wgt.astype(self._fdtype)
        self.counters = Counters()
        self.reset_cfg()
        def le(width: int) -> np.dtype:
            return np.dtype(dtype_of(width)).newbyteorder("<")

        layout = {  # memory type -> (SRAM attribute, element dtype in DRAM, counter)
            Mem.UOP: ("uop", np.dtype("<u4"), "uop_load_nbytes"),
            Mem.INP: ("inp", le(c.inp_width), "inp_load_nbytes"),
            Mem.WGT: ("wgt", le(c.wgt_width), "wgt_load_nbytes"),
            Mem.ACC: ("acc", le(c.acc_width), "acc_load_nbytes"),
            Mem.ACC_8BIT: ("acc", np.dtype(np.int8), "acc_load_nbytes"),
            Mem.OUT: ("out", le(c.out_width), "out_store_nbytes"),
        }
        self._buffers = {
            mem: _Buffer(sram, elem_bytes(c, mem), dtype, counter) for mem, (sram, dtype, counter) in layout.items()
        }

    def reset_cfg(self) -> None:
        """CFG's state back to its defaults (at the start of a run and at FINISH): no epilogue, no window,
        init_base 0."""
        self.init_base = self.shift = self.clip_lo = self.clip_hi = self.warmup = 0
        self.epilogue = self.window = False

    def _narrow(self, values: np.ndarray) -> np.ndarray:
        """What a GEMM writes to OUT for new ACC `values`: CFG's epilogue (shift, then clip), or
        the low out_width bits."""
        if self.epilogue:
            values = np.minimum(np.maximum(values.astype(np.int64) >> self.shift, self.clip_lo), self.clip_hi)
        return values.astype(self.out.dtype)

    # -- memory --------------------------------------------------------------------
    def buffer(self, mem: int) -> _Buffer:
        return self._buffers[Mem(mem)]

    def execute(self, insn, index: int, dram: np.ndarray) -> None:
        """Apply one (statically checked) instruction to the SRAMs and `dram`."""
        op = insn.opcode
        if op == Op.LOAD:
            self._load(insn, index, dram)
        elif op == Op.STORE:
            self._store(insn, index, dram)
        elif op == Op.GEMM:
            self._gemm(insn, index)
        elif op == Op.ALU:
            self._alu(insn, index)
        elif op == Op.CFG:
            self.init_base, self.shift = insn.init_base, insn.shift
            self.clip_lo, self.clip_hi, self.epilogue = insn.clip_lo, insn.clip_hi, bool(insn.epilogue)
            self.window, self.warmup = bool(insn.window), insn.warmup
        elif op == Op.FINISH:
            self.reset_cfg()

    @staticmethod
    def _rows(dram: np.ndarray, insn, elem_bytes: int) -> np.ndarray:
        """A (y_size, x_size * elem_bytes) strided view of the DRAM rows an instruction moves."""
        start = insn.dram_base * elem_bytes
        view = dram[start:]
        return np.lib.stride_tricks.as_strided(
            view, shape=(insn.y_size, insn.x_size * elem_bytes), strides=(insn.x_stride * elem_bytes, 1), writeable=True
        )

    def _load(self, insn, index: int, dram: np.ndarray) -> None:
        if insn.x_size == 0:
            return  # NOP: carries flags only
        buf = self.buffer(insn.memory_type)
        sram = getattr(self, buf.sram)
        elem_shape = sram.shape[1:]
        rows = self._rows(dram, insn, buf.elem_bytes)
        data = rows.reshape(insn.y_size, insn.x_size * buf.elem_bytes).copy().view(buf.dtype)
        data = data.reshape((insn.y_size, insn.x_size) + elem_shape)
        ny = insn.y_pad_0 + insn.y_size + insn.y_pad_1
        nx = insn.x_pad_0 + insn.x_size + insn.x_pad_1
        base = insn.sram_base
        if insn.y_pad_0 or insn.y_pad_1 or insn.x_pad_0 or insn.x_pad_1:
            tile = np.zeros((ny, nx) + elem_shape, dtype=sram.dtype)
            tile[insn.y_pad_0 : insn.y_pad_0 + insn.y_size, insn.x_pad_0 : insn.x_pad_0 + insn.x_size] = data
        else:
            tile = data
        sram[base : base + ny * nx] = tile.reshape((ny * nx,) + elem_shape)
        nbytes = insn.x_size * insn.y_size * buf.elem_bytes
        if insn.memory_type == Mem.UOP:
            dst, src, wgt = uop_fields(self.uop[base : base + ny * nx], self.config)
            self.uop_dst[base : base + ny * nx] = dst
            self.uop_src[base : base + ny * nx] = src
            self.uop_wgt[base : base + ny * nx] = wgt
        elif insn.memory_type == Mem.INP:
            self._inp_f[base : base + ny * nx] = sram[base : base + ny * nx]
        elif insn.memory_type == Mem.WGT:
            self._wgt_f[base : base + ny * nx] = sram[base : base + ny * nx]
        elif insn.memory_type == Mem.ACC_8BIT:
            # Counted like VTA's fsim: as full ACC elements.
            nbytes = insn.x_size * insn.y_size * self.config.acc_elem_bytes
        setattr(self.counters, buf.counter, getattr(self.counters, buf.counter) + nbytes)

    def _store(self, insn, index: int, dram: np.ndarray) -> None:
        if insn.x_size == 0 or insn.y_size == 0:
            return
        buf = self.buffer(Mem.OUT)
        n = insn.x_size * insn.y_size
        data = np.ascontiguousarray(self.out[insn.sram_base : insn.sram_base + n], dtype=buf.dtype)
        raw = data.view(np.uint8).reshape(insn.y_size, -1)
        if insn.x_stride >= insn.x_size:
            self._rows(dram, insn, buf.elem_bytes)[...] = raw
        else:  # overlapping rows: later rows win, as in a sequential DMA
            eb = buf.elem_bytes
            for y in range(insn.y_size):
                start = (insn.dram_base + y * insn.x_stride) * eb
                dram[start : start + raw.shape[1]] = raw[y]
        self.counters.out_store_nbytes += n * buf.elem_bytes

    # -- micro-op loops --------------------------------------------------------------
    def _indices(self, insn, index: int, src_factor: tuple[int, int], wgt: bool):
        """Flattened (dst, src, wgt) indices of every uop-iteration in execution order."""
        k = np.arange(insn.uop_bgn, insn.uop_end)
        i = np.arange(insn.iter_out)[:, None, None]
        j = np.arange(insn.iter_in)[None, :, None]
        dst = (self.uop_dst[k] + i * insn.dst_factor_out + j * insn.dst_factor_in).ravel()
        src = (self.uop_src[k] + i * src_factor[0] + j * src_factor[1]).ravel()
        w = (self.uop_wgt[k] + i * insn.wgt_factor_out + j * insn.wgt_factor_in).ravel() if wgt else None
        return dst, src, w

    def alu_raw_hits(self, insn, window: int) -> list[np.ndarray]:
        """For k = 1 ... `window`: which uop-iterations m of ALU `insn` read a row (dst, or src
        for a tensor operand) that iteration m - k writes (`vdla.simulator.timing.alu_stall_cycles`)."""
        if insn.uop_end <= insn.uop_bgn or insn.iter_out == 0 or insn.iter_in == 0:
            return []
        dst, src, _ = self._indices(insn, -1, (insn.src_factor_out, insn.src_factor_in), wgt=False)
        hits = []
        for k in range(1, window + 1):
            hit = np.zeros(len(dst), bool)
            hit[k:] = dst[k:] == dst[:-k]
            if not insn.use_imm:
                hit[k:] |= src[k:] == dst[:-k]
            hits.append(hit)
        return hits

    def _bounds(self, idx: np.ndarray, depth: int, what: str, insn, index: int) -> None:
        if idx.size and int(idx.max()) >= depth:
            t = int(np.argmax(idx >= depth))
            iters = insn.iter_in * (insn.uop_end - insn.uop_bgn)
            i, rest = divmod(t, iters)
            j, k = divmod(rest, insn.uop_end - insn.uop_bgn)
            raise ExecutionError(
                f"instruction {index} ({Op(insn.opcode).name}): {what} index {int(idx[t])} is past the buffer "
                f"(depth {depth}) at iteration i={i}, j={j}, uop {insn.uop_bgn + k}",
                index,
            )

    def _gemm(self, insn, index: int) -> None:
        c = self.config
        n_uop = insn.uop_end - insn.uop_bgn
        if n_uop <= 0 or insn.iter_out == 0 or insn.iter_in == 0:
            return
        dst, x, w = self._indices(insn, index, (insn.src_factor_out, insn.src_factor_in), wgt=True)
        self._bounds(dst, c.acc_depth, "ACC (dst)", insn, index)
        init = self.init_base + w if insn.init else None
        if init is not None:
            self._bounds(init, c.acc_depth, "ACC (init: init_base + WGT index)", insn, index)
        if insn.reset:
            if init is None:
                self.acc[dst] = 0
            else:  # a copy; a row written twice keeps the last
                order = self._init_order(dst, init)
                if order is not None:
                    self.acc[dst[order]] = self.acc[init[order]]
                else:
                    for d, r in zip(dst.tolist(), init.tolist()):
                        self.acc[d] = self.acc[r]
            self.out[dst] = self._narrow(self.acc[dst])
            return
        self._bounds(x, c.inp_depth, "INP (src)", insn, index)
        self._bounds(w, c.wgt_depth, "WGT", insn, index)
        self.counters.gemm_counter += dst.size
        if self.window:  # exact int64 products of the iterations that write (warm-up ones do not)
            dst, prod, init = self._window_products(insn, dst, x, w, init)
        elif init is None:
            prod, dst = self._products(x, w, dst)  # (N, batch, block_out) exact floats, dst in the same order
        if init is not None:
            if self.window:
                self._write_init(dst, init, lambda sel: prod[sel])
            else:
                self._write_init(dst, init, lambda sel: np.einsum(
                    "nbc,noc->nbo", self.inp[x[sel]].astype(np.int64), self.wgt[w[sel]].astype(np.int64)))
            return
        self._accumulate(dst, prod)

    def _accumulate(self, dst: np.ndarray, prod: np.ndarray) -> None:
        """ACC[dst[t]] += prod[t] for every iteration t (in any order: the sums wrap), and OUT."""
        c = self.config
        lanes = c.batch * c.block_out
        if dst.size * self._per_uop_bound < (1 << 53):
            # Dense accumulation over the whole ACC depth: no sort, exact in float64.
            flat = np.add.outer((dst * lanes).astype(np.int32), np.arange(lanes, dtype=np.int32)).ravel()
            sums = np.bincount(flat, weights=prod.reshape(-1).astype(np.float64), minlength=c.acc_depth * lanes)
        else:  # sums could lose precision in float64: accumulate exactly in int64
            sums = np.zeros((c.acc_depth, lanes), dtype=np.int64)
            np.add.at(sums, dst, prod.reshape(dst.size, lanes).astype(np.int64))
        touched = np.zeros(c.acc_depth, dtype=bool)
        touched[dst] = True
        rows = np.flatnonzero(touched)
        sums = sums.reshape(c.acc_depth, c.batch, c.block_out)[rows].astype(np.int64)
        new = alu_sem.wrap(self.acc[rows].astype(np.int64) + sums, c.acc_width)
        self.acc[rows] = new
        self.out[rows] = self._narrow(new)

    def _window_products(self, insn, dst: np.ndarray, x: np.ndarray, w: np.ndarray,
                         init: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """GEMM in CFG's window mode: lane (b, o) of the iteration at position p of its inner-loop
        pass sums WGT[w][o][t] * INP[x of position p - t][b][o] over the taps t (positions before
        the pass count as zero). Returns dst, the int64 products and the init rows of the
        iterations that write: the first `warmup` positions of each pass write nothing."""
        c = self.config
        n = dst.size
        pos = np.tile(np.arange(insn.iter_in * (insn.uop_end - insn.uop_bgn)), insn.iter_out)
        h = self.inp[x][:, :, : c.block_out].astype(np.int64)  # (n, batch, block_out): lane o's channel is o
        wgt = self.wgt[w].astype(np.int64)  # (n, block_out, block_in)
        dot = np.zeros((n, c.batch, c.block_out), dtype=np.int64)
        for t in range(min(c.block_in, n)):
            taps = wgt[:, None, :, t]
            if not taps.any():  # a K-tap kernel leaves the other taps zero
                continue
            back = np.zeros_like(h)
            back[t:] = h[: n - t]
            back[pos < t] = 0
            dot += taps * back
        live = pos >= self.warmup
        return dst[live], dot[live], None if init is None else init[live]

    def _init_order(self, dst: np.ndarray, init: np.ndarray) -> np.ndarray | None:
        """For a GEMM with init: the iterations that stay, the last one of each row written, when
        no init row is one the instruction itself writes (then the iterations are independent);
        None when one is (rare: the iterations must then run in order, each reading the row as
        it stands, as the hardware's forwarding does)."""
        if np.isin(init, dst).any():
            return None
        last = np.full(self.config.acc_depth, -1, dtype=np.int64)
        last[dst] = np.arange(dst.size)  # numpy assigns repeated indices in order: the last wins
        return last[last >= 0]

    def _write_init(self, dst: np.ndarray, init: np.ndarray, products) -> None:
        """GEMM with init: every iteration writes ACC[dst] = ACC[init row] + its product, so of a
        row written twice only the last iteration counts (`_init_order`). `products(sel)`: the
        int64 products of the iterations `sel`."""
        c = self.config
        order = self._init_order(dst, init)
        if order is None:
            prod = products(np.arange(dst.size))
            for t in range(dst.size):
                new = alu_sem.wrap(self.acc[init[t]].astype(np.int64) + prod[t], c.acc_width)
                self.acc[dst[t]] = new
                self.out[dst[t]] = self._narrow(new)
            return
        new = alu_sem.wrap(self.acc[init[order]].astype(np.int64) + products(order), c.acc_width)
        self.acc[dst[order]] = new
        self.out[dst[order]] = self._narrow(new)

    @staticmethod
    def _distinct(idx: np.ndarray, depth: int) -> int:
        seen = np.zeros(depth, dtype=bool)
        seen[idx] = True
        return int(np.count_nonzero(seen))

    def _products(self, x: np.ndarray, w: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """INP[x] . WGT[w]^T for every uop-iteration, and `dst` permuted to match.

        Iterations are grouped by the operand with fewer distinct indices (a stable radix
        sort on 16-bit keys), so the work is one BLAS call per distinct weight (or input)
        over a contiguous block of gathered rows. Sums need no particular order."""
        c = self.config
        n = x.size
        nx, nw = self._distinct(x, c.inp_depth), self._distinct(w, c.wgt_depth)
        group_w = nw <= nx
        if n < 32 or min(nx, nw) * 4 > n:
            return np.einsum("nbc,noc->nbo", self._inp_f[x], self._wgt_f[w]), dst
        key = w if group_w else x
        order = np.argsort(key.astype(np.uint16), kind="stable")
        sk, xs, ws = key[order], x[order], w[order]
        starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]]).tolist()
        ends = starts[1:] + [n]
        sizes = np.diff(starts + [n])
        if sizes.min() == sizes.max() and len(starts) > 1:
            return self._products_stacked(xs, ws, group_w, len(starts)), dst[order]
        out = np.empty((n, c.batch, c.block_out), dtype=self._fdtype)
        if group_w:
            lhs = self._inp_f[xs].reshape(n, c.batch * c.block_in)
            for s, e in zip(starts, ends):
                block = lhs[s:e].reshape(-1, c.block_in) @ self._wgt_f[ws[s]].T
                out[s:e] = block.reshape(e - s, c.batch, c.block_out)
        else:
            lhs = self._wgt_f[ws].reshape(n, c.block_out * c.block_in)
            for s, e in zip(starts, ends):
                block = lhs[s:e].reshape(-1, c.block_in) @ self._inp_f[xs[s]].T  # (m*block_out, batch)
                out[s:e] = block.reshape(e - s, c.block_out, c.batch).transpose(0, 2, 1)
        return out, dst[order]

    def _products_stacked(self, xs: np.ndarray, ws: np.ndarray, group_w: bool, groups: int) -> np.ndarray:
        """Equal-sized groups (the usual case for regular loops): one stacked matmul."""
        c = self.config
        n = xs.size
        m = n // groups
        if group_w:
            lhs = self._inp_f[xs].reshape(groups, m * c.batch, c.block_in)
            rhs = self._wgt_f[ws[::m]].transpose(0, 2, 1)  # (groups, block_in, block_out)
            return np.matmul(lhs, rhs).reshape(n, c.batch, c.block_out)
        lhs = self._wgt_f[ws].reshape(groups, m * c.block_out, c.block_in)
        rhs = self._inp_f[xs[::m]].transpose(0, 2, 1)  # (groups, block_in, batch)
        return np.matmul(lhs, rhs).reshape(n, c.block_out, c.batch).transpose(0, 2, 1)

    def _alu(self, insn, index: int) -> None:
        c = self.config
        n_uop = insn.uop_end - insn.uop_bgn
        if n_uop <= 0 or insn.iter_out == 0 or insn.iter_in == 0:
            return
        dst, src, _ = self._indices(insn, index, (insn.src_factor_out, insn.src_factor_in), wgt=False)
        self._bounds(dst, c.acc_depth, "ACC (dst)", insn, index)
        self.counters.alu_counter += dst.size
        op = int(insn.alu_opcode)
        if insn.use_imm:
            imm = np.int64(insn.imm)
            self._alu_segments(op, dst, None, imm)
        else:
            self._bounds(src, c.acc_depth, "ACC (src)", insn, index)
            self._alu_segments(op, dst, src, None)

    def _alu_segments(self, op: int, dst: np.ndarray, src: np.ndarray | None, imm) -> None:
        """Apply the ALU op in program order, vectorising every stretch of uop-iterations
        in which no row is written twice and no row is read after being written."""
        n = dst.size
        simple = np.unique(dst).size == n
        if simple and src is not None:
            # Hazard only if some iteration reads a row an earlier iteration wrote.
            first_write = np.full(self.config.acc_depth, n, dtype=np.int64)
            np.minimum.at(first_write, dst, np.arange(n))
            simple = not np.any(first_write[src] < np.arange(n))
        if simple:
            self._alu_apply(op, dst, src, imm)
            return
        if src is None and op in (AluOp.MIN, AluOp.MAX):
            # Repeating min/max with the same immediate is idempotent.
            self._alu_apply(op, np.unique(dst), None, imm)
            return
        start, written = 0, set()
        dl = dst.tolist()
        sl = src.tolist() if src is not None else None
        for t in range(n):
            if dl[t] in written or (sl is not None and sl[t] in written):
                self._alu_apply(op, dst[start:t], None if src is None else src[start:t], imm)
                start, written = t, set()
            written.add(dl[t])
        self._alu_apply(op, dst[start:], None if src is None else src[start:], imm)

    def _alu_apply(self, op: int, dst: np.ndarray, src: np.ndarray | None, imm) -> None:
        a = self.acc[dst].astype(np.int64)
        b = imm if src is None else self.acc[src].astype(np.int64)
        res = alu_sem.apply(op, a, b, self.config.acc_width)
        self.acc[dst] = res
        self.out[dst] = res.astype(self.out.dtype)
