"""The loop IR (TVM's TIR): what schedules lower to and targets generate code from.

Modules: :mod:`.nodes` (expression and statement nodes as plain dataclasses,
``PrimFunc``), :mod:`.dtypes` (the scalar types), :mod:`.visitor` (walk, map and
substitute), :mod:`.printer` (readable text of any node), :mod:`.arith` (linear forms
and bounds the simplifier and the lowering passes reason with) and :mod:`.passes`
(IR -> IR functions: flatten, simplify, vectorize, virtual threads, unroll).
"""
