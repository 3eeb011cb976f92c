"""The shared file container (vdla.runtime.container): round trip and every kind of damage."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest

from vdla.runtime import container

MAGIC = b"TESTFILE"
VERSION = 3
HEADER = {"name": "sample", "sizes": [5, 7], "zeta": 1, "alpha": "abc"}
PAYLOAD = bytes(range(12))
H = len(container.pack(MAGIC, VERSION, HEADER, b"")) - container.PREAMBLE.size  # header bytes
P0 = container.PREAMBLE.size + H  # where the payload starts


class SampleError(ValueError):
    pass


def _size(header: dict) -> int:
    return sum(header["sizes"])


def _unpack(blob: bytes, payload_size: Callable[[dict], int] | None = _size) -> tuple[dict, bytes]:
    return container.unpack(blob, magic=MAGIC, version=VERSION, what="test file", source="t.bin",
                            error=SampleError, payload_size=payload_size)


def _flip(blob: bytes, pos: int, mask: int = 0x01) -> bytes:
    b = bytearray(blob)
    b[pos] ^= mask
    return bytes(b)


BLOB = container.pack(MAGIC, VERSION, HEADER, PAYLOAD)


def test_round_trip() -> None:
    magic, version, head_len, _ = struct.unpack_from("<8sIII", BLOB)
    assert (magic, version, head_len) == (MAGIC, VERSION, H)
    assert BLOB[20:21] == b"{" and BLOB[20 : 20 + H].index(b'"alpha"') < BLOB[20 : 20 + H].index(b'"zeta"')  # sorted keys
    assert _unpack(BLOB) == (HEADER, PAYLOAD)
    assert _unpack(BLOB, payload_size=None) == (HEADER, PAYLOAD)


# (blob, message fragment with payload_size, message fragment without it)
CASES = {
    "empty": (b"", "truncated: 0 bytes, shorter than the 20-byte preamble", None),
    "cut in magic": (BLOB[:5], "truncated: 5 bytes", None),
    "cut in preamble": (BLOB[:19], "shorter than the 20-byte preamble", None),
    "cut at header start": (BLOB[:20], "truncated inside the header", None),
    "cut in header": (BLOB[: P0 - 1], "truncated inside the header", None),
    "cut at payload start": (BLOB[:P0], "truncated: the header promises 12 payload bytes, the file has 0", "checksum"),
    "cut in payload": (BLOB[:-1], "truncated: the header promises 12 payload bytes, the file has 11", "checksum"),
    "magic byte flipped": (_flip(BLOB, 0), "not a test file (starts with b'UESTFILE', expected b'TESTFILE')", None),
    "version 99": (BLOB[:8] + struct.pack("<I", 99) + BLOB[12:], "version 99 is not supported (this vdla reads version 3)",
                   None),
    "header brace flipped": (_flip(BLOB, 20), "corrupt header", None),
    "header byte not UTF-8": (_flip(BLOB, 22, 0x80), "corrupt header", None),
    # "sample" -> "rample": still valid JSON with the same sizes, so only the CRC can tell
    "header value flipped": (_flip(BLOB, P0 - H + BLOB[P0 - H : P0].index(b"sample")), "checksum mismatch", None),
    "header not an object": (container.PREAMBLE.pack(MAGIC, VERSION, 2, 0) + b"[]", "corrupt header: not a JSON object",
                             None),
    "payload byte flipped": (_flip(BLOB, P0 + 5), "checksum mismatch: the header or payload is corrupt", None),
    "last byte flipped": (_flip(BLOB, len(BLOB) - 1, 0xFF), "checksum mismatch", None),
    "crc flipped": (_flip(BLOB, 16), "checksum mismatch", None),
    "trailing bytes": (BLOB + b"\0\0", "2 unexpected bytes after the payload", "checksum"),
}


@pytest.mark.parametrize("with_size", [True, False], ids=["payload_size", "no_payload_size"])
@pytest.mark.parametrize("case", list(CASES))
def test_damage_is_reported(case: str, with_size: bool) -> None:
    blob, fragment, without_size = CASES[case]
    expected = fragment if with_size or without_size is None else without_size
    with pytest.raises(SampleError) as ei:
        _unpack(blob, _size if with_size else None)
    msg = str(ei.value)
    assert msg.startswith("t.bin: ") and expected in msg, msg


def test_every_truncation_is_reported() -> None:
    for cut in range(len(BLOB)):
        with pytest.raises(SampleError, match="truncated"):
            _unpack(BLOB[:cut])


@pytest.mark.parametrize("header", [{"name": "x"}, {"sizes": 3}, {"sizes": [[1, 2]]}, {"sizes": ["x"]}])
def test_payload_size_failure_is_corrupt_header(header: dict) -> None:
    blob = container.pack(MAGIC, VERSION, header, b"")
    with pytest.raises(SampleError, match="corrupt header"):
        _unpack(blob)


def test_version_hint_and_magic_size() -> None:
    with pytest.raises(SampleError, match=r"version 1 is not supported .*; rebuild it"):
        container.unpack(container.pack(MAGIC, 1, {}, b""), magic=MAGIC, version=2, what="x", source="s",
                         error=SampleError, version_hint="; rebuild it")
    with pytest.raises(ValueError, match="8 bytes"):
        container.pack(b"SHORT", 1, {}, b"")
