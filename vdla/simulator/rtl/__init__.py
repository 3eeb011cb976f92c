"""RTL runners: the Amaranth core run in Amaranth's simulator (:mod:`.pysim`) and compiled by
Verilator (:mod:`.verilator`, with its C++ harness), their results mapped onto the golden
simulator's Report and errors. The runtime's ``pysim`` and ``verilator`` devices
(`vdla.runtime.backends`) run programs through them.
"""
