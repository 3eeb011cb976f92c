"""Targets: one folder each, holding its code generator, its runtime glue and its schedules.

``llvm/`` compiles the loop IR for CPUs through llvmlite (the host by JIT, others ahead
of time); ``vdla/`` lowers it onto the accelerator's instructions and micro-ops. The
driver (:mod:`vdla.compiler.driver`) picks one by the target string.
"""
