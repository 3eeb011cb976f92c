"""Config: every parameter of the VDLA accelerator, in one frozen dataclass.

This is the single source of truth for the accelerator's shape. The ISA field
widths (`vdla.isa`), the hardware (`vdla.hardware`), the simulators, the runtime and
the compiler all take a `Config`; nothing else hard-codes a block size or a width.

Only independent parameters are stored. Everything that follows from them (element
bytes, buffer depths, index widths, the OUT buffer that mirrors ACC) is a property.
Defaults are VTA's (`vta_config.json`): 1x16x16 GEMM, int8 inputs and weights, int32
accumulators, 32/32/256/128 KiB uop/inp/wgt/acc buffers, a 64-bit DRAM bus.

Timing parameters of the golden simulator's cycle model live in `Timing`, nested in
the Config, because they describe the same machine.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Config", "ConfigError", "Timing", "PRESETS", "preset"]

#: Bit widths an operand may have. Sub-byte operands would need bit packing in every
#: executor; VTA's HLS and Chisel cores only ever ran 8-bit operands.
OPERAND_WIDTHS = (8, 16, 32)
ACC_WIDTHS = (16, 32)
BUS_WIDTHS = (32, 64, 128, 256, 512)
#: LOAD/STORE address their SRAM with a 16-bit field (VTA's VTA_MEMOP_SRAM_ADDR_BIT_WIDTH).
MAX_BUFFER_DEPTH = 1 << 16
#: A micro-op is one 32-bit word holding the dst, src and wgt indices.
UOP_BITS = 32


class ConfigError(ValueError):
    """A Config parameter is invalid; the message names the parameter."""


def _is_pow2(n: int) -> bool:
    return isinstance(n, int) and n > 0 and n & (n - 1) == 0


def _log2(n: int) -> int:
    return n.bit_length() - 1


@dataclass(frozen=True)
class Timing:
    """Cycle-model parameters (see `vdla.simulator.timing` for how they are used)."""

    # Defaults are calibrated against the Amaranth core (benchmarks/bench_cycle_model.py)
    # with the test memory of vdla.hardware.testbench: reads answer `dram_latency` cycles
    # after the request, one bus word per cycle, with no gaps between bursts.

    #: Cycles from a DRAM read request to its first data beat.
    dram_latency: int = 32
    #: Cycles from the last beat of a DRAM write to its acknowledgement.
    dram_write_latency: int = 2
    #: Longest AXI burst in beats; a row of a 2D transfer is split into bursts.
    max_burst_beats: int = 16
    #: Idle cycles the bus loses between two bursts (address phase, turnaround).
    burst_gap: int = 0
    #: Cycles to decode and issue any instruction in its module.
    insn_overhead: int = 2
    #: Cycles a DMA needs after its last beat to finish.
    dma_tail: int = 1
    #: Cycles from start until fetch issues its first read.
    launch_latency: int = 6
    #: Pipeline depth of the GEMM core: cycles from the last uop issue to the last write.
    gemm_latency: int = 9
    #: Initiation interval of the tensor ALU with a tensor operand (ACC has two read ports).
    alu_ii_tensor: int = 1
    #: Initiation interval of the tensor ALU with an immediate operand.
    alu_ii_imm: int = 1
    #: Pipeline depth of the tensor ALU.
    alu_latency: int = 10
    #: Cycles from an ALU uop-iteration's issue to the earliest issue of a later one that
    #: reads the row it writes (the ALU's result is registered twice before write-back).
    alu_raw_distance: int = 3

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            low = 1 if f.name in ("max_burst_beats", "insn_overhead", "alu_ii_tensor", "alu_ii_imm",
                                  "alu_raw_distance") else 0
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise ConfigError(f"timing.{f.name} must be an integer >= {low}, got {v!r}")

    def replace(self, **changes: int) -> Timing:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Config:
    """The accelerator's parameters. Sizes are in bytes, widths in bits, all powers of two."""

    name: str = "default"
    #: GEMM intrinsic shape: (batch x block_in) . (block_in x block_out)^T per cycle.
    batch: int = 1
    block_in: int = 16
    block_out: int = 16
    #: Operand widths in bits: input, weight, accumulator, output (ACC narrowed to OUT).
    inp_width: int = 8
    wgt_width: int = 8
    acc_width: int = 32
    out_width: int = 8
    #: On-chip buffer sizes in bytes. OUT has no size of its own: it mirrors ACC's depth.
    uop_buff_size: int = 32 * 1024
    inp_buff_size: int = 32 * 1024
    wgt_buff_size: int = 256 * 1024
    acc_buff_size: int = 128 * 1024
    #: DRAM data bus width in bits (64 on the Pynq-Z1's ACP port).
    bus_width: int = 64
    #: Depth of each of the three command queues fetch fills (load, compute, store).
    cmd_queue_depth: int = 512
    #: Depth of each of the four dependency-token queues (l2g, g2l, g2s, s2g).
    dep_queue_depth: int = 1024
    #: Width of the DRAM address an instruction carries (in elements of its memory type).
    dram_addr_width: int = 32
    #: Width of the GEMM/ALU loop trip counts (VTA_LOOP_ITER_WIDTH).
    loop_iter_width: int = 14
    #: Width of the ALU immediate, two's complement.
    alu_imm_width: int = 16
    #: Core clock used to turn cycles into time and GOPS in reports.
    clock_mhz: float = 100.0
    #: Register the ACC block RAMs' read data before the tensor pipeline's forwarding
    #: multiplexers (the read moves a stage earlier; no cycle is added). Costs three ACC
    #: rows of flip-flops (two read registers, one more forwarding source).
    acc_read_register: bool = True
    #: Register the INP/WGT block RAMs' read data once more before the GEMM array's lane
    #: copies (a large part, where a block RAM's slow output crosses the die to the far
    #: lanes). Adds a stage to the tensor pipeline: GEMM and ALU instructions take one
    #: cycle more each (`Timing.gemm_latency` and `alu_latency` are without it).
    operand_read_register: bool = False
    #: Register the GEMM adder tree's partial sums halfway down (a large part, where a far
    #: multiplier's product and the whole tree do not fit in one clock period). Adds a stage
    #: to the tensor pipeline as `operand_read_register` does (`tensor_stages`).
    gemm_sum_register: bool = False
    #: Copy the INP word once more, into one register per group of GEMM lanes, between its
    #: read register and the lanes' own copies (a large part, where one register drove the
    #: multipliers of every lane across the die). WGT is read a cycle later to match. Adds a
    #: stage to the tensor pipeline as `operand_read_register` does (`tensor_stages`).
    inp_fanout_register: bool = False
    #: Register the tensor ALU's MIN/MAX compare (one bit per lane, with the operand it may
    #: pick) and pick in the ALU's second stage (a large part, where the compare's carry chain
    #: and its fan-out to every result bit did not fit in a period). No cycle is added; costs
    #: an accumulator row of flip-flops.
    alu_compare_register: bool = False
    #: VDLA's CFG instruction and GEMM init: the GEMM requantises (shift, clip) what it writes to
    #: OUT and starts from a bias row, so a layer needs no reset or ALU tail. Off (a part with no
    #: room for the logic, such as the iCE40 UP5K): CFG and a GEMM with init are illegal, and the
    #: compiler keeps the tail on the ALU.
    gemm_epilogue: bool = True
    #: CFG's window mode: lane o of the GEMM array multiplies channel o's last block_in input rows
    #: (its taps, newest first) by a weight row holding channel o's taps on the reduction axis, so
    #: a depthwise conv does K*block_in useful MACs a cycle instead of block_in. Costs block_in - 1
    #: INP words of flip-flops and a multiplexer on every multiplier input. Needs the CFG
    #: instruction (`gemm_epilogue`) and block_in == block_out (lane o's channel is input element
    #: o). None (the default): on wherever those hold.
    gemm_window: bool | None = None
    timing: Timing = field(default_factory=Timing)

    def __post_init__(self) -> None:
        self._check_pow2("batch", "block_in", "block_out")
        for name in ("inp_width", "wgt_width", "out_width"):
            self._check_choice(name, OPERAND_WIDTHS)
        self._check_choice("acc_width", ACC_WIDTHS)
        self._check_choice("bus_width", BUS_WIDTHS)
        if self.out_width > self.acc_width:
            raise ConfigError(f"out_width ({self.out_width}) must not exceed acc_width ({self.acc_width})")
        if self.inp_width + self.wgt_width > self.acc_width:
            raise ConfigError(
                f"acc_width ({self.acc_width}) must hold one product of inp_width ({self.inp_width}) "
                f"and wgt_width ({self.wgt_width}) bits"
            )
        for kind in ("uop", "inp", "wgt", "acc"):
            name = f"{kind}_buff_size"
            size, elem = getattr(self, name), getattr(self, f"{kind}_elem_bytes")
            self._check_pow2(name)
            if size < elem:
                raise ConfigError(f"{name} ({size} B) is smaller than one {kind} element ({elem} B)")
            if size // elem < 2:
                raise ConfigError(f"{name} ({size} B) holds one {kind} element; a buffer needs at least two")
            if size // elem > MAX_BUFFER_DEPTH:
                raise ConfigError(
                    f"{name} ({size} B) holds {size // elem} elements; "
                    f"LOAD/STORE address at most {MAX_BUFFER_DEPTH}"
                )
        if self.uop_dst_bits + self.uop_src_bits + self.uop_wgt_bits > UOP_BITS:
            raise ConfigError(
                f"a micro-op needs {self.uop_dst_bits}+{self.uop_src_bits}+{self.uop_wgt_bits} index bits "
                f"(acc/inp/wgt depths), more than {UOP_BITS}: reduce acc_buff_size, inp_buff_size or wgt_buff_size"
            )
        if self.gemm_window is None:  # the default: wherever the core can have it
            object.__setattr__(self, "gemm_window", self.gemm_window_implied)
        elif not isinstance(self.gemm_window, bool):
            raise ConfigError(f"gemm_window must be true, false or null, got {self.gemm_window!r}")
        elif self.gemm_window is True and not self.gemm_epilogue:
            raise ConfigError("gemm_window needs the CFG instruction: gemm_epilogue is off (set gemm_window false)")
        elif self.gemm_window is True and self.block_in != self.block_out:
            raise ConfigError(f"gemm_window needs block_in == block_out (lane o takes input element o): "
                              f"block_in {self.block_in}, block_out {self.block_out}")
        self._check_range("cmd_queue_depth", 1, 1 << 16)
        self._check_range("dep_queue_depth", 1, 1 << 16)
        self._check_range("dram_addr_width", 16, 32)
        self._check_range("loop_iter_width", 1, 16)
        self._check_range("alu_imm_width", 2, 16)
        v = self.clock_mhz
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ConfigError(f"clock_mhz must be a positive number, got {self.clock_mhz!r}")
        # the pipeline options: every field declared bool
        for name in (f.name for f in dataclasses.fields(self) if f.type in (bool, "bool")):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if not isinstance(self.timing, Timing):
            raise ConfigError(f"timing must be a Timing, got {type(self.timing).__name__}")

    def _check_pow2(self, *names: str) -> None:
        for name in names:
            v = getattr(self, name)
            if isinstance(v, bool) or not _is_pow2(v):
                raise ConfigError(f"{name} must be a positive power of two, got {v!r}")

    def _check_choice(self, name: str, choices: tuple[int, ...]) -> None:
        v = getattr(self, name)
        if isinstance(v, bool) or v not in choices:
            raise ConfigError(f"{name} must be one of {choices}, got {v!r}")

    def _check_range(self, name: str, low: int, high: int) -> None:
        v = getattr(self, name)
        if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high:
            raise ConfigError(f"{name} must be an integer in [{low}, {high}], got {v!r}")

    # -- element sizes -------------------------------------------------------------
    @property
    def inp_elem_bytes(self) -> int:
        """Bytes of one INP element: a batch x block_in tile."""
        return self.batch * self.block_in * self.inp_width // 8

    @property
    def wgt_elem_bytes(self) -> int:
        """Bytes of one WGT element: a block_out x block_in tile (o-major)."""
        return self.block_out * self.block_in * self.wgt_width // 8

    @property
    def acc_elem_bytes(self) -> int:
        """Bytes of one ACC element: a batch x block_out tile of accumulators."""
        return self.batch * self.block_out * self.acc_width // 8

    @property
    def out_elem_bytes(self) -> int:
        """Bytes of one OUT element: a batch x block_out tile of narrowed outputs."""
        return self.batch * self.block_out * self.out_width // 8

    @property
    def uop_elem_bytes(self) -> int:
        return UOP_BITS // 8

    @property
    def acc8_elem_bytes(self) -> int:
        """Bytes in DRAM of one ACC element loaded with sign extension from 8 bits (ACC_8BIT)."""
        return self.batch * self.block_out

    # -- buffer depths and index widths -------------------------------------------
    @property
    def uop_depth(self) -> int:
        return self.uop_buff_size // self.uop_elem_bytes

    @property
    def inp_depth(self) -> int:
        return self.inp_buff_size // self.inp_elem_bytes

    @property
    def wgt_depth(self) -> int:
        return self.wgt_buff_size // self.wgt_elem_bytes

    @property
    def acc_depth(self) -> int:
        return self.acc_buff_size // self.acc_elem_bytes

    @property
    def out_depth(self) -> int:
        """OUT is indexed exactly like ACC: every GEMM/ALU write to ACC[i] also writes OUT[i]."""
        return self.acc_depth

    @property
    def out_buff_size(self) -> int:
        return self.out_depth * self.out_elem_bytes

    @property
    def log_uop_depth(self) -> int:
        return _log2(self.uop_depth)

    @property
    def log_inp_depth(self) -> int:
        return _log2(self.inp_depth)

    @property
    def log_wgt_depth(self) -> int:
        return _log2(self.wgt_depth)

    @property
    def log_acc_depth(self) -> int:
        return _log2(self.acc_depth)

    @property
    def uop_dst_bits(self) -> int:
        return max(1, self.log_acc_depth)

    @property
    def uop_src_bits(self) -> int:
        # GEMM reads INP with it, ALU reads ACC: wide enough for both.
        return max(1, self.log_acc_depth, self.log_inp_depth)

    @property
    def uop_wgt_bits(self) -> int:
        return max(1, self.log_wgt_depth)

    @property
    def epilogue_shift_bits(self) -> int:
        """Width of CFG's shift: enough for every shift of an ACC value, 0 ... acc_width - 1."""
        return max(1, (self.acc_width - 1).bit_length())

    @property
    def gemm_window_implied(self) -> bool:
        """What `gemm_window` is when not given: on wherever the core can have it (CFG, and
        block_in == block_out)."""
        return self.gemm_epilogue is True and self.block_in == self.block_out

    @property
    def window_warmup_bits(self) -> int:
        """Width of CFG's warmup: 0 ... block_in - 1 (the window holds block_in rows)."""
        return max(1, (self.block_in - 1).bit_length())

    @property
    def bus_bytes(self) -> int:
        return self.bus_width // 8

    @property
    def tensor_stages(self) -> int:
        """The stages the optional registers add to the tensor pipeline (each delays GEMM's sums
        a cycle, and the ACC side waits with them): `operand_read_register`, `gemm_sum_register`,
        `inp_fanout_register`."""
        return int(self.operand_read_register) + int(self.gemm_sum_register) + int(self.inp_fanout_register)

    @property
    def macs_per_cycle(self) -> int:
        return self.batch * self.block_in * self.block_out

    @property
    def peak_gops(self) -> float:
        """Peak GEMM throughput in GOPS (a MAC is two operations) at `clock_mhz`."""
        return 2 * self.macs_per_cycle * self.clock_mhz / 1000.0

    @property
    def bitstream_name(self) -> str:
        """VTA's naming scheme: {batch}x{block}_i{inp}w{wgt}a{acc}_{log uop,inp,wgt,acc sizes}."""
        logs = "_".join(str(_log2(getattr(self, f"{k}_buff_size"))) for k in ("uop", "inp", "wgt", "acc"))
        block = self.block_in if self.block_in == self.block_out else f"{self.block_in}x{self.block_out}"
        return f"{self.batch}x{block}_i{self.inp_width}w{self.wgt_width}a{self.acc_width}_{logs}"

    # -- compatibility -------------------------------------------------------------
    #: Parameters that shape the instruction encoding and the data layout. Programs built for
    #: one Config run on any other with the same values (bus width, queue depths, clock and
    #: timing are implementation choices).
    ARCHITECTURAL = (
        "batch", "block_in", "block_out", "inp_width", "wgt_width", "acc_width", "out_width",
        "uop_buff_size", "inp_buff_size", "wgt_buff_size", "acc_buff_size",
        "dram_addr_width", "loop_iter_width", "alu_imm_width", "gemm_epilogue",
        "gemm_window",
    )

    def architecture_differences(self, other: Config) -> list[str]:
        """'name: mine != theirs' for every architectural parameter that differs."""
        return [
            f"{k}: {getattr(self, k)} != {getattr(other, k)}"
            for k in self.ARCHITECTURAL
            if getattr(self, k) != getattr(other, k)
        ]

    # -- JSON ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Config:
        if not isinstance(data, dict):
            raise ConfigError(f"a config must be a JSON object, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown config parameter(s): {', '.join(unknown)}")
        kwargs = dict(data)
        if "timing" in kwargs:
            timing = kwargs["timing"]
            if not isinstance(timing, dict):
                raise ConfigError("timing must be a JSON object")
            if "alu_raw_stall" in timing and "alu_raw_distance" not in timing:
                # files written before the ALU's second stage: a RAW one iteration apart
                # waited `alu_raw_stall` cycles, i.e. a distance of one more
                stall = timing["alu_raw_stall"]
                timing = {k: v for k, v in timing.items() if k != "alu_raw_stall"}
                ok = isinstance(stall, int) and not isinstance(stall, bool)
                timing["alu_raw_distance"] = stall + 1 if ok else stall  # else Timing names the bad value
            t_known = {f.name for f in dataclasses.fields(Timing)}
            t_unknown = sorted(set(timing) - t_known)
            if t_unknown:
                raise ConfigError(f"unknown timing parameter(s): {', '.join(t_unknown)}")
            kwargs["timing"] = Timing(**timing)
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str) -> Config:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"config is not valid JSON: {e}") from None
        return cls.from_dict(data)

    @classmethod
    def load(cls, path: str | Path) -> Config:
        return cls.from_json(Path(path).read_text())

    @classmethod
    def from_vta_json(cls, data: dict[str, Any], name: str = "vta") -> Config:
        """Read VTA's `vta_config.json` (LOG_* keys) into a Config."""
        def p2(key: str) -> int:
            if key not in data:
                raise ConfigError(f"VTA config lacks {key}")
            v = data[key]
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 32:
                raise ConfigError(f"{key} must be a non-negative integer (a log2), got {v!r}")
            return 1 << v

        return cls(
            name=name,
            batch=p2("LOG_BATCH"),
            block_in=p2("LOG_BLOCK"),
            block_out=p2("LOG_BLOCK"),
            inp_width=p2("LOG_INP_WIDTH"),
            wgt_width=p2("LOG_WGT_WIDTH"),
            acc_width=p2("LOG_ACC_WIDTH"),
            out_width=p2("LOG_INP_WIDTH"),
            uop_buff_size=p2("LOG_UOP_BUFF_SIZE"),
            inp_buff_size=p2("LOG_INP_BUFF_SIZE"),
            wgt_buff_size=p2("LOG_WGT_BUFF_SIZE"),
            acc_buff_size=p2("LOG_ACC_BUFF_SIZE"),
        )

    def replace(self, **changes: Any) -> Config:
        if "gemm_window" not in changes and {"gemm_epilogue", "block_in", "block_out"} & set(changes):
            changes["gemm_window"] = None  # derived again from what it depends on, unless given
        return dataclasses.replace(self, **changes)

    def summary(self) -> list[tuple[str, str]]:
        """(name, value) rows for `vdla info`: parameters, then derived quantities."""
        rows = [(f.name, str(getattr(self, f.name))) for f in dataclasses.fields(self) if f.name != "timing"]
        rows += [(f"timing.{f.name}", str(getattr(self.timing, f.name))) for f in dataclasses.fields(Timing)]
        for kind in ("uop", "inp", "wgt", "acc", "out"):
            rows.append(
                (f"{kind} buffer", f"{getattr(self, f'{kind}_depth')} x {getattr(self, f'{kind}_elem_bytes')} B")
            )
        rows.append(("peak", f"{self.macs_per_cycle} MAC/cycle, {self.peak_gops:.1f} GOPS"))
        rows.append(("bitstream name", self.bitstream_name))
        return rows


PRESETS: dict[str, Config] = {
    # VTA's default vta_config.json.
    "default": Config(),
    # Small enough for fast RTL simulation and an iCE40 UP5K's block RAM (about 6.5 KiB).
    "small": Config(
        name="small",
        block_in=4,
        block_out=4,
        uop_buff_size=1024,
        inp_buff_size=512,
        wgt_buff_size=2048,
        acc_buff_size=2048,
        bus_width=32,
        cmd_queue_depth=16,
        dep_queue_depth=16,
    ),
    # Batch > 1 and 8x8 blocks: catches code that confuses batch, block_in and block_out.
    "batch2": Config(
        name="batch2",
        batch=2,
        block_in=8,
        block_out=8,
        uop_buff_size=8 * 1024,
        inp_buff_size=16 * 1024,
        wgt_buff_size=32 * 1024,
        acc_buff_size=64 * 1024,
    ),
}


def preset(name: str) -> Config:
    """A named preset, or a Config read from a JSON file if `name` is a path."""
    if name in PRESETS:
        return PRESETS[name]
    if name.endswith(".json") or Path(name).is_file():
        return Config.load(name)
    raise ConfigError(f"unknown config {name!r}; presets are {', '.join(PRESETS)} (or give a JSON file)")
