"""The committed bitstream reports (bitstreams/BOARD/report.json) against the current sources.

Run by ``nox -s bitstreams`` (VDLA_CHECK_BITSTREAMS=1), which then rebuilds every board and
compares the bitstreams' sha256 with the committed ones. Skipped otherwise: a source
change legitimately outdates the reports until the next bitstreams run.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from support import REPO

pytestmark = pytest.mark.skipif(os.environ.get("VDLA_CHECK_BITSTREAMS") != "1",
                                reason="the bitstreams session checks the committed reports (nox -s bitstreams)")

ROOT = REPO


def _reports() -> list[Path]:
    return sorted((ROOT / "bitstreams").glob("*/report.json"))


@pytest.mark.parametrize("path", _reports(), ids=lambda p: p.parent.name)
def test_report_matches_sources_and_bitstream(path):
    pytest.importorskip("amaranth_boards")
    from vdla.hardware.boards import board
    from vdla.hardware.boards.build import source_hash

    report = json.loads(path.read_text())
    b = board(report["board"])
    assert report["config"] == json.loads(b.config.to_json()), "the board's Config changed since the report"
    assert report["source_sha256"] == source_hash(b), "the gateware changed since the report: rebuild"
    bit = path.parent / report["bitstream"]["file"]
    assert hashlib.sha256(bit.read_bytes()).hexdigest() == report["bitstream"]["sha256"]
