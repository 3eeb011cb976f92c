"""The measuring process's loop (:class:`.measure_cuda.MeasureProcess` runs this file as a script,
so a fresh process starts in milliseconds and imports vdla only when a request needs it).

It reads ``(func, payload)`` pickles (8-byte little-endian length, then the pickle) from stdin
and answers each on the original stdout: ``("ok", result)`` or ``("error", message, fatal)``;
an exception with a true ``fatal`` attribute (a GPU fault: the CUDA context is gone) ends the
process after its answer. Anything printed goes to stderr, so it cannot corrupt the answers.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from typing import Any


def write(f: Any, obj: Any) -> None:
    data = pickle.dumps(obj)
    f.write(struct.pack("<Q", len(data)) + data)
    f.flush()


def read(f: Any) -> Any:
    head = f.read(8)
    if len(head) < 8:
        raise EOFError
    (n,) = struct.unpack("<Q", head)
    data = f.read(n)
    if len(data) < n:
        raise EOFError
    return pickle.loads(data)


def serve() -> None:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    while True:
        try:
            req = read(inp)
        except EOFError:
            return
        if req is None:
            return
        func, payload = req
        fatal = False
        try:
            ans: tuple[Any, ...] = ("ok", func(payload))
        except BaseException as e:  # noqa: BLE001 - every failure goes back as an answer
            fatal = bool(getattr(e, "fatal", False))
            ans = ("error", f"{type(e).__name__}: {e}", fatal)
        write(out, ans)
        if fatal:
            return


if __name__ == "__main__":
    serve()
