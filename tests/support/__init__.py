"""Shared test helpers: the one package under tests/ (imported as ``support.xxx``; pytest puts
tests/ on the path). ``REPO`` is the repository root, for tests that read its files."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
