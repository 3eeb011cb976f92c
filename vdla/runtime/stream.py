"""CommandStream: write VDLA programs by hand, at the level of VTA's runtime.

    s = CommandStream(config)
    s.load_2d(Mem.INP, sram=0, src=a, x_size=4)          # DMA into the input buffer
    s.dep_push(Stage.LOAD, Stage.COMPUTE)                  # data ready -> compute
    s.dep_pop(Stage.LOAD, Stage.COMPUTE)
    s.gemm(kernel)                                         # uop kernel, cached on chip
    ...
    program = s.finish()                                   # FINISH + final synchronisation

Dependency flags follow VTA's runtime exactly: `dep_pop(a, b)` is attached to the next
instruction created in stage b (a second pending pop of the same kind first commits a
NOP); `dep_push(a, b)` sets the push flag on the stream's last instruction if it
belongs to stage a and the flag is free, and otherwise emits a NOP in stage a.

Micro-op kernels are cached by their uop contents: the first use of a kernel appends
it to the program's uop segment and emits a LOAD UOP into a ring in the uop buffer;
later uses while it is resident emit no load. The builder checks what VTA's runtime
checks and names the call that broke a rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import Config
from ..isa import (
    AluOp,
    ISAError,
    Mem,
    Stage,
    Uop,
    alu,
    cfg,
    elem_bytes,
    encode,
    encode_one,
    encode_uops,
    finish,
    gemm,
    load,
    nop,
    stage_of,
    store,
)
from .dram import Buffer
from .kernel import UopKernel
from .program import Program

__all__ = ["CommandStream", "StreamError"]


class StreamError(ValueError):
    """A builder call would produce an invalid program; the message names the call."""


@dataclass
class _Resident:
    sram: int
    count: int


class CommandStream:
    """One program for ``config``, written call by call as with VTA's runtime: `load_2d` and
    `store_2d` (2D DMA with padding), `gemm` and `alu` over a `UopKernel`, `cfg` (GEMM init
    base and epilogue), `dep_push` and
    `dep_pop` (the dependency tokens), `nop`; `finish` appends FINISH and returns the `Program`.
    The module's docstring gives the rules for dependency flags and the micro-op cache."""

    def __init__(self, config: Config, name: str = "program") -> None:
        self.config, self.name = config, name
        self.insns: list = []
        self._pending_prev = {s: 0 for s in Stage}
        self._pending_next = {s: 0 for s in Stage}
        self._uop_words: list[np.ndarray] = []
        self._uop_count = 0
        self._kernel_dram: dict[tuple, int] = {}  # uops -> offset in the uop segment
        self._resident: dict[tuple, _Resident] = {}  # uops -> where they sit in the uop buffer
        self._uop_top = 0
        self._relocs: list[int] = []
        self._finished = False

    # -- instruction creation ------------------------------------------------------
    def _append(self, insn, what: str) -> None:
        if self._finished:
            raise StreamError(f"{what}: the stream is finished")
        stage = stage_of(insn)
        insn = insn.replace(pop_prev=self._pending_prev[stage], pop_next=self._pending_next[stage])
        try:
            encode_one(insn, self.config, len(self.insns))
        except ISAError as e:
            raise StreamError(f"{what}: {e}") from None  # pending pops stay for the next instruction
        self._pending_prev[stage] = self._pending_next[stage] = 0
        self.insns.append(insn)

    def _address(self, buf: Buffer | int, offset: int, mem: Mem, what: str) -> int:
        addr = buf.addr if isinstance(buf, Buffer) else int(buf)
        eb = elem_bytes(self.config, mem)
        if addr % eb:
            name = buf.name if isinstance(buf, Buffer) else f"address {addr:#x}"
            raise StreamError(f"{what}: {name} is not aligned to the {mem.name} element size ({eb} bytes)")
        return addr // eb + offset

    def load_2d(
        self,
        mem: Mem,
        sram: int,
        src: Buffer | int,
        x_size: int,
        y_size: int = 1,
        x_stride: int | None = None,
        offset: int = 0,
        x_pad: tuple[int, int] = (0, 0),
        y_pad: tuple[int, int] = (0, 0),
    ) -> None:
        """DMA `y_size` rows of `x_size` elements (row stride `x_stride`, default x_size) from
        `src` + `offset` elements into SRAM elements starting at `sram`, with zero padding."""
        mem = Mem(mem)
        what = f"load_2d({mem.name}, sram={sram})"
        if mem == Mem.OUT:
            raise StreamError(f"{what}: OUT cannot be loaded; load ACC and let GEMM/ALU write OUT")
        if x_size <= 0 or y_size <= 0:
            raise StreamError(f"{what}: x_size and y_size must be positive (got {x_size}, {y_size}); use nop() for flags")
        base = self._address(src, offset, mem, what)
        self._append(
            load(mem, sram_base=sram, dram_base=base, y_size=y_size, x_size=x_size,
                 x_stride=x_size if x_stride is None else x_stride,
                 x_pad_0=x_pad[0], x_pad_1=x_pad[1], y_pad_0=y_pad[0], y_pad_1=y_pad[1]),
            what,
        )

    def store_2d(
        self, sram: int, dst: Buffer | int, x_size: int, y_size: int = 1, x_stride: int | None = None, offset: int = 0
    ) -> None:
        """DMA OUT elements starting at `sram` to `y_size` rows of `x_size` elements of `dst`."""
        what = f"store_2d(sram={sram})"
        if x_size <= 0 or y_size <= 0:
            raise StreamError(f"{what}: x_size and y_size must be positive (got {x_size}, {y_size}); use nop() for flags")
        base = self._address(dst, offset, Mem.OUT, what)
        self._append(
            store(sram_base=sram, dram_base=base, y_size=y_size, x_size=x_size,
                  x_stride=x_size if x_stride is None else x_stride),
            what,
        )

    def nop(self, stage: Stage) -> None:
        """An instruction that moves nothing, to carry pending pops (or a push) in `stage`."""
        self._append(nop(Stage(stage)), f"nop({Stage(stage).name})")

    # -- micro-op kernels ------------------------------------------------------------
    def _kernel_range(self, kernel: UopKernel, what: str) -> tuple[int, int]:
        """Make `kernel` resident in the uop buffer, loading it if needed; return (bgn, end)."""
        c = self.config
        n = len(kernel.uops)
        if n > c.uop_depth:
            raise StreamError(f"{what}: kernel {kernel.name!r} has {n} uops; the uop buffer holds {c.uop_depth}")
        key = kernel.uops
        hit = self._resident.get(key)
        if hit is not None:
            return hit.sram, hit.sram + n
        if key not in self._kernel_dram:
            try:
                words = encode_uops([Uop(dst_idx=d, src_idx=s, wgt_idx=w) for d, s, w in key], c)
            except ISAError as e:
                raise StreamError(f"{what}: kernel {kernel.name!r}: {e}") from None
            self._kernel_dram[key] = self._uop_count
            self._uop_words.append(words)
            self._uop_count += n
        if self._uop_top + n > c.uop_depth:
            self._uop_top = 0  # ring: wrap and evict whatever the new range overlaps
        lo, hi = self._uop_top, self._uop_top + n
        self._resident = {k: r for k, r in self._resident.items() if r.sram + r.count <= lo or r.sram >= hi}
        self._relocs.append(len(self.insns))
        self._append(
            load(Mem.UOP, sram_base=lo, dram_base=self._kernel_dram[key], y_size=1, x_size=n, x_stride=n),
            f"{what}: uop load",
        )
        self._resident[key] = _Resident(lo, n)
        self._uop_top = hi
        return lo, hi

    def _loop_fields(self, kernel: UopKernel, wgt: bool) -> dict[str, int]:
        loops = list(kernel.loops) + [None] * (2 - len(kernel.loops))
        f: dict[str, int] = {}
        for suffix, loop in zip(("out", "in"), loops):
            f[f"iter_{suffix}"] = loop.extent if loop else 1
            f[f"dst_factor_{suffix}"] = loop.dst if loop else 0
            f[f"src_factor_{suffix}"] = loop.src if loop else 0
            if wgt:
                f[f"wgt_factor_{suffix}"] = loop.wgt if loop else 0
        return f

    def gemm(self, kernel: UopKernel, reset: bool = False, init: bool = False) -> None:
        """ACC[dst] += INP[src] . WGT[wgt]^T over the kernel (or zero ACC[dst] with reset).
        With `init` each iteration starts from ACC[init_base + its WGT index] (`cfg`'s
        init_base) instead of ACC[dst]; with reset too, it copies that row."""
        what = f"gemm({kernel.name!r})"
        if init:
            self._need_epilogue(f"{what} with init")
        bgn, end = self._kernel_range(kernel, what)
        self._append(gemm(reset=int(reset), init=int(init), uop_bgn=bgn, uop_end=end,
                          **self._loop_fields(kernel, True)), what)

    def cfg(self, init_base: int = 0, shift: int = 0, clip_lo: int = 0, clip_hi: int = 0,
            epilogue: bool = False, window: bool = False, warmup: int = 0) -> None:
        """CFG: GEMM init's base row and the GEMM epilogue for the GEMMs after it (until the
        next `cfg`, or FINISH): with `epilogue`, OUT gets min(max(ACC >> shift, clip_lo), clip_hi).
        With `window`, GEMMs take lane o's operands from channel o's last input rows (a
        depthwise conv's taps; `isa.SEMANTIC_CHOICES`), the first `warmup` iterations of each
        inner-loop pass writing nothing."""
        self._need_epilogue("cfg()")
        if (window or warmup) and not self.config.gemm_window:
            raise StreamError(f"cfg(window={window}, warmup={warmup}): config {self.config.name!r} has no GEMM window "
                              "(Config.gemm_window is off)")
        text = f"cfg(init_base={init_base}, shift={shift}, clip=({clip_lo}, {clip_hi}), epilogue={epilogue}"
        text += f", window={window}, warmup={warmup})" if window or warmup else ")"
        self._append(cfg(init_base=init_base, shift=shift, clip_lo=clip_lo, clip_hi=clip_hi, epilogue=int(epilogue),
                         window=int(window), warmup=warmup), text)

    def _need_epilogue(self, what: str) -> None:
        if not self.config.gemm_epilogue:
            raise StreamError(f"{what}: config {self.config.name!r} has no GEMM epilogue (Config.gemm_epilogue is "
                              "off): CFG and GEMM init are illegal there")

    def alu(self, kernel: UopKernel, op: AluOp, imm: int | None = None) -> None:
        """ACC[dst] = op(ACC[dst], imm if given else ACC[src]) over the kernel."""
        op = AluOp(op)
        what = f"alu({op.name}, {kernel.name!r})"
        lo, hi = -(1 << (self.config.alu_imm_width - 1)), (1 << (self.config.alu_imm_width - 1)) - 1
        if imm is not None and not lo <= imm <= hi:
            raise StreamError(f"{what}: immediate {imm} does not fit in {self.config.alu_imm_width} bits ({lo}..{hi})")
        bgn, end = self._kernel_range(kernel, what)
        self._append(
            alu(op, uop_bgn=bgn, uop_end=end, use_imm=int(imm is not None), imm=imm or 0, **self._loop_fields(kernel, False)),
            what,
        )

    # -- dependencies ------------------------------------------------------------------
    @staticmethod
    def _check_pair(a: Stage, b: Stage, what: str) -> tuple[Stage, Stage]:
        a, b = Stage(a), Stage(b)
        if abs(a - b) != 1:
            raise StreamError(f"{what}: no token queue between {a.name} and {b.name} (only neighbouring stages talk)")
        return a, b

    def dep_pop(self, src: Stage, dst: Stage) -> None:
        """Make the next `dst` instruction wait for a token from `src`."""
        src, dst = self._check_pair(src, dst, f"dep_pop({Stage(src).name}, {Stage(dst).name})")
        pending = self._pending_prev if src < dst else self._pending_next
        if pending[dst]:
            self.commit_pending_pop(dst)
        pending[dst] = 1

    def dep_push(self, src: Stage, dst: Stage) -> None:
        """Push a token from `src` to `dst` when `src`'s latest work completes."""
        src, dst = self._check_pair(src, dst, f"dep_push({Stage(src).name}, {Stage(dst).name})")
        self.commit_pending_pop(src)
        flag = "push_next" if src < dst else "push_prev"
        if self.insns and stage_of(self.insns[-1]) == src and not getattr(self.insns[-1], flag):
            self.insns[-1] = self.insns[-1].replace(**{flag: 1})
            return
        self.nop(src)
        self.insns[-1] = self.insns[-1].replace(**{flag: 1})

    def commit_pending_pop(self, stage: Stage) -> None:
        if self._pending_prev[stage] or self._pending_next[stage]:
            self.nop(stage)

    # -- the end -------------------------------------------------------------------------
    def finish(self) -> Program:
        """Synchronise all modules, append FINISH and return the Program (VTA's Synchronize)."""
        self.dep_push(Stage.STORE, Stage.COMPUTE)
        self.dep_push(Stage.LOAD, Stage.COMPUTE)
        self.dep_pop(Stage.STORE, Stage.COMPUTE)
        self.dep_pop(Stage.LOAD, Stage.COMPUTE)
        self.commit_pending_pop(Stage.COMPUTE)
        self._append(finish(), "finish()")
        self._finished = True
        uops = np.concatenate(self._uop_words) if self._uop_words else np.zeros(0, np.uint32)
        return Program(self.config, encode(self.insns, self.config), uops, tuple(self._relocs), (), self.name)

