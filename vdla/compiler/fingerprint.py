"""Fingerprints of generated code, for proving that a restructure changed no output.

With ``VDLA_FINGERPRINT=DIR`` set, every build records one line per generated artefact
(``kind name sha256``) in ``DIR/<pid>.txt``: the LLVM IR text of an llvm build (its
process-unique symbol replaced by a fixed one) and the program bytes, relocations and
argument layouts of a vdla build. Run the test suite once before and once after a
change, then compare the two folders as multisets (test order and worker split do not
matter)::

    VDLA_FINGERPRINT=/tmp/before pytest ...; VDLA_FINGERPRINT=/tmp/after pytest ...
    python -m vdla.compiler.fingerprint /tmp/before /tmp/after
"""

from __future__ import annotations

import collections
import hashlib
import os
import sys
from pathlib import Path

ENV = "VDLA_FINGERPRINT"


def record(kind: str, name: str, data: bytes | str) -> None:
    """Append one fingerprint line when ``VDLA_FINGERPRINT`` names a folder; otherwise nothing."""
    folder = os.environ.get(ENV)
    if not folder:
        return
    blob = data.encode() if isinstance(data, str) else data
    digest = hashlib.sha256(blob).hexdigest()
    Path(folder).mkdir(parents=True, exist_ok=True)
    with open(Path(folder) / f"{os.getpid()}.txt", "a") as f:
        f.write(f"{kind} {name} {digest}\n")


def load(folder: str | Path) -> collections.Counter[str]:
    """Every line recorded in ``folder``, counted."""
    lines: collections.Counter[str] = collections.Counter()
    for path in Path(folder).glob("*.txt"):
        lines.update(line for line in path.read_text().splitlines() if line)
    return lines


def compare(before: str | Path, after: str | Path) -> int:
    """Print how the two recordings differ; 0 when they are the same multiset."""
    a, b = load(before), load(after)
    gone, new = a - b, b - a
    print(f"{sum(a.values())} artefacts before ({len(a)} distinct), {sum(b.values())} after ({len(b)} distinct)")
    for line, n in sorted(gone.items()):
        print(f"  only before (x{n}): {line}")
    for line, n in sorted(new.items()):
        print(f"  only after  (x{n}): {line}")
    print("identical" if not gone and not new else "DIFFERENT")
    return 0 if not gone and not new else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m vdla.compiler.fingerprint BEFORE_DIR AFTER_DIR")
    sys.exit(compare(sys.argv[1], sys.argv[2]))
