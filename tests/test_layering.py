"""The layering of DESIGN.md ("Who may import whom"), checked on the source of every module.

Each module under vdla/ is parsed with ``ast``; every import counts, the ones inside
functions too (a lazy import still ties two modules together), with relative imports
resolved. ``from X import name`` is an import of the module ``X.name`` when there is one,
else of ``X``. A module's imports of its own ancestor packages are not counted (Python runs
them anyway). An arrow points at what a part may import::

    config  <-  isa  <-  hardware  <-  simulator  <-  runtime  <-  compiler  <-  cli

    inside compiler:  te, tir, schedule, transform, fingerprint, the tuning knobs
                      (autotvm.space, autotvm.dispatch)  <-  topi  <-  targets/*
                      <-  driver (and accelerator, the compiler package's own names)
                      <-  graph (strategy, executor)  <-  autotvm's tuning machinery
                      (task, measure, tuner, record, templates, features, tuning ...)

The package's other parts, placed by what they import and who uses them:

- utilities that import nothing of vdla and that anything above isa may use:
  ``progress`` (progress bars), ``cluster`` (the Dask client), ``compat`` itself and
  ``compat.aliases`` (the import-path finder; ``module_getattr`` for moved and TVM names);
- ``plot``: pictures of what the simulator and runtime report (config .. runtime);
- ``fuzz``, ``cocotb_kit``: above the runtime (random programs, the cocotb testbench kit:
  they drive devices and the RTL), never the compiler;
- the compiler imports the ISA, the simulator and the runtime, never ``hardware`` ("the
  compiler targets the ISA and the runtime, never the RTL");
- ``compat``'s helper modules (``vdla.rpc``, ``vdla.testing``, ``vdla.contrib``,
  ``vdla.vta``): TVM's face, above the compiler; ``explore`` (design-space sweeps): above
  the compiler and the hardware; neither imports the other, nor ``cli``;
- ``vdla/__init__.py`` (the public names): anything but ``cli``; only the ``__main__``
  modules (``python -m vdla``, ``python -m vdla.fuzz``, ``python -m vdla.hardware.formal``)
  import ``cli`` (``cli`` may import everything).

A new top-level part or compiler part fails :func:`test_every_module_has_a_place` until
it is given one here. Each test prints one violation per line: ``module -> imported
(file:line)``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "vdla"

#: the utilities: import nothing of vdla, usable above isa
UTILITIES = {"progress", "cluster", "compat.aliases"}
_LOW = {"config", "isa", "simulator", "runtime"}

#: top-level part -> the parts it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "config": set(),
    "isa": {"config"},
    "progress": set(),
    "cluster": set(),
    "compat.aliases": set(),
    "hardware": {"config", "isa"} | UTILITIES,
    "simulator": {"config", "isa", "hardware"} | UTILITIES,
    "runtime": {"config", "isa", "hardware", "simulator"} | UTILITIES,
    "plot": _LOW | UTILITIES,
    "fuzz": _LOW | {"hardware"} | UTILITIES,
    "cocotb_kit": _LOW | {"hardware"} | UTILITIES,
    "compiler": _LOW | UTILITIES,
    "compat": _LOW | {"compiler"} | UTILITIES,
    "explore": _LOW | {"hardware", "compiler", "plot"} | UTILITIES,
    "vdla": _LOW | {"hardware", "compiler", "compat"} | UTILITIES,
    "cli": {"config", "isa", "hardware", "simulator", "runtime", "compiler", "compat", "explore", "fuzz", "cocotb_kit",
            "plot", "vdla"} | UTILITIES,
    "__main__": {"cli"},
}

#: compiler parts, lowest first: a part may import its own and lower ranks only
COMPILER_RANKS: dict[str, int] = {"core": 0, "topi": 1, "targets": 2, "driver": 3, "graph": 4, "tuning": 5}
_CORE = ("te", "tir", "schedule", "transform", "fingerprint", "autotvm.space", "autotvm.dispatch")


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    file: Path
    line: int
    top_level: bool  # at module scope (a class body too), not under `if TYPE_CHECKING:`

    def __str__(self) -> str:
        return f"{self.importer} -> {self.imported} ({self.file.relative_to(ROOT.parent)}:{self.line})"


@cache
def modules() -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


@cache
def _tree(module: str) -> ast.Module:
    path = modules()[module]
    return ast.parse(path.read_text(), str(path))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement with whether it runs when the module is imported."""

    def walk(node: ast.AST, top: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, top
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from walk(child, False)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), False)
                for stmt in child.orelse:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), top)
            else:
                yield from walk(child, top)

    yield from walk(tree, True)


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _existing(name: str) -> str | None:
    """The longest prefix of ``name`` that is a module of the package."""
    while name and name not in modules():
        name = name.rpartition(".")[0]
    return name or None


@cache
def imports() -> tuple[Import, ...]:
    """Every import of a vdla module by a vdla module (not of its own ancestors)."""
    out = []
    for module, path in modules().items():
        for node, top in _statements(_tree(module)):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                base = _base(module, path.name == "__init__.py", node)
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules() else base for a in node.names]
            for name in dict.fromkeys(names):
                if name != "vdla" and not name.startswith("vdla."):
                    continue
                target = _existing(name)
                if target and target != module and not module.startswith(target + "."):
                    out.append(Import(module, target, path, node.lineno, top))
    return tuple(out)


def part(module: str) -> str | None:
    """The top-level part a module belongs to (None: not placed)."""
    if module == "vdla":
        return "vdla"
    if module.endswith(".__main__"):  # ``python -m vdla.fuzz`` and the like: entry points into the command
        return "__main__"
    if module in ("vdla.compat", "vdla.compat.aliases"):
        return "compat.aliases"
    name = module.split(".")[1]
    if name in ("cli", "cli_errors", "commands"):
        return "cli"
    return name if name in ALLOWED else None


def compiler_part(module: str) -> str | None:
    """The compiler layer of a module under vdla.compiler (None: not placed)."""
    rest = module.removeprefix("vdla.compiler").lstrip(".")
    if rest in ("", "driver", "accelerator"):
        return "driver"
    if any(rest == p or rest.startswith(p + ".") for p in _CORE):
        return "core"
    first = rest.split(".")[0]
    if first in ("topi", "targets", "graph"):
        return first
    if first == "autotvm":
        return "tuning"
    return None


def _fail_if(what: str, bad: list[Import]) -> None:
    """Fail with one line per violation (``module -> imported (file:line)``)."""
    if bad:
        lines = sorted({str(i) for i in bad})
        pytest.fail(f"{what}: {len(lines)} import(s)\n" + "\n".join(lines), pytrace=False)


def test_every_module_has_a_place() -> None:
    """Each module belongs to a part this test knows (a new part must be placed in the docstring and ALLOWED)."""
    unplaced = [m for m in modules() if part(m) is None
                or (m.startswith("vdla.compiler") and compiler_part(m) is None)]
    if unplaced:
        pytest.fail("modules without a place in the layering:\n" + "\n".join(unplaced), pytrace=False)


def test_imports_name_real_modules() -> None:
    """vdla imports its own modules by their real paths (not an old or TVM alias, nor one that is gone)."""
    bad = []
    for module, path in modules().items():
        for node, _ in _statements(_tree(module)):
            if isinstance(node, ast.ImportFrom):
                names = [_base(module, path.name == "__init__.py", node)]
            else:
                names = [a.name for a in node.names]
            bad += [Import(module, n, path, node.lineno, True) for n in names
                    if (n == "vdla" or n.startswith("vdla.")) and n not in modules()]
    _fail_if("imports of paths that are not modules of vdla", bad)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_cycles_at_module_scope() -> None:
    """(a) No cycle among the imports that run when a module is imported. Here ``from X import
    name`` counts X as well as X.name (X's ``__init__`` runs), as /work/shared/tools/import_cycles.py
    counts; that tool counts lazy imports too, this test only those at module scope."""
    graph: dict[str, set[str]] = {m: set() for m in modules()}
    edges: dict[tuple[str, str], Import] = {}
    for module, path in modules().items():
        for node, top in _statements(_tree(module)):
            if not top or isinstance(node, ast.Import):
                continue
            base = _base(module, path.name == "__init__.py", node)
            target = _existing(base) if base.startswith("vdla") else None
            if target and target != module and not module.startswith(target + "."):
                graph[module].add(target)
                edges.setdefault((module, target), Import(module, target, path, node.lineno, True))
    for i in imports():
        if i.top_level:
            graph[i.importer].add(i.imported)
            edges.setdefault((i.importer, i.imported), i)
    cycles = _cycles(graph)
    lines = []
    for comp in cycles:
        members = set(comp)
        lines.append("cycle: " + " <-> ".join(comp))
        lines += [f"  {edges[(a, b)]}" for a in comp for b in sorted(graph[a] & members)]
    if cycles:
        pytest.fail(f"{len(cycles)} import cycle(s) at module scope\n" + "\n".join(lines), pytrace=False)


@pytest.mark.parametrize("source", sorted(ALLOWED))
def test_top_level_arrows(source: str) -> None:
    """(c) Each part imports only the parts below it (config nothing, isa only config, hardware
    no simulator/runtime/compiler/cli, ..., nothing but __main__ imports cli)."""
    bad = [i for i in imports() if part(i.importer) == source and part(i.imported) not in (None, source)
           and part(i.imported) not in ALLOWED[source]]
    _fail_if(f"{source} may import only {sorted(ALLOWED[source]) or 'nothing of vdla'}", bad)


@pytest.mark.parametrize("source", [p for p in COMPILER_RANKS if p != "tuning"])
def test_compiler_arrows(source: str) -> None:
    """(b), (d) Inside the compiler nothing imports a layer above its own: targets never import the
    driver, graph or autotvm's tuning machinery (the knobs, autotvm.space and .dispatch, they may);
    topi never imports targets, driver or graph; te, tir, schedule and the knobs import none of those."""
    rank = COMPILER_RANKS[source]
    bad = [i for i in imports() if i.importer.startswith("vdla.compiler") and compiler_part(i.importer) == source
           and i.imported.startswith("vdla.compiler") and COMPILER_RANKS.get(compiler_part(i.imported) or "", -1) > rank]
    above = [p for p, r in COMPILER_RANKS.items() if r > rank]
    _fail_if(f"compiler {source} imports a layer above it ({', '.join(above)})", bad)
