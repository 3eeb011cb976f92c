"""CFG, the GEMM epilogue, GEMM init and window mode: programs for comparing an RTL device with fsim
(tests/hardware/test_cfg.py on pysim, tests/simulator/rtl/test_verilator.py on Verilator).

`run(dev, build, seed)` loads random INP, WGT and ACC rows (`data`), adds `build`'s
instructions (one of `CASES`, or the builders below combined), stores every OUT row and
returns those bytes with the report; `buffers(dev)` reads the ACC and OUT buffers of fsim or
pysim as raw rows, to compare them bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vdla.config import Config
from vdla.runtime import AluOp, CommandStream, Device, Loop, Mem, Stage, UopKernel
from vdla.simulator import Report

__all__ = ["ACC_ROWS", "CASES", "ROWS", "WINDOW_CASES", "buffers", "cfg_between_gemms", "data", "gemm_under",
           "init_chain", "init_one_by_one", "init_row_ahead", "run"]

ROWS = 16  # INP and WGT rows loaded
ACC_ROWS = 64  # ACC rows loaded (and OUT rows stored)


def buffers(dev: Device) -> dict[str, list[int]]:
    """The ACC and OUT buffers' rows as raw integers (pysim's `read_buffer` form)."""
    if dev.name == "pysim":
        sim = dev.backend.sim
        return {kind: sim.read_buffer(kind) for kind in ("acc", "out")}
    m, c = dev.backend.machine, dev.config
    acc = m.acc.astype(f"<i{c.acc_width // 8}")
    out = m.out.astype(f"<i{c.out_width // 8}")
    return {kind: [int.from_bytes(row.tobytes(), "little") for row in rows] for kind, rows in (("acc", acc), ("out", out))}


def data(c: Config, seed: int) -> dict[Mem, np.ndarray]:
    """Random rows: INP and WGT over all of int8, ACC at every scale (so shifts 0 ... 31 and
    the clip bounds all matter)."""
    rng = np.random.default_rng(seed)
    lanes = ACC_ROWS * c.batch * c.block_out
    scale = 1 << rng.integers(0, c.acc_width - 1, lanes)
    acc = (rng.integers(-(1 << 30), 1 << 30, lanes) % scale * rng.choice([-1, 1], lanes)).astype(np.int32)
    return {
        Mem.INP: rng.integers(-128, 128, ROWS * c.inp_elem_bytes, dtype=np.int8),
        Mem.WGT: rng.integers(-128, 128, ROWS * c.wgt_elem_bytes, dtype=np.int8),
        Mem.ACC: acc,
    }


def run(dev: Device, build: Callable[[CommandStream], None], seed: int = 0) -> tuple[np.ndarray, Report]:
    """`build`'s instructions after the loads of `data(seed)`, then every OUT row stored:
    the stored bytes and the run's report."""
    c = dev.config
    rows = data(c, seed)
    bufs = {mem: dev.array(rows[mem]) for mem in (Mem.INP, Mem.WGT, Mem.ACC)}
    out = dev.alloc(ACC_ROWS * c.out_elem_bytes)
    try:
        s = CommandStream(c, build.__name__)
        s.load_2d(Mem.INP, 0, bufs[Mem.INP], x_size=ROWS)
        s.load_2d(Mem.WGT, 0, bufs[Mem.WGT], x_size=ROWS)
        s.dep_push(Stage.LOAD, Stage.COMPUTE)
        s.dep_pop(Stage.LOAD, Stage.COMPUTE)
        s.load_2d(Mem.ACC, 0, bufs[Mem.ACC], x_size=ACC_ROWS)
        build(s)
        s.dep_push(Stage.COMPUTE, Stage.STORE)
        s.dep_pop(Stage.COMPUTE, Stage.STORE)
        s.store_2d(0, out, x_size=ACC_ROWS)
        report = dev.run(s.finish())
        return out.read(np.uint8), report
    finally:
        for buf in (*bufs.values(), out):
            buf.free()


def one_by_one(dst: int, src: int, wgt: int, n: int, *, wgt_step: int = 1) -> UopKernel:
    """`n` iterations, each its own dst row (dst, dst + 1, ...), INP row and WGT row."""
    return UopKernel.single(dst, src, wgt, loops=(Loop(n, dst=1, src=1, wgt=wgt_step),))


def gemm_under(shift: int, lo: int, hi: int, epilogue: bool = True) -> Callable[[CommandStream], None]:
    def build(s: CommandStream) -> None:
        s.cfg(shift=shift, clip_lo=lo, clip_hi=hi, epilogue=epilogue)
        s.gemm(one_by_one(0, 0, 0, ROWS))  # accumulates onto the random ACC rows
        s.gemm(UopKernel.single(ROWS, loops=(Loop(4, dst=1),)), reset=True)  # zeros, then the epilogue
    build.__name__ = f"epilogue-{shift}-{lo}-{hi}-{int(epilogue)}"
    return build


def alu_untouched(s: CommandStream) -> None:
    s.cfg(shift=4, clip_lo=-8, clip_hi=8, epilogue=True)
    s.alu(UopKernel.single(0, loops=(Loop(8, dst=1),)), AluOp.ADD, 1000)  # the low bits, as ever
    s.gemm(one_by_one(8, 0, 0, 8))


def cfg_between_gemms(s: CommandStream) -> None:
    s.cfg(shift=9, clip_lo=-50, clip_hi=100, epilogue=True)
    s.gemm(one_by_one(0, 0, 0, 8))
    s.cfg(shift=1, clip_lo=-128, clip_hi=127, epilogue=True, init_base=40)
    s.gemm(one_by_one(8, 0, 0, 8), init=True)
    s.cfg()  # back to VTA's narrowing
    s.gemm(one_by_one(16, 0, 0, 8))


def init_one_by_one(s: CommandStream) -> None:
    """Two output blocks per weight row, each from the bias row init_base + its WGT index."""
    s.cfg(init_base=32, shift=6, clip_lo=-100, clip_hi=100, epilogue=True)
    s.gemm(UopKernel(((0, 0, 0), (8, 1, 1)), loops=(Loop(4, dst=1, src=2, wgt=2), Loop(2, dst=4))), init=True)


def init_reset_copy(s: CommandStream) -> None:
    s.cfg(init_base=40, shift=3, clip_lo=-128, clip_hi=127, epilogue=True)
    s.gemm(UopKernel.single(0, 0, 0, loops=(Loop(3, dst=1, wgt=2), Loop(4, dst=3, wgt=1))), reset=True, init=True)
    s.cfg(init_base=48)  # a copy narrowed as VTA does
    s.gemm(UopKernel.single(12, ROWS + 5, 0, loops=(Loop(4, dst=1, wgt=1),)), reset=True, init=True)  # src unread


def init_row_twice(s: CommandStream) -> None:
    """Rows 0-3 written twice by one init GEMM: the last iteration (WGT 1, bias row 33) counts."""
    s.cfg(init_base=32)
    s.gemm(UopKernel.single(0, 0, 0, loops=(Loop(2, wgt=1), Loop(4, dst=1, src=1))), init=True)
    s.gemm(UopKernel.single(8, 0, 0, loops=(Loop(2, wgt=1), Loop(4, dst=1, src=1))), reset=True, init=True)


def init_chain(distance: int, reset: bool, base: int = 20, n: int = ROWS - 2) -> Callable[[CommandStream], None]:
    """Iteration t < n writes row base + distance + t and starts from row base + t (init_base
    `base` + WGT index t): the row iteration t - distance wrote, still in flight for small distances."""
    def build(s: CommandStream) -> None:
        s.cfg(init_base=base, shift=2, clip_lo=-90, clip_hi=90, epilogue=True)
        s.gemm(UopKernel.single(base + distance, 0, 0, loops=(Loop(n, dst=1, src=1, wgt=1),)), reset=reset, init=True)
    build.__name__ = f"init-chain-{distance}{'-reset' if reset else ''}"
    return build


def init_row_ahead(s: CommandStream) -> None:
    """Init rows that later iterations write (read before they are written) and a row that is
    its own init row (init_base + WGT index = dst)."""
    s.cfg(init_base=2)
    s.gemm(UopKernel.single(0, 0, 0, loops=(Loop(6, dst=1, src=1, wgt=1),)), init=True)  # reads 2.., writes 0..
    s.cfg(init_base=10)
    s.gemm(UopKernel.single(10, 0, 0, loops=(Loop(3, src=1), Loop(4, dst=1, wgt=1))), init=True)  # row = its init row


# -- window mode (CFG's window, Config.gemm_window) ------------------------------------------------


def window_gemm(warmup: int | Callable[[Config], int], uops: tuple[tuple[int, int, int], ...], outer: Loop, inner: Loop,
                *, init: bool = False, **cfg) -> Callable[[CommandStream], None]:
    """One window-mode GEMM (`uops` in `outer` x `inner`) after a CFG with `warmup` (or
    warmup(config)) and `cfg`'s other fields."""
    def build(s: CommandStream) -> None:
        w = warmup(s.config) if callable(warmup) else warmup
        s.cfg(window=True, warmup=w, **cfg)
        s.gemm(UopKernel(uops, loops=(outer, inner)), init=init)
    return build


def window_passes(s: CommandStream) -> None:
    """Warm-up 0, 1 and 2 over several uops per inner pass and several passes (the window
    restarts at each), epilogue on and off, accumulating onto the random ACC rows."""
    window_gemm(0, ((0, 0, 0),), Loop(1), Loop(ROWS, dst=1, src=1, wgt=1))(s)
    window_gemm(1, ((16, 0, 3), (17, 5, 4)), Loop(3, dst=8, src=1, wgt=1), Loop(4, dst=2, src=2, wgt=0),
                shift=3, clip_lo=-100, clip_hi=90, epilogue=True)(s)
    window_gemm(2, ((40, 1, 2), (41, 9, 0), (42, 4, 7)), Loop(2, dst=3, src=3), Loop(3, dst=6, src=1, wgt=2),
                shift=5, clip_lo=-128, clip_hi=127, epilogue=True)(s)


def window_warmup_max(s: CommandStream) -> None:
    """Warm-up block_in - 1 (the window's length): each pass writes only from its block_in-th
    iteration, which sees all block_in rows; two uops, two passes."""
    n = s.config.block_in // 2 + 2  # inner iterations: 2n >= block_in + 2 positions per pass
    window_gemm(lambda c: c.block_in - 1, ((0, 0, 1), (1, ROWS - n, 2)), Loop(2, dst=2 * n, wgt=3),
                Loop(n, dst=2, src=1), shift=2, clip_lo=-60, clip_hi=60, epilogue=True)(s)


def window_forwarding(s: CommandStream) -> None:
    """Iterations that accumulate onto the row one 1 ... 6 iterations before wrote (d uops,
    each its own row, looped), with warm-up iterations among them that must not be forwarded."""
    for n, d in enumerate((1, 2, 3, 4, 6)):
        uops = tuple((8 * n + u, u, u) for u in range(d))
        warmup = lambda c, d=d: min(d + 1, c.block_in - 1)  # noqa: E731
        window_gemm(warmup, uops, Loop(2, src=2), Loop(-(-12 // d), src=1, wgt=1),
                    shift=4, clip_lo=-128, clip_hi=127, epilogue=n % 2 == 1)(s)


def window_init(s: CommandStream) -> None:
    """Init + window: iteration t writes row 22 + d + t from bias row 22 + t (init_base + its
    WGT index), which iteration t - d wrote, or, a warm-up one, did not."""
    for base, d, warmup in ((2, 1, 1), (22, 2, 1), (42, 3, 2)):
        window_gemm(warmup, ((base + d, 0, 0),), Loop(1), Loop(ROWS - 2, dst=1, src=1, wgt=1), init=True,
                    init_base=base, shift=2, clip_lo=-90, clip_hi=90, epilogue=True)(s)


def window_reset_alu(s: CommandStream) -> None:
    """Under window mode, reset GEMMs (plain and init copies) and the ALU run as ever."""
    s.cfg(window=True, warmup=1, init_base=40, shift=3, clip_lo=-50, clip_hi=50, epilogue=True)
    s.gemm(UopKernel.single(0, 0, 0, loops=(Loop(2, dst=4), Loop(4, dst=1))), reset=True)
    s.gemm(UopKernel.single(8, 0, 0, loops=(Loop(2, dst=4, wgt=2), Loop(4, dst=1, wgt=1))), reset=True, init=True)
    s.alu(UopKernel.single(16, 20, loops=(Loop(8, dst=1, src=1),)), AluOp.ADD)
    s.alu(UopKernel.single(24, loops=(Loop(8, dst=1),)), AluOp.SHR, 3)
    s.gemm(one_by_one(32, 0, 0, 8))  # and a window GEMM after them


#: the window cases (only for a Config with gemm_window)
WINDOW_CASES: dict[str, Callable[[CommandStream], None]] = {
    "window-passes": window_passes,
    "window-warmup-max": window_warmup_max,
    "window-forwarding": window_forwarding,
    "window-init": window_init,
    "window-reset-alu": window_reset_alu,
}


CASES: dict[str, Callable[[CommandStream], None]] = {
    "epilogue-off": gemm_under(7, -3, 3, epilogue=False),
    "shift-0": gemm_under(0, -128, 127),
    "shift-7": gemm_under(7, -20, 50),
    "shift-31": gemm_under(31, -128, 127),
    "shift-31-clipped": gemm_under(31, 0, 0),
    "clip-lo-above-hi": gemm_under(3, 5, -5),
    "clip-negative": gemm_under(2, -100, -10),
    "clip-positive": gemm_under(12, 10, 20),
    "alu-untouched": alu_untouched,
    "cfg-between-gemms": cfg_between_gemms,
    "init-1x1": init_one_by_one,
    "init-reset-copy": init_reset_copy,
    "init-row-twice": init_row_twice,
    "init-row-ahead": init_row_ahead,
    **{f"init-chain-{d}": init_chain(d, False) for d in (1, 2, 3, 4, 6)},
    **{f"init-chain-{d}-reset": init_chain(d, True) for d in (1, 2, 5)},
    **WINDOW_CASES,
}
