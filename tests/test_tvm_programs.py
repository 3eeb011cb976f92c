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
    "tune_conv2d_cuda.py": "tune conv2d cuda: all checks passed",
}

#: GPU programs: with a GPU they run on it; without one they check their build (ptxas, the loop
#: nest on the CPU) and say so in the line they print
GPU_PROGRAMS = {"te_getting_started_cuda.py", "opt_conv_cuda.py", "reduction.py", "intrin_math.py",
                "tune_conv2d_cuda.py"}


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
def test_program_runs(name, capsys, _keep_registry, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # what a program writes (tune_conv2d_cuda.py's conv2d.log) stays out of the tree
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


@pytest.mark.slow
def test_opt_conv_kernel_as_on_a_gpu():
    """opt_conv_cuda.py's kernel (cooperative fetches into shared memory, virtual threads, the
    barriers between) run the GPU's way on the CPU, every thread of a block in lockstep between
    barriers (tests/support/simt.py), at a size a Python interpreter finishes (~40 s)."""
    import numpy as np
    from support.simt import run_kernels

    src = (PROGRAMS / "opt_conv_cuda.py").read_text().split("a_np = np.random")[0]
    for old, new in (("in_channel = 32", "in_channel = 8"), ("in_size = 7", "in_size = 1")):
        assert old in src
        src = src.replace(old, new)
    env: dict = {}
    exec(compile(src, "opt_conv_cuda.py (small)", "exec"), env)
    rng = np.random.default_rng(0)
    a = rng.random((1, 1, 8, 64), dtype=np.float32)
    w = rng.random((3, 3, 8, 64), dtype=np.float32)
    b = np.zeros((1, 1, 64, 64), np.float32)
    run_kernels(env["func"], a, w, b)
    np.testing.assert_allclose(b, np.einsum("hwcn,cf->hwfn", a, w[1, 1]), rtol=1e-5)  # 1x1 input: the centre tap
