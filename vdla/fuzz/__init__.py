"""Differential fuzzing of the accelerator's executors against the golden simulator.

:mod:`.randprog` builds random valid programs (the tasks, tokens and DRAM image);
:mod:`.campaign` runs many of them on an RTL device and on ``Device("fsim")`` and compares
them bit for bit (``vdla fuzz`` or ``python -m vdla.fuzz``, the ``nox -s fuzz`` session). A tool, not part
of the runtime's user API.
"""
