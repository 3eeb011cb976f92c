"""Cross targets: the same kernels compiled ahead of time for AArch64 and RISC-V.

The object files are parsed as ELF (machine type, and the kernel's symbol defined in
the symbol table); the assembly must show the target's vector instructions.
"""

from __future__ import annotations

import struct

import pytest

from vdla.compiler import CrossModule, build, te, topi
from vdla.compiler.targets.llvm import schedules
from vdla.compiler.targets.llvm.target import AARCH64, RISCV64, LlvmOptions, llvm_options
from vdla.target import Target

EM_AARCH64, EM_RISCV = 183, 243


def elf_info(obj: bytes) -> tuple[int, dict[str, int]]:
    """(e_machine, {symbol name: section index}) of a little-endian ELF64 object."""
    assert obj[:4] == b"\x7fELF" and obj[4] == 2 and obj[5] == 1, "not a little-endian ELF64 file"
    machine = struct.unpack_from("<H", obj, 18)[0]
    shoff = struct.unpack_from("<Q", obj, 40)[0]
    shentsize, shnum = struct.unpack_from("<HH", obj, 58)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + k * shentsize) for k in range(shnum)]
    syms: dict[str, int] = {}
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], sh[9]):
            name_off, _info, _other, shndx = struct.unpack_from("<IBBH", obj, off)
            start = strtab[4] + name_off
            name = obj[start : obj.index(b"\0", start)].decode()
            if name:
                syms[name] = shndx
    return machine, syms


def _kernels():  # type: ignore[no-untyped-def]
    A, B, C = topi.matmul(32, 128, 48)
    yield "matmul", schedules.schedule_matmul_cpu(C), [A, B, C]
    x = te.placeholder((1, 2, 10, 10, 8), name="x")
    w = te.placeholder((2, 2, 3, 3, 8, 8), name="w")
    y = topi.conv2d_NCHWc(x, w, 1, 1)
    yield "conv2d", schedules.schedule_conv2d_NCHWc(y), [x, w, y]
    a = te.placeholder((100,), name="a")
    r = topi.relu(a)
    yield "relu", schedules.schedule_injective(r), [a, r]


@pytest.mark.parametrize(
    ("target", "machine", "vector_mnemonic"), [(AARCH64, EM_AARCH64, "fmla"), (RISCV64, EM_RISCV, "vfmacc")]
)
def test_cross_objects_assemble(target: str, machine: int, vector_mnemonic: str) -> None:
    for name, s, args in _kernels():
        m = build(s, args, target=target, name=name)
        assert isinstance(m, CrossModule)
        em, syms = elf_info(m.object_code)
        assert em == machine
        assert m.symbol in syms and syms[m.symbol] != 0, f"{m.symbol} is not defined in the object"
        asm = m.get_source("asm")
        assert m.symbol in asm
        if name != "relu":
            assert vector_mnemonic in asm, f"{name}: no {vector_mnemonic} in the {target} assembly"
        if name == "matmul":  # parallel loops call the runtime's launcher
            assert "vdla_parallel_launch" in syms


def test_cross_module_save_and_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    a = te.placeholder((16,), name="a")
    b = te.compute((16,), lambda i: a[i] * 2.0, name="b")
    m = build(te.create_schedule(b.op), [a, b], target="llvm -mtriple=aarch64-linux-gnu")
    m.save(tmp_path / "k.o")
    m.save(tmp_path / "k.s")
    assert (tmp_path / "k.o").read_bytes() == m.object_code
    assert "aarch64" in m.get_source("ll") or "aarch64" in m.get_source("opt")
    with pytest.raises(RuntimeError, match="compiled for"):
        m(None)
    with pytest.raises(ValueError, match="unknown target option"):
        build(te.create_schedule(b.op), [a, b], target="llvm -foo=1")
    with pytest.raises(ValueError, match="no back end"):
        build(te.create_schedule(b.op), [a, b], target="llvm -mtriple=nosuch-arch-none")
    assert str(llvm_options(Target(AARCH64))) == AARCH64 and str(m.target) == "llvm -mtriple=aarch64-linux-gnu"
    assert llvm_options(Target("llvm")).is_host() and not llvm_options(Target("llvm -mcpu=cortex-a53")).is_host()
    # the options in any order, from a dict too: the same canonical string
    t = Target({"kind": "llvm", "mcpu": "cortex-a53", "mattr": ["+neon"], "mtriple": "aarch64-linux-gnu"})
    assert llvm_options(t) == LlvmOptions("aarch64-linux-gnu", "cortex-a53", ("+neon",))
    assert str(llvm_options(t)) == AARCH64
