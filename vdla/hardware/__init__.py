"""Amaranth HDL description of the VDLA core and its board tops.

The decoder's instruction layouts come from `vdla.isa.amaranth_layout(config, fmt)`, so
the hardware never holds a second copy of the field table; every module takes a
`vdla.config.Config`. The modules themselves (fetch, load, compute, store, the GEMM
core and tensor ALU, the AXI interfaces) are the subject of the hardware issue.
"""
