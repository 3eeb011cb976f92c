"""The CPU target: LLVM IR through llvmlite, JIT-compiled for the host or cross-compiled for other CPUs.

Modules: :mod:`.codegen` (loop IR -> LLVM IR), :mod:`.jit` (MCJIT on the host, the
parallel-launch runtime, thread count), :mod:`.target` (target strings, host CPU
detection, cross compilation) and :mod:`.module` (the built function and
:func:`~.module.build_function`, which the driver calls).
"""
