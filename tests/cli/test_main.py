"""The top-level `vdla` parser (vdla.cli.main): every command registered and listed, one package for them all."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest
from support import REPO

from vdla.cli import main
from vdla.cli.main import COMMANDS, PERSONAS, build_parser

NAMES = ["info", "asm", "disasm", "run", "build", "synth", "verilog", "tune", "sweep", "fuzz", "formal"]


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for name in NAMES:
        assert f"\n  {name} " in out, name
    sub = next(a for a in build_parser()._actions if a.dest == "cmd")
    assert list(sub.choices) == NAMES


def test_help_groups_the_commands_by_persona(capsys):
    """Each command once, under the heading of who runs it, in PERSONAS' order, with its help."""
    assert sorted(n for _, names in PERSONAS for n in names) == sorted(NAMES)
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: vdla [-h] [--debug] [--version] COMMAND ...\n")
    blocks = out.split("\n\n")
    for title, names in PERSONAS:
        (block,) = [b for b in blocks if b.startswith(f"{title}:\n")]
        listed = [line.split()[0] for line in block.splitlines()[1:] if not line.startswith("   ")]
        assert listed == list(names), title
    assert out.index("compile and run models") < out.index("write programs by hand") < out.index("build the hardware") \
        < out.index("verify the core")
    assert "  fuzz     differential fuzz: random valid and invalid programs" in out
    assert "{info," not in out  # not argparse's flat choice list as well
    assert out.rstrip().endswith("`vdla COMMAND --help` shows a command's options.")


def test_no_command_is_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        main([])
    assert e.value.code == 2
    assert capsys.readouterr().err == "vdla: error: the following arguments are required: COMMAND (see vdla --help)\n"


def test_unknown_command_is_one_line_naming_the_commands(capsys):
    with pytest.raises(SystemExit) as e:
        main(["nosuch"])
    err = capsys.readouterr().err
    # argparse quotes the choices differently across Python versions: the names, not their quoting
    assert e.value.code == 2 and err.count("\n") == 1, err
    assert err.startswith("vdla: error: argument COMMAND: invalid choice: 'nosuch' (choose from ")
    assert err.endswith(" (see vdla --help)\n") and all(name in err for name in NAMES)


def test_every_command_module_has_add_parser_run_and_a_docstring():
    for module in COMMANDS:
        assert callable(module.add_parser) and callable(module.run), module.__name__
        assert module.__doc__ and module.__doc__.strip(), module.__name__


def test_every_command_takes_debug(capsys):
    assert main(["formal", "nosuch", "--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_python_dash_m_vdla_cli():
    res = subprocess.run([sys.executable, "-m", "vdla.cli", "--help"], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0 and "formal" in res.stdout and "fuzz" in res.stdout


def test_nothing_outside_the_cli_imports_it():
    """The commands import the library, never the reverse (the ``__main__`` entry points are the
    exception: ``python -m vdla``, ``python -m vdla.fuzz`` are the command)."""
    offenders = []
    for path in sorted((REPO / "vdla").rglob("*.py")):
        rel = path.relative_to(REPO / "vdla")
        if rel.parts[0] == "cli" or rel.name == "__main__.py":
            continue
        package = ["vdla", *rel.parts[:-1]]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                mod = ".".join([*base, *([node.module] if node.module else [])])
                names = [f"{mod}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n == "vdla.cli" or n.startswith("vdla.cli.") for n in names):
                offenders.append(str(rel))
    assert not offenders, offenders
