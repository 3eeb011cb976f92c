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
    "te_getting_started_cuda.py": "TE getting started (cuda): all checks passed",
    "opt_conv_cuda.py": "opt conv cuda: all checks passed",
    "reduction.py": "reduction: all checks passed",
    "intrin_math.py": "intrin math: all checks passed",
}

#: GPU programs: with a GPU they run on it; without one they check their build (ptxas, the loop
#: nest on the CPU) and say so in the line they print
GPU_PROGRAMS = {"te_getting_started_cuda.py", "opt_conv_cuda.py", "reduction.py", "intrin_math.py"}


def test_every_program_is_listed():
    assert sorted(p.name for p in PROGRAMS.glob("*.py")) == sorted(CASES)


@pytest.fixture
def _keep_registry():
    """Programs register global functions (register_func); leave the registry as it was, but for
    the ones vdla's own modules registered when the program imported them."""
    from vdla.compiler.tir import op_registry
    from vdla.runtime import packed

    before = dict(packed._FUNCS)
    ops = op_registry.snapshot()  # intrin_math.py registers lowering rules for cuda
    yield
    ours = {k: f for k, f in packed._FUNCS.items() if getattr(f, "__module__", "").startswith("vdla.")}
    packed._FUNCS.clear()
    packed._FUNCS.update(before | ours)
    op_registry.restore(ops)


@pytest.mark.filterwarnings("ignore:stage 'B' is inlined")  # schedule_primitives.py does so, as TVM's
@pytest.mark.parametrize("name", sorted(CASES))
def test_program_runs(name, capsys, _keep_registry):
    gpu = False
    if name in GPU_PROGRAMS:
        from vdla.compiler.targets.cuda.ptxas import find_ptxas
        from vdla.runtime.cuda_driver import device_count

        gpu = device_count() > 0
        if not gpu and find_ptxas() is None:
            pytest.skip("no CUDA GPU and no ptxas (pip install nvidia-cuda-nvcc) to check the build with")
    runpy.run_path(str(PROGRAMS / name), run_name="__main__")
    out = capsys.readouterr().out
    assert CASES[name] in out
    if name in GPU_PROGRAMS:  # it ran where it could: on the GPU when there is one
        assert ("(ran on the GPU)" in out) == gpu, out[-300:]


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
