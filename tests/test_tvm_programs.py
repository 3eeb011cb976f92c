"""TVM and VTA tutorial programs run with only the import line changed (tests/tvm_programs/)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "tvm_programs"

#: program -> a line it prints only when every check in it passed
CASES = {
    "extern_op.py": "extern op: all checks passed",
    "te_getting_started.py": "TE getting started: all checks passed",
    "schedule_primitives.py": "schedule primitives: all checks passed",
    "tensorize.py": "tensorize: all checks passed",
    "tuple_inputs.py": "tuple inputs: all checks passed",
    "vta_matrix_multiply.py": "Successful blocked matrix multiply test!",
    "vta_matrix_multiply_opt.py": "Successful blocked matrix multiply test!",
    "vta_convolution_opt.py": "Successful 2D convolution test!",
    "vta_insn.py": "vta insn: all checks passed",
}


def test_every_program_is_listed():
    assert sorted(p.name for p in PROGRAMS.glob("*.py")) == sorted(CASES)


@pytest.fixture
def _keep_registry():
    """Programs register global functions (register_func); leave the registry as it was, but for
    the ones vdla's own modules registered when the program imported them."""
    from vdla.runtime import packed

    before = dict(packed._FUNCS)
    yield
    ours = {k: f for k, f in packed._FUNCS.items() if getattr(f, "__module__", "").startswith("vdla.")}
    packed._FUNCS.clear()
    packed._FUNCS.update(before | ours)


@pytest.mark.filterwarnings("ignore:stage 'B' is inlined")  # schedule_primitives.py does so, as TVM's
@pytest.mark.parametrize("name", sorted(CASES))
def test_program_runs(name, capsys, _keep_registry):
    runpy.run_path(str(PROGRAMS / name), run_name="__main__")
    assert CASES[name] in capsys.readouterr().out


@pytest.mark.slow
def test_vta_program_on_the_rtl(capsys, _keep_registry):
    """The same VTA program with ext_dev on the Amaranth simulation of the core (env.TARGET "tsim")."""
    from vdla.runtime import ndarray

    ndarray.set_ext_dev_backend("pysim")
    try:
        runpy.run_path(str(PROGRAMS / "vta_matrix_multiply.py"), run_name="__main__")
    finally:
        ndarray.set_ext_dev_backend("fsim")
    assert CASES["vta_matrix_multiply.py"] in capsys.readouterr().out
