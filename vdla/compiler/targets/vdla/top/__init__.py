"""Operator templates of the VDLA target and the strategy that picks one for a graph node.

:mod:`.strategy` turns a fused graph node into an ALU chain and builds its kernel on the
packed dense/conv2d templates (:mod:`vdla.compiler.targets.vdla.topi`) and the grouped and
transposed conv2d templates (:mod:`vdla.compiler.targets.vdla.topi_ext`).
"""
