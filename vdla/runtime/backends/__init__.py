"""Device backends, one module each, imported by name when a Device first uses them.

``fsim`` (the golden simulator), ``pysim`` (the RTL in Amaranth's simulator), ``verilator``
(the RTL compiled by Verilator) and ``serial`` (a board behind its USB-serial bridge).
Each module's ``BACKEND`` is a factory ``(device, arg) -> backend`` whose
``execute(device, insn_addr, count, strict)`` returns a `vdla.simulator.Report`; see
`vdla.runtime.device.BUILTIN_BACKENDS`.
"""
