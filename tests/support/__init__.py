"""Shared test helpers: the one package under tests/ (imported as ``support.xxx``; pytest puts tests/ on sys.path)."""
