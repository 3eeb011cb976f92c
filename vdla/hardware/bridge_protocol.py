"""The VDLA host-bridge protocol: framed, checksummed memory and register access over a UART.

This module is the protocol's specification and its pure-Python codec. It holds the
constants the gateware (`vdla.hardware.bridge`) is built from, the frame encoder/decoder
the host (`vdla.runtime.backends.serial`) speaks, and `BridgeModel`, an executable model of the
device side that behaves byte-for-byte like the gateware. It imports nothing from
Amaranth or the runtime.

Transport
---------
8N1 bytes on a UART (the board's USB-serial port). The protocol is stop-and-wait: the
host sends one command frame and waits for its response before sending the next. The
host sends each frame contiguously; the device treats a silence of ``T_idle`` (a gateware
parameter, 10 ms by default on boards) as the end of whatever it was receiving.

Frames
------
Multi-byte fields are little-endian except the CRCs, which are sent most significant
byte first. ``CRC`` is CRC-16/CCITT-FALSE (polynomial 0x1021, initial value 0xFFFF, no
reflection, no final XOR; ``crc16(b"123456789") == 0x29B1``). Sent MSB first, a correct
CRC makes the CRC of the checked bytes *including* the two CRC bytes zero, which is how
the gateware checks it.

Command (host -> device)::

    offset  size  field
    0       1     SOF_CMD = 0xA5
    1       1     SEQ     sequence number, 0..255
    2       1     OP      operation (below)
    3       4     ADDR    byte address (memory) or byte offset (register)
    7       2     LEN     number of data bytes the operation moves
    9       2     HCRC    CRC of bytes 0..8
    -- only for WRITE_MEM and WRITE_REG: --
    11      LEN   DATA
    11+LEN  2     DCRC    CRC of DATA alone

Response (device -> host)::

    0       1     SOF_RSP = 0x5A
    1       1     SEQ     the command's SEQ (0 when the header could not be verified)
    2       1     OP      the command's OP  (0 when the header could not be verified)
    3       1     STATUS  (below); < 0x80 is an ACK, >= 0x80 a NAK
    4       2     LEN     number of data bytes that follow (0 unless an ACK to a read or ping)
    6       2     HCRC    CRC of bytes 0..5
    -- only when LEN > 0: --
    8       LEN   DATA
    8+LEN   2     DCRC    CRC of DATA alone

Operations (``LEN`` rules; a violation is NAKed with BAD_LEN, ``ADDR`` rules with BAD_ADDR):

=========  ====  ==========================================================================
PING       0x00  LEN = 0. Response data: version u8, flags u8 (0), max_block u16,
                 mem_size u32 (bytes of memory behind the bridge). ADDR is ignored.
WRITE_MEM  0x01  0 <= LEN <= max_block, ADDR + LEN <= mem_size. Writes DATA at ADDR.
READ_MEM   0x02  as WRITE_MEM. Response data: LEN bytes read from ADDR.
WRITE_REG  0x03  LEN = 4, ADDR a multiple of 4 below 2**reg_addr_width. Writes DATA
                 (a little-endian u32) to the control register at byte offset ADDR.
READ_REG   0x04  as WRITE_REG. Response data: the register's value, u32 little-endian.
=========  ====  ==========================================================================

Status codes: OK 0x00 and DUPLICATE 0x01 are ACKs; BAD_HCRC 0x80, BAD_DCRC 0x81,
INCOMPLETE 0x82, BAD_OP 0x83, BAD_LEN 0x84, BAD_ADDR 0x85 are NAKs.

Device behaviour
----------------
1. *Hunt*: bytes other than SOF_CMD are discarded.
2. *Header*: the 10 bytes after SOF_CMD are taken as the rest of the header. If HCRC does
   not check, the status is BAD_HCRC; else OP, LEN and ADDR are validated (BAD_OP,
   BAD_LEN, BAD_ADDR, in that order of precedence).
3. *Data* (writes with a valid header): LEN + 2 bytes are buffered; if DCRC does not
   check, the status is BAD_DCRC.
4. *Nothing is executed before every check has passed*: a NAKed frame has no side
   effect on memory or registers.
5. *Errors*: after any NAK status, the device discards every byte until the line has been
   idle for T_idle, then sends the NAK (LEN 0). This swallows the rest of a frame whose
   length it cannot trust, so it resynchronises on the next frame and sends exactly one
   NAK per bad frame. A frame cut short (the line idle for T_idle between SOF_CMD and
   the frame's last byte) is NAKed with INCOMPLETE. BAD_HCRC and INCOMPLETE NAKs carry
   SEQ = OP = 0: the header they would echo is not trustworthy.
6. *Duplicates and replays*: the device remembers the SEQ of the last *new* frame. A frame
   is new when its SEQ is 1 to 127 ahead of that one (mod 256), or when none was seen
   since reset; a PING always sets it (a PING starts a session). A WRITE_MEM or WRITE_REG
   that is not new is not executed but ACKed with DUPLICATE: the same SEQ is a retry (a
   write whose ACK was lost, retried, is not applied twice, which matters for a "start"
   register), a SEQ 128 to 255 behind is an old frame replayed (a delayed copy must not
   overwrite newer data). Reads and pings are always executed (reads must have no side
   effects on the register port); a read that is not new leaves the window where it is.
7. Bytes arriving while the device executes or responds are discarded.

Host behaviour (`vdla.runtime.backends.serial.SerialLink`)
-------------------------------------------------
Start a session with PING (it is always executed and sets the device's last SEQ), then
give each new command the next SEQ (mod 256) and keep it for that command's retries.
Accept a response only if its frame checks and its SEQ and OP match (BAD_HCRC and
INCOMPLETE NAKs match any SEQ); discard others as stale. Retry after a retryable NAK
(BAD_HCRC, BAD_DCRC, INCOMPLETE), a corrupted response or no response within the timeout,
a bounded number of times; report BAD_OP, BAD_LEN and BAD_ADDR at once (a retry cannot
help). Split transfers into blocks of at most max_block bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum

__all__ = [
    "SOF_CMD", "SOF_RSP", "VERSION", "CRC_POLY", "CRC_INIT", "CMD_HEADER_BYTES", "RSP_HEADER_BYTES",
    "REG_BYTES", "PING_BYTES", "Op", "Status", "WRITE_OPS", "RETRYABLE", "UNVERIFIED",
    "crc16", "crc16_update", "Command", "Response", "FrameError", "encode_command", "encode_response",
    "decode_command", "decode_response", "ping_payload", "parse_ping", "PingInfo", "ResponseDecoder",
    "BridgeModel",
]

SOF_CMD = 0xA5
SOF_RSP = 0x5A
VERSION = 1
CRC_POLY = 0x1021
CRC_INIT = 0xFFFF
#: Command header length without its CRC (SOF, SEQ, OP, ADDR, LEN).
CMD_HEADER_BYTES = 9
#: Response header length without its CRC (SOF, SEQ, OP, STATUS, LEN).
RSP_HEADER_BYTES = 6
CRC_BYTES = 2
REG_BYTES = 4
PING_BYTES = 8


class Op(IntEnum):
    PING = 0x00
    WRITE_MEM = 0x01
    READ_MEM = 0x02
    WRITE_REG = 0x03
    READ_REG = 0x04


class Status(IntEnum):
    OK = 0x00
    DUPLICATE = 0x01
    BAD_HCRC = 0x80
    BAD_DCRC = 0x81
    INCOMPLETE = 0x82
    BAD_OP = 0x83
    BAD_LEN = 0x84
    BAD_ADDR = 0x85

    @property
    def is_ack(self) -> bool:
        return self < 0x80


#: Operations whose command frame carries DATA (and which are subject to duplicate suppression).
WRITE_OPS = frozenset({Op.WRITE_MEM, Op.WRITE_REG})
#: NAKs worth a retry: the frame was damaged on the way.
RETRYABLE = frozenset({Status.BAD_HCRC, Status.BAD_DCRC, Status.INCOMPLETE})
#: NAKs sent without a verified header (their SEQ and OP are 0).
UNVERIFIED = frozenset({Status.BAD_HCRC, Status.INCOMPLETE})


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ CRC_POLY) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return table


_CRC_TABLE = _crc_table()


def crc16_update(crc: int, byte: int) -> int:
    """One byte of CRC-16/CCITT-FALSE."""
    return ((crc << 8) & 0xFFFF) ^ _CRC_TABLE[((crc >> 8) ^ byte) & 0xFF]


def crc16(data: bytes | bytearray | memoryview, crc: int = CRC_INIT) -> int:
    """CRC-16/CCITT-FALSE of `data` (check value: ``crc16(b"123456789") == 0x29B1``)."""
    for b in bytes(data):
        crc = ((crc << 8) & 0xFFFF) ^ _CRC_TABLE[(crc >> 8) ^ b]
    return crc


def _with_crc(data: bytes) -> bytes:
    return data + crc16(data).to_bytes(2, "big")


class FrameError(ValueError):
    """A frame that does not decode; `status` is the NAK status the device would send."""

    def __init__(self, message: str, status: Status) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Command:
    seq: int
    op: Op
    addr: int = 0
    length: int = 0
    data: bytes = b""

    def __post_init__(self) -> None:
        if not 0 <= self.seq <= 0xFF:
            raise ValueError(f"seq {self.seq} out of range 0..255")
        if not 0 <= self.addr <= 0xFFFF_FFFF:
            raise ValueError(f"address {self.addr:#x} out of range (32 bits)")
        if not 0 <= self.length <= 0xFFFF:
            raise ValueError(f"length {self.length} out of range (16 bits)")
        if self.op in WRITE_OPS and len(self.data) != self.length:
            raise ValueError(f"{Op(self.op).name}: {len(self.data)} data bytes for LEN {self.length}")
        if self.op not in WRITE_OPS and self.data:
            raise ValueError(f"{Op(self.op).name} carries no data")

    @classmethod
    def ping(cls, seq: int) -> Command:
        return cls(seq, Op.PING)

    @classmethod
    def write_mem(cls, seq: int, addr: int, data: bytes) -> Command:
        return cls(seq, Op.WRITE_MEM, addr, len(data), bytes(data))

    @classmethod
    def read_mem(cls, seq: int, addr: int, length: int) -> Command:
        return cls(seq, Op.READ_MEM, addr, length)

    @classmethod
    def write_reg(cls, seq: int, addr: int, value: int) -> Command:
        return cls(seq, Op.WRITE_REG, addr, REG_BYTES, (value & 0xFFFF_FFFF).to_bytes(4, "little"))

    @classmethod
    def read_reg(cls, seq: int, addr: int) -> Command:
        return cls(seq, Op.READ_REG, addr, REG_BYTES)


@dataclass(frozen=True)
class Response:
    seq: int
    op: int
    status: Status
    data: bytes = b""

    @property
    def is_ack(self) -> bool:
        return Status(self.status).is_ack


def encode_command(cmd: Command) -> bytes:
    """The bytes of a command frame."""
    frame = _with_crc(struct.pack("<BBBIH", SOF_CMD, cmd.seq, int(cmd.op), cmd.addr, cmd.length))
    if cmd.op in WRITE_OPS:
        frame += _with_crc(cmd.data)
    return frame


def encode_response(rsp: Response) -> bytes:
    """The bytes of a response frame."""
    frame = _with_crc(struct.pack("<BBBBH", SOF_RSP, rsp.seq, int(rsp.op), int(rsp.status), len(rsp.data)))
    if rsp.data:
        frame += _with_crc(rsp.data)
    return frame


def decode_command(frame: bytes) -> Command:
    """Decode one complete command frame, checking framing and CRCs (not LEN/ADDR rules).

    Raises FrameError with the status the device would NAK it with."""
    frame = bytes(frame)
    h = CMD_HEADER_BYTES + CRC_BYTES
    if len(frame) < h or frame[0] != SOF_CMD:
        raise FrameError("not a command frame (short, or no SOF)", Status.INCOMPLETE)
    if crc16(frame[:h]) != 0:
        raise FrameError("command header CRC mismatch", Status.BAD_HCRC)
    _, seq, op, addr, length = struct.unpack("<BBBIH", frame[:CMD_HEADER_BYTES])
    if op not in Op._value2member_map_:
        raise FrameError(f"unknown operation {op:#04x}", Status.BAD_OP)
    op = Op(op)
    if op not in WRITE_OPS:
        if len(frame) != h:
            raise FrameError(f"{op.name} frame of {len(frame)} bytes, expected {h}", Status.INCOMPLETE)
        return Command(seq, op, addr, length)
    if len(frame) != h + length + CRC_BYTES:
        raise FrameError(f"{op.name} frame of {len(frame)} bytes, expected {h + length + CRC_BYTES}", Status.INCOMPLETE)
    if crc16(frame[h:]) != 0:
        raise FrameError("command data CRC mismatch", Status.BAD_DCRC)
    return Command(seq, op, addr, length, frame[h : h + length])


def decode_response(frame: bytes) -> Response:
    """Decode one complete response frame; raises FrameError if it is damaged."""
    frame = bytes(frame)
    h = RSP_HEADER_BYTES + CRC_BYTES
    if len(frame) < h or frame[0] != SOF_RSP:
        raise FrameError("not a response frame (short, or no SOF)", Status.INCOMPLETE)
    if crc16(frame[:h]) != 0:
        raise FrameError("response header CRC mismatch", Status.BAD_HCRC)
    _, seq, op, status, length = struct.unpack("<BBBBH", frame[:RSP_HEADER_BYTES])
    want = h + (length + CRC_BYTES if length else 0)
    if len(frame) != want:
        raise FrameError(f"response frame of {len(frame)} bytes, expected {want}", Status.INCOMPLETE)
    if length and crc16(frame[h:]) != 0:
        raise FrameError("response data CRC mismatch", Status.BAD_DCRC)
    try:
        status = Status(status)
    except ValueError:
        raise FrameError(f"unknown status {status:#04x}", Status.BAD_OP) from None
    return Response(seq, op, status, frame[h : h + length])


@dataclass(frozen=True)
class PingInfo:
    """What a PING reports about the bridge."""

    version: int
    flags: int
    max_block: int
    mem_size: int


def ping_payload(max_block: int, mem_size: int, flags: int = 0) -> bytes:
    return struct.pack("<BBHI", VERSION, flags, max_block, mem_size)


def parse_ping(data: bytes) -> PingInfo:
    if len(data) != PING_BYTES:
        raise FrameError(f"PING response carries {len(data)} bytes, expected {PING_BYTES}", Status.BAD_LEN)
    return PingInfo(*struct.unpack("<BBHI", data))


class ResponseDecoder:
    """Incremental response-frame decoder for the host: `feed` bytes, get Responses or FrameErrors.

    It hunts for SOF_RSP; after a damaged header it resumes hunting at the byte after the
    SOF it had taken, so a stray SOF byte cannot hide a following good frame.
    """

    def __init__(self) -> None:
        self._buf = bytearray()

    def reset(self) -> None:
        self._buf.clear()

    def pending(self) -> int:
        """Bytes held towards a frame not yet complete."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Response | FrameError]:
        self._buf += data
        out: list[Response | FrameError] = []
        h = RSP_HEADER_BYTES + CRC_BYTES
        while True:
            start = self._buf.find(SOF_RSP)
            if start < 0:
                self._buf.clear()
                return out
            del self._buf[:start]
            if len(self._buf) < h:
                return out
            if crc16(self._buf[:h]) != 0:
                out.append(FrameError("response header CRC mismatch", Status.BAD_HCRC))
                del self._buf[:1]
                continue
            length = int.from_bytes(self._buf[4:6], "little")
            total = h + (length + CRC_BYTES if length else 0)
            if len(self._buf) < total:
                return out
            frame = bytes(self._buf[:total])
            del self._buf[:total]
            try:
                out.append(decode_response(frame))
            except FrameError as e:
                out.append(e)


@dataclass
class BridgeModel:
    """The device side of the protocol in Python, byte-for-byte like `vdla.hardware.bridge.Bridge`.

    `feed` gives it received bytes and returns the bytes it sends; `idle` tells it the line
    has been quiet for T_idle (it then finishes a pending NAK). `mem` is the memory behind
    the bridge; register accesses go to `read_reg`/`write_reg` (by default a dict, `regs`).
    """

    mem_size: int
    max_block: int = 256
    reg_addr_width: int = 8
    mem: bytearray = field(default=None)  # type: ignore[assignment]
    regs: dict[int, int] = field(default_factory=dict)
    read_reg: Callable[[int], int] | None = None
    write_reg: Callable[[int, int], None] | None = None

    def __post_init__(self) -> None:
        if self.mem is None:
            self.mem = bytearray(self.mem_size)
        self._state = "hunt"
        self._buf = bytearray()
        self._status = Status.OK
        self._last_seq: int | None = None
        self.executed: list[Command] = []

    # -- the receive state machine --------------------------------------------------------
    def feed(self, data: bytes) -> bytes:
        out = bytearray()
        for b in bytes(data):
            out += self._byte(b)
        return bytes(out)

    def idle(self) -> bytes:
        """The line has been idle for T_idle: drop a partial frame, send a pending NAK."""
        if self._state == "hunt":
            return b""
        if self._state != "drain":
            self._fail(Status.INCOMPLETE, verified=False)
        return self._respond(self._nak_seq, self._nak_op, self._status)

    def _fail(self, status: Status, verified: bool) -> None:
        self._status = status
        if not verified:
            self._nak_seq, self._nak_op = 0, 0
        self._state = "drain"

    def _byte(self, b: int) -> bytes:
        h = CMD_HEADER_BYTES + CRC_BYTES
        if self._state == "hunt":
            if b == SOF_CMD:
                self._buf = bytearray([b])
                self._state = "header"
        elif self._state == "header":
            self._buf.append(b)
            if len(self._buf) == h:
                return self._check_header()
        elif self._state == "data":
            self._buf.append(b)
            if len(self._buf) == h + self._len + CRC_BYTES:
                if crc16(self._buf[h:]) != 0:
                    self._fail(Status.BAD_DCRC, verified=True)
                    return b""
                return self._execute(bytes(self._buf[h : h + self._len]))
        # "drain": discard
        return b""

    def _check_header(self) -> bytes:
        if crc16(self._buf) != 0:
            self._fail(Status.BAD_HCRC, verified=False)
            return b""
        _, seq, op, addr, length = struct.unpack("<BBBIH", self._buf[:CMD_HEADER_BYTES])
        self._seq, self._op, self._addr, self._len = seq, op, addr, length
        self._nak_seq, self._nak_op = seq, op
        if op not in Op._value2member_map_:
            self._fail(Status.BAD_OP, verified=True)
        elif not self._len_ok(Op(op), length):
            self._fail(Status.BAD_LEN, verified=True)
        elif not self._addr_ok(Op(op), addr, length):
            self._fail(Status.BAD_ADDR, verified=True)
        elif op in WRITE_OPS:
            self._state = "data"
        else:
            return self._execute(b"")
        return b""

    def _len_ok(self, op: Op, length: int) -> bool:
        if op == Op.PING:
            return length == 0
        if op in (Op.WRITE_MEM, Op.READ_MEM):
            return length <= self.max_block
        return length == REG_BYTES

    def _addr_ok(self, op: Op, addr: int, length: int) -> bool:
        if op in (Op.WRITE_MEM, Op.READ_MEM):
            return addr + length <= self.mem_size
        if op in (Op.WRITE_REG, Op.READ_REG):
            return addr % REG_BYTES == 0 and addr < (1 << self.reg_addr_width)
        return True

    # -- execution ----------------------------------------------------------------------
    def _execute(self, data: bytes) -> bytes:
        op, seq, addr, length = Op(self._op), self._seq, self._addr, self._len
        new = self._last_seq is None or 1 <= (seq - self._last_seq) % 256 <= 127
        dup = op in WRITE_OPS and not new
        if new or op == Op.PING:
            self._last_seq = seq
        status, out = (Status.DUPLICATE if dup else Status.OK), b""
        if not dup:
            self.executed.append(Command(seq, op, addr, length, data))
        if op == Op.PING:
            out = ping_payload(self.max_block, self.mem_size)
        elif op == Op.WRITE_MEM and not dup:
            self.mem[addr : addr + length] = data
        elif op == Op.READ_MEM:
            out = bytes(self.mem[addr : addr + length])
        elif op == Op.WRITE_REG and not dup:
            value = int.from_bytes(data, "little")
            if self.write_reg is not None:
                self.write_reg(addr, value)
            else:
                self.regs[addr] = value
        elif op == Op.READ_REG:
            value = self.read_reg(addr) if self.read_reg is not None else self.regs.get(addr, 0)
            out = (value & 0xFFFF_FFFF).to_bytes(4, "little")
        return self._respond(seq, op, status, out)

    def _respond(self, seq: int, op: int, status: Status, data: bytes = b"") -> bytes:
        self._state = "hunt"
        return encode_response(Response(seq, op, status, data))
