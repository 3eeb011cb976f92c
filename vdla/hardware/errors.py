"""The core's error codes: what stopped it, as latched in ``error_code`` (the register of that name).

Fetch finds what is wrong with an instruction's encoding before dispatching it; the stages
find, while executing, an index past the buffer it addresses, where the comparison is a
few gates (buffer depths are powers of two, so "past the end" is a carry or a high bit):

========================  ======================  ===================================================
code                      found by                what
========================  ======================  ===================================================
``ILLEGAL_OPCODE``        fetch                   an opcode the ISA does not have
``BAD_MEMORY_TYPE``       fetch                   a LOAD/STORE of a memory type it cannot move
``BAD_ALU_OPCODE``        fetch                   an ALU opcode the ISA does not have
``NO_FINISH``             fetch                   the stream ended (or was empty) without FINISH
``SRAM_RANGE``            load, compute, store    a LOAD writes (padding included) or a STORE reads
                                                  an SRAM row at or past the buffer's depth
``UOP_RANGE``             compute                 a GEMM/ALU with ``uop_end`` past the uop buffer
                                                  or ``uop_bgn > uop_end``
``UOP_INDEX``             compute                 a GEMM/ALU iteration's ACC (dst), INP or ACC (src)
                                                  or WGT index at or past that buffer's depth
========================  ======================  ===================================================

The core latches the first error with the index of the instruction that raised it (fetch's
running index; a stage's is carried with the instruction through its command queue), halts,
and sets ``done`` once every stage has finished the instruction it was executing. An
element past its buffer is never written (it would wrap onto row ``index mod depth``). The
golden simulator rejects the same programs: `vdla.simulator.rtl.pysim.error_class` maps each
code to its error class (`UOP_INDEX` is an ExecutionError, the rest ProgramError).
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ErrorCode", "ERROR_BITS"]


class ErrorCode(IntEnum):
    NONE = 0
    ILLEGAL_OPCODE = 1
    BAD_MEMORY_TYPE = 2
    BAD_ALU_OPCODE = 3
    NO_FINISH = 4  # the stream ended (or was empty) without a FINISH
    SRAM_RANGE = 5
    UOP_RANGE = 6
    UOP_INDEX = 7


#: Bits of an error code (the ``error_code`` ports and register field).
ERROR_BITS = max(ErrorCode).bit_length()
