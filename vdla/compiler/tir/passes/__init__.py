"""Loop-IR passes: each is a function from a statement (or PrimFunc body) to a new one.

* :func:`simplify` — constant folding, canonical linear index forms, dead guards/loops
* :func:`storage_flatten` — multi-dimensional tensors to flat buffers
* :func:`vectorize` — loops marked ``vectorized`` to vector (Ramp/Broadcast) code
* :func:`inject_virtual_thread` — ``vthread``/``cthread`` loops to interleaved thread bodies
* :func:`inject_double_buffer` — double-buffered stages (``double_buffer()``) to two halves
* :func:`unroll` — loops marked ``unrolled`` to straight-line copies
"""

from .double_buffer import inject_double_buffer
from .flatten import storage_flatten
from .simplify import simplify, simplify_expr
from .unroll import unroll
from .vectorize import vectorize
from .vthread import inject_virtual_thread

__all__ = ["inject_double_buffer", "inject_virtual_thread", "simplify", "simplify_expr", "storage_flatten", "unroll", "vectorize"]
