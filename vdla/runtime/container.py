"""The versioned binary container shared by vdla's file formats.

    magic (8 bytes) | u32 version | u32 header bytes | u32 CRC-32 of header+payload | JSON header | payload

Used by :class:`vdla.runtime.Program` ("VDLAPROG"), :class:`VDLAFunction`
("VDLAFUNC") and :class:`CompiledModel` ("VDLAMODL"). Each format keeps its own magic,
version, error class and header fields; this module only frames them and checks the
frame, so that every format reports a damaged file the same way.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable
from typing import Any

__all__ = ["PREAMBLE", "pack", "unpack"]

#: magic, version, JSON header length, CRC-32 of everything after the preamble (little-endian).
PREAMBLE = struct.Struct("<8sIII")


def pack(magic: bytes, version: int, header: dict[str, Any], payload: bytes) -> bytes:
    """Frame ``header`` (as sorted-key JSON) and ``payload`` behind the preamble."""
    # struct's "8s" silently pads or cuts a wrong-sized magic: that would write files
    # that no reader recognises, so refuse it here.
    if len(magic) != 8:
        raise ValueError(f"magic must be 8 bytes, got {magic!r}")
    # sort_keys keeps the bytes (and so the CRC) independent of dict insertion order
    head = json.dumps(header, sort_keys=True).encode()
    return PREAMBLE.pack(magic, version, len(head), zlib.crc32(head + payload)) + head + payload


def unpack(
    blob: bytes,
    *,
    magic: bytes,
    version: int,
    what: str,
    source: str,
    error: type[Exception],
    payload_size: Callable[[dict[str, Any]], int] | None = None,
    version_hint: str = "",
) -> tuple[dict[str, Any], bytes]:
    """Check the frame of ``blob`` and return its JSON header and payload.

    ``what`` names the format in messages ("not a {what}"); ``source`` (a path or a
    description) starts every message; ``error`` is the format's own exception class.
    ``payload_size(header)``, if given, is the payload length the header promises: a
    truncated or over-long file then says so instead of only failing the checksum.
    ``version_hint`` is appended to the unsupported-version message (what to do about it).
    The checks run cheapest and most specific first, so the message names the first
    thing that is wrong; the CRC comes last because any damage fails it.
    """
    if len(blob) < PREAMBLE.size:
        raise error(f"{source}: truncated: {len(blob)} bytes, shorter than the {PREAMBLE.size}-byte preamble")
    got_magic, got_version, head_len, crc = PREAMBLE.unpack_from(blob)
    if got_magic != magic:
        raise error(f"{source}: not a {what} (starts with {got_magic!r}, expected {magic!r})")
    if got_version != version:
        raise error(
            f"{source}: {what} format version {got_version} is not supported "
            f"(this vdla reads version {version}){version_hint}"
        )
    start = PREAMBLE.size + head_len
    if len(blob) < start:
        raise error(f"{source}: truncated inside the header ({len(blob)} of at least {start} bytes)")
    try:
        header = json.loads(blob[PREAMBLE.size : start])  # UnicodeDecodeError is a ValueError too
    except ValueError as e:
        raise error(f"{source}: corrupt header: {e}") from None
    # every format indexes the header by key: a list or number that happens to parse is damage
    if not isinstance(header, dict):
        raise error(f"{source}: corrupt header: not a JSON object")
    payload = blob[start:]
    if payload_size is not None:
        try:
            expected = int(payload_size(header))
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise error(f"{source}: corrupt header: {type(e).__name__}: {e}") from None
        if len(payload) < expected:
            raise error(f"{source}: truncated: the header promises {expected} payload bytes, the file has {len(payload)}")
        if len(payload) > expected:
            raise error(f"{source}: {len(payload) - expected} unexpected bytes after the payload")
    # a memoryview: a compiled model is tens of MB, no need to copy it just to checksum it
    if zlib.crc32(memoryview(blob)[PREAMBLE.size :]) != crc:
        raise error(f"{source}: checksum mismatch: the header or payload is corrupt")
    return header, payload
