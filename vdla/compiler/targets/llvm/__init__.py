"""The CPU target: LLVM IR through llvmlite, JIT-compiled for the host or cross-compiled for other CPUs.

Modules: :mod:`.codegen` (loop IR -> LLVM IR), :mod:`.jit` (MCJIT on the host and its
runtime symbols), :mod:`.threadpool` (the parallel-launch runtime, a native pool built from
``threadpool.c``, and the thread count), :mod:`.target` (target strings, host CPU
detection, cross compilation) and :mod:`.module` (the built function and
:func:`~.module.build_function`, which the driver calls).
"""
