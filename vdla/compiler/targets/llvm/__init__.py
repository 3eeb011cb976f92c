"""The CPU target: LLVM IR through llvmlite, JIT-compiled for the host or cross-compiled for other CPUs.

Modules: :mod:`.codegen` (loop IR -> LLVM IR), :mod:`.jit` (MCJIT on the host and its
runtime symbols), :mod:`.threadpool` (the parallel-launch runtime, a native pool built from
``threadpool.c``, and the thread count), :mod:`.target` (a target's triple, CPU and
features, host detection, cross compilation), :mod:`.module` (the built function and its
:func:`~.module.build_function`) and :mod:`.backend` (what the driver calls).
"""
