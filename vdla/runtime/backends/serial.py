"""Talking to a board's host bridge over a serial port: `SerialLink`, and `SerialBackend` for `Device`.

    link = SerialLink("/dev/ttyUSB1", baudrate=3_000_000)    # pyserial: pip install 'vdla[board]'
    link.write_mem(0x1000, data); link.read_mem(0x1000, 64)
    link.write_reg(0x08, 0x1000); link.read_reg(0x04)
    link.info                                                 # PingInfo: version, max_block, mem_size

The protocol (frames, CRC-16, ACK/NAK, sequence numbers, duplicate suppression) is
specified in `vdla.hardware.bridge_protocol`; this module is its host side. Every command
gets a fresh sequence number and is retried, with the same number, after a damaged or
missing response or a retryable NAK, at most ``retries`` times; each attempt waits at
most ``timeout`` seconds (plus the frame's time on the wire), so no call hangs. Errors
are `LinkError` (`LinkTimeout` when the board never answered, `NakError` when it refused
a command a retry cannot fix).

`port` is a pyserial port name or URL (``/dev/ttyUSB1``, ``COM3``, ``socket://host:port``,
``loop://``), or any object with ``write(bytes)`` and ``read(n)``, where ``read`` returns
at most ``n`` bytes (possibly none) within a short time.

`SerialBackend` runs programs on a board through a `SerialLink`. ``Device("serial:PORT")``
(registered here) drives a board built by `vdla.hardware.boards` (`vdla synth BOARD`),
whose register map is `BOARD_REGS`::

    from vdla.hardware.boards import board_config
    dev = Device("serial:/dev/ttyUSB0", config=board_config("ulx3s-85f"), dram_size=64 << 10)

The backend checks the board's CONFIG_ID register against the Device's Config first, so
a program is never run on a core built for another Config.
The name's argument is ``PORT`` or ``PORT@BAUD``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ...config import Config
from ...hardware.bridge_protocol import (
    PING_BYTES,
    REG_BYTES,
    RETRYABLE,
    UNVERIFIED,
    VERSION,
    Command,
    FrameError,
    Op,
    PingInfo,
    Response,
    ResponseDecoder,
    Status,
    encode_command,
    parse_ping,
)
from ...isa import INSN_BYTES, Mem, decode, elem_bytes
from ...isa import Op as InsnOp
from ...simulator import ProgramError, Report
from ..device import Device, DeviceError

__all__ = [
    "ByteStream", "LinkError", "LinkTimeout", "NakError", "SerialLink", "open_port", "RegisterMap", "SerialBackend",
    "dma_ranges", "BOARD_REGS", "board_backend",
]

DEFAULT_BAUD = 115200


class ByteStream(Protocol):
    def write(self, data: bytes) -> int | None: ...

    def read(self, size: int) -> bytes: ...


class LinkError(RuntimeError):
    """The bridge could not carry out a command."""


class LinkTimeout(LinkError):
    """The bridge never answered (after every retry)."""


class NakError(LinkError):
    """The bridge refused a command for a reason a retry cannot fix (BAD_OP, BAD_LEN, BAD_ADDR)."""

    def __init__(self, message: str, status: Status) -> None:
        super().__init__(message)
        self.status = status


def open_port(port: str, baudrate: int = DEFAULT_BAUD, timeout: float = 1.0) -> ByteStream:
    """Open a serial port (or pyserial URL) with pyserial, imported only now."""
    try:
        import serial  # pyserial
    except ImportError:
        raise LinkError(
            f"opening serial port {port!r} needs pyserial, which is not installed: pip install 'vdla[board]'"
        ) from None
    try:
        return serial.serial_for_url(port, baudrate=baudrate, timeout=0.01, write_timeout=timeout)
    except (serial.SerialException, ValueError) as e:
        raise LinkError(f"cannot open serial port {port!r}: {e}") from e


_HINTS = {
    Status.BAD_OP: "the bridge does not know this operation (protocol version mismatch?)",
    Status.BAD_LEN: "the length is not allowed (longer than the bridge's max_block, or not 4 for a register)",
    Status.BAD_ADDR: "the address is outside the bridge's memory or register space, or misaligned",
}


class SerialLink:
    """The host side of the bridge protocol over a byte stream; see the module docstring.

    On creation it pings the bridge (which starts the protocol session) and checks the
    protocol version; `info` holds what the bridge reported. `stats` counts frames,
    attempts, retries, NAKs, timeouts, corrupted and stale responses.
    """

    def __init__(self, port: str | ByteStream, *, baudrate: int | None = None, timeout: float = 1.0,
                 retries: int = 3) -> None:
        if retries < 0 or timeout <= 0:
            raise ValueError("retries must be >= 0 and timeout > 0")
        self.port_name = port if isinstance(port, str) else type(port).__name__
        self.stream: ByteStream = open_port(port, baudrate or DEFAULT_BAUD, timeout) if isinstance(port, str) else port
        self._owns_stream = isinstance(port, str)
        self.baudrate = baudrate or (DEFAULT_BAUD if isinstance(port, str) else None)
        self.timeout, self.retries = timeout, retries
        self._seq = 0
        self._decoder = ResponseDecoder()
        self.stats = dict.fromkeys(("frames", "attempts", "retries", "naks", "timeouts", "corrupt", "stale"), 0)
        try:
            self.info: PingInfo = self.ping()
        except LinkError as e:
            self.close()
            raise (LinkTimeout if isinstance(e, LinkTimeout) else LinkError)(f"no working bridge on {self.port_name} ({e}); is the board programmed, "
                          f"the port right and the baud rate ({self.baudrate or 'as opened'}) the board's?") from e
        if self.info.version != VERSION:
            self.close()
            raise LinkError(f"the bridge on {self.port_name} speaks protocol version {self.info.version}; "
                            f"this vdla speaks {VERSION}")

    # -- public operations --------------------------------------------------------------
    @property
    def max_block(self) -> int:
        return self.info.max_block

    def ping(self) -> PingInfo:
        return parse_ping(self._transact(Op.PING, 0, 0, b"", PING_BYTES).data)

    def write_mem(self, addr: int, data: bytes | bytearray | memoryview | np.ndarray) -> None:
        """Write `data` at byte address `addr` (split into blocks of max_block bytes)."""
        buf = memoryview(np.ascontiguousarray(data)).cast("B") if isinstance(data, np.ndarray) else memoryview(data)
        buf = buf.cast("B") if buf.format != "B" else buf
        for off in range(0, len(buf), self.max_block):
            chunk = bytes(buf[off : off + self.max_block])
            self._transact(Op.WRITE_MEM, addr + off, len(chunk), chunk, 0)

    def read_mem(self, addr: int, length: int) -> bytes:
        """Read `length` bytes from byte address `addr`."""
        out = bytearray()
        for off in range(0, length, self.max_block):
            n = min(self.max_block, length - off)
            out += self._transact(Op.READ_MEM, addr + off, n, b"", n).data
        return bytes(out)

    def write_reg(self, addr: int, value: int) -> None:
        """Write a 32-bit control register at byte offset `addr`."""
        self._transact(Op.WRITE_REG, addr, REG_BYTES, (value & 0xFFFF_FFFF).to_bytes(4, "little"), 0)

    def read_reg(self, addr: int) -> int:
        """Read the 32-bit control register at byte offset `addr`."""
        return int.from_bytes(self._transact(Op.READ_REG, addr, REG_BYTES, b"", REG_BYTES).data, "little")

    def close(self) -> None:
        if self._owns_stream and hasattr(self.stream, "close"):
            self.stream.close()

    def __enter__(self) -> SerialLink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the protocol -------------------------------------------------------------------
    def _transact(self, op: Op, addr: int, length: int, data: bytes, rsp_len: int) -> Response:
        self._seq = (self._seq + 1) & 0xFF
        seq = self._seq
        frame = encode_command(Command(seq, op, addr, length, data))
        what = f"{op.name} {addr:#x}" + (f" ({length} bytes)" if op in (Op.WRITE_MEM, Op.READ_MEM) else "")
        wire = (len(frame) + rsp_len + 10) * 10 / self.baudrate if self.baudrate else 0.0
        reasons: list[str] = []
        self.stats["frames"] += 1
        for attempt in range(self.retries + 1):
            self.stats["attempts"] += 1
            if attempt:
                self.stats["retries"] += 1
            self._discard_input()
            self.stream.write(frame)
            if hasattr(self.stream, "flush"):
                self.stream.flush()
            rsp = self._await(seq, op, time.monotonic() + self.timeout + 2 * wire)
            if rsp is None:
                self.stats["timeouts"] += 1
                reasons.append("no response")
                continue
            if isinstance(rsp, FrameError):
                self.stats["corrupt"] += 1
                reasons.append(f"corrupted response ({rsp})")
                self._wait_quiet()
                continue
            status = Status(rsp.status)
            if status == Status.OK or (status == Status.DUPLICATE and attempt > 0):
                if len(rsp.data) != rsp_len:
                    self.stats["corrupt"] += 1
                    reasons.append(f"response with {len(rsp.data)} data bytes, expected {rsp_len}")
                    continue
                return rsp
            if status == Status.DUPLICATE:
                raise LinkError(f"{what}: the bridge took a new command for a repeat of the last one (SEQ {seq}); "
                                f"is another program using {self.port_name}?")
            self.stats["naks"] += 1
            if status in RETRYABLE:
                reasons.append(f"NAK {status.name}")
                continue
            raise NakError(f"{what}: the bridge answered {status.name}: {_HINTS.get(status, '')}", status)
        attempts = self.retries + 1
        err = LinkTimeout if all(r == "no response" for r in reasons) else LinkError
        raise err(f"{what} failed after {attempts} attempt{'s' if attempts > 1 else ''}: {'; '.join(reasons)}")

    def _read_some(self) -> bytes:
        waiting = getattr(self.stream, "in_waiting", None)
        chunk = self.stream.read(max(1, waiting) if waiting is not None else 4096)
        if not chunk:
            time.sleep(0.0005)
        return bytes(chunk or b"")

    def _await(self, seq: int, op: Op, deadline: float) -> Response | FrameError | None:
        """The response to (seq, op), a corrupted frame, or None at the deadline; stale ones are skipped."""
        while time.monotonic() < deadline:
            items = self._decoder.feed(self._read_some())
            rsps = [r for r in items if isinstance(r, Response)]
            match = [r for r in rsps if r.status in UNVERIFIED or (r.seq == seq and r.op == op)]
            self.stats["stale"] += len(rsps) - len(match[:1])
            if match:
                return match[0]
            if len(rsps) < len(items):
                return next(e for e in items if isinstance(e, FrameError))
        return None

    def _discard_input(self) -> None:
        self._decoder.reset()
        if hasattr(self.stream, "reset_input_buffer"):
            self.stream.reset_input_buffer()

    def _wait_quiet(self, quiet: float = 0.02) -> None:
        """Let the rest of a damaged response arrive (and drop it), for at most `timeout`."""
        end = time.monotonic() + self.timeout
        last = time.monotonic()
        while time.monotonic() < end and time.monotonic() - last < quiet:
            if self._read_some():
                last = time.monotonic()
        self._decoder.reset()


# -- running programs -------------------------------------------------------------------------


@dataclass(frozen=True)
class RegisterMap:
    """Byte offsets of the core's control registers on the bridge's register port.

    Assumed behaviour (to be matched by the board top): writing ``start_value`` to
    ``start`` starts the core on ``insn_count`` instructions at byte address
    ``insn_addr``; ``done & done_mask`` is nonzero once it has finished (and stays so until
    the next start); ``cycles`` holds the run's cycle count; an optional ``error``
    register has bits in ``error_mask`` set when the core stopped on an error, and the
    optional ``error_index`` register then names the instruction; ``counters`` names
    further registers copied into `Report.counters`. The core's done/error/counters
    outputs (`vdla.hardware.core.Core`) fit this directly.
    """

    start: int
    done: int
    insn_addr: int
    insn_count: int
    cycles: int
    start_value: int = 1
    done_mask: int = 1
    error: int | None = None
    error_mask: int = 0xFFFF_FFFF
    error_index: int | None = None
    counters: tuple[tuple[str, int], ...] = ()
    #: Register holding `vdla.hardware.boards.config_id` of the board's Config (checked before running).
    config_id: int | None = None


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(r for r in ranges if r[1] > r[0]):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def dma_ranges(config: Config, insns: list) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The DRAM byte ranges the instructions load from and store to, each merged and sorted."""
    loads: list[tuple[int, int]] = []
    stores: list[tuple[int, int]] = []
    for insn in insns:
        if insn.opcode not in (InsnOp.LOAD, InsnOp.STORE) or insn.x_size == 0 or insn.y_size == 0:
            continue
        store = insn.opcode == InsnOp.STORE
        eb = elem_bytes(config, Mem.OUT if store else insn.memory_type)
        rows = [((insn.dram_base + y * insn.x_stride) * eb, (insn.dram_base + y * insn.x_stride + insn.x_size) * eb)
                for y in range(insn.y_size)]
        (stores if store else loads).extend(rows)
    return _merge(loads), _merge(stores)


class SerialBackend:
    """Runs programs on a board: syncs `Device.dram` to the board's memory, starts the core, reads back.

    Only the first ``min(device.dram.size, link.info.mem_size)`` bytes are mirrored
    (create the Device with ``dram_size`` = the board's memory); programs must lie there.
    Before a run, the blocks of DRAM that changed since the board last saw them are
    written (all of it on the first run, unless ``assume_zeroed``: the board's memory is
    known to be zero). After the run, ``readback="stores"`` reads the rows the program's
    STOREs wrote (found by decoding it), ``"all"`` the whole mirrored memory.
    """

    name = "serial"

    def __init__(self, device: Device, arg: str = "", *, regs: RegisterMap, link: SerialLink | None = None,
                 baudrate: int | None = None, timeout: float = 1.0, retries: int = 3, run_timeout: float = 60.0,
                 poll_interval: float = 0.001, readback: str = "stores", assume_zeroed: bool = False) -> None:
        if readback not in ("stores", "all"):
            raise ValueError(f"readback must be 'stores' or 'all', not {readback!r}")
        if link is None:
            port, _, baud = arg.rpartition("@") if "@" in arg and arg.rpartition("@")[2].isdigit() else (arg, "", "")
            if not port:
                raise DeviceError("a serial device needs a port: Device('serial:/dev/ttyUSB1') or 'serial:PORT@BAUD'")
            link = SerialLink(port, baudrate=int(baud) if baud else baudrate, timeout=timeout, retries=retries)
        self.link, self.regs = link, regs
        self.run_timeout, self.poll_interval, self.readback = run_timeout, poll_interval, readback
        self.size = min(device.dram.size, link.info.mem_size)
        if regs.config_id is not None:
            _check_config(device.config, link.read_reg(regs.config_id), link.port_name)
        self.shadow: np.ndarray | None = np.zeros(self.size, np.uint8) if assume_zeroed else None

    def sync_to_board(self, device: Device) -> int:
        """Write what changed in the mirrored DRAM since the board last saw it; returns bytes sent."""
        dram = device.dram[: self.size]
        block = self.link.max_block
        if self.shadow is None:
            runs = [(0, self.size)]
        else:
            blocks = np.unique(np.flatnonzero(dram != self.shadow) // block)
            runs = _merge([(int(b) * block, min(self.size, (int(b) + 1) * block)) for b in blocks])
        for lo, hi in runs:
            self.link.write_mem(lo, dram[lo:hi])
        self.shadow = dram.copy()
        return sum(hi - lo for lo, hi in runs)

    def sync_from_board(self, device: Device, ranges: list[tuple[int, int]]) -> None:
        """Read byte ranges of the board's memory into `device.dram` (and the mirror)."""
        for lo, hi in ranges:
            data = np.frombuffer(self.link.read_mem(lo, hi - lo), np.uint8)
            device.dram[lo:hi] = data
            if self.shadow is not None:
                self.shadow[lo:hi] = data

    def execute(self, device: Device, insn_addr: int, count: int, strict: bool = True) -> Report:
        config, regs, link = device.config, self.regs, self.link
        end = insn_addr + count * INSN_BYTES
        if end > self.size:
            raise DeviceError(f"instructions at {insn_addr:#x}..{end:#x} lie outside the board's "
                              f"{self.size} bytes of memory")
        loads, stores = dma_ranges(config, decode(device.dram[insn_addr:end].tobytes(), config))
        outside = [r for r in loads + stores if r[1] > self.size]
        if outside:
            raise DeviceError(f"the program moves data at {outside[0][0]:#x}..{outside[0][1]:#x}, outside the "
                              f"board's {self.size} bytes of memory")
        self.sync_to_board(device)
        link.write_reg(regs.insn_addr, insn_addr)
        link.write_reg(regs.insn_count, count)
        link.write_reg(regs.start, regs.start_value)
        deadline = time.monotonic() + self.run_timeout
        while not link.read_reg(regs.done) & regs.done_mask:
            if time.monotonic() > deadline:
                raise DeviceError(f"the board did not finish {count} instructions within {self.run_timeout:g} s "
                                  f"(cycle counter: {link.read_reg(regs.cycles)})")
            time.sleep(self.poll_interval)
        cycles = link.read_reg(regs.cycles)
        counters = {name: link.read_reg(offset) for name, offset in regs.counters}
        if regs.error is not None and (err := link.read_reg(regs.error) & regs.error_mask):
            index = link.read_reg(regs.error_index) if regs.error_index is not None else None
            where = f" at instruction {index}" if index is not None else ""
            raise ProgramError(f"serial: the board's core stopped with error {err:#x}{where} after {cycles} cycles",
                               index)
        self.sync_from_board(device, [(0, self.size)] if self.readback == "all" else stores)
        return Report(config, cycles, {}, counters, count)


# -- boards built by vdla.hardware.boards -------------------------------------------------------


def _board_regs() -> RegisterMap:
    from ...hardware.regmap import BOARD, counter_offset, registers

    regs = registers(BOARD)
    return RegisterMap(
        start=regs["control"], done=regs["status"], insn_addr=regs["insn_addr"],
        insn_count=regs["insn_count"], cycles=regs["cycles"], done_mask=1,
        error=regs["error_code"], error_index=regs["error_index"], config_id=regs["config_id"],
        counters=(("gemm_counter", counter_offset("gemm_iters")), ("alu_counter", counter_offset("alu_iters"))),
    )


#: The register map of `vdla.hardware.boards.soc.BoardTop`.
BOARD_REGS = _board_regs()


def _check_config(config: Config, board_id: int, port: str) -> None:
    from ...hardware.boards.soc import config_id

    if board_id == config_id(config):
        return
    try:
        from ...hardware.boards import BOARDS

        names = [b.name for b in BOARDS.values() if config_id(b.config) == board_id]
    except ImportError:  # amaranth-boards not installed: no names to offer
        names = []
    hint = (f"it matches board config {names[0]!r}: Device('serial:...', config=board_config({names[0]!r}))"
            if names else "rebuild the bitstream for this Config (vdla synth BOARD) or pass the board's Config")
    raise DeviceError(f"the core on {port} was built for another Config (CONFIG_ID {board_id:#010x}, "
                      f"{config.name!r} has {config_id(config):#010x}); {hint}")


def board_backend(device: Device, arg: str = "", **kw) -> SerialBackend:
    """``Device("serial:PORT[@BAUD]")``: a `SerialBackend` with the board register map `BOARD_REGS`."""
    return SerialBackend(device, arg, regs=BOARD_REGS, **kw)


BACKEND = board_backend
