"""``--target cuda`` without ``-arch`` builds for the GPU present (vdla run/build, --compare).

The rule is the pure `for_device(target, device_arch)`, tested here for every case; the
command is tested against whatever GPU this machine has (none: the target stays ``cuda``,
sm_80, as before).
"""

from __future__ import annotations

import pytest

from vdla import cli
from vdla.compiler.targets.cuda.target import DEFAULT_ARCH, cuda_limits, for_device, present_arch
from vdla.compiler.targets.target import Target, TargetError
from vdla.runtime.cuda_driver import device_count


@pytest.mark.parametrize(("target", "device_arch", "built"), [
    ("cuda", None, "cuda"),  # no GPU: as written (DEFAULT_ARCH)
    ("cuda", "sm_90", "cuda -arch=sm_90"),  # H100, H200
    ("cuda", "sm_80", "cuda -arch=sm_80"),  # A100
    ("cuda", "sm_86", "cuda -arch=sm_86"),
    ("nvptx", "sm_89", "nvptx -arch=sm_89"),
    ("cuda", "sm_87", "cuda -arch=sm_86"),  # between supported ones: the newest below it
    ("cuda", "sm_100", "cuda -arch=sm_90"),  # newer than all: PTX JIT-compiles forward
    ("cuda", "sm_120", "cuda -arch=sm_90"),
    ("cuda -arch=sm_80", "sm_90", "cuda -arch=sm_80"),  # named: kept
    ("cuda -mcpu=sm_86", "sm_90", "cuda -mcpu=sm_86"),
    ("llvm", "sm_90", "llvm"),  # other kinds: untouched
    ("llvm -mcpu=skylake", "sm_90", "llvm -mcpu=skylake"),
])
def test_for_device(target: str, device_arch: str | None, built: str) -> None:
    t = for_device(target, device_arch)
    assert str(t) == built
    if t.backend == "cuda":  # one the back end builds for
        assert cuda_limits(t).arch == t.attrs.get("arch", t.attrs.get("mcpu", DEFAULT_ARCH))


def test_for_device_keeps_the_host() -> None:
    t = for_device(Target("cuda", host="llvm -mcpu=skylake"), "sm_90")
    assert str(t) == "cuda -arch=sm_90" and str(t.host) == "llvm -mcpu=skylake"


def test_older_gpu_is_an_error_that_names_it() -> None:
    with pytest.raises(TargetError) as e:
        for_device("cuda", "sm_75")
    assert str(e.value) == ("the GPU present is sm_75, older than every architecture the cuda target supports "
                            "(sm_80, sm_86, sm_89, sm_90); to build for another GPU name it, e.g. 'cuda -arch=sm_80'")


def test_present_arch_is_gpu_zeros() -> None:
    arch = present_arch()
    assert (arch is None) == (device_count() == 0)
    assert arch is None or arch.startswith("sm_")


def test_vdla_build_target_cuda_uses_the_present_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    """On an H100 the plan is for sm_90; without a GPU for ``cuda`` (sm_80), as before."""
    want = str(for_device("cuda", present_arch()))
    assert cli.main(["build", "mlp", "--reduced", "--target", "cuda", "-q"]) == 0
    out = capsys.readouterr().out
    assert f", for {want}\n" in out, out
