"""vdla's TVM face: what lets a TVM or VTA program run with ``import vdla as tvm``.

- :mod:`.aliases`: the import-path finder and its tables -- TVM's module paths
  (``vdla.te``, ``vdla.autotvm``, ``vdla.vta`` ..., never warning), the old paths of
  modules that moved (``ALIASES``, a ``DeprecationWarning`` for one release), names that
  moved (``MOVED_NAMES``) and TVM's names vdla does not have (``UNSUPPORTED``: using one
  raises :class:`NotSupportedError` saying what to use instead);
- :mod:`.rpc` (``vdla.rpc``: ``LocalSession``), :mod:`.testing` (``vdla.testing``),
  :mod:`.contrib` (``vdla.contrib``: utils, clang, cblas), :mod:`.vta` (``vdla.vta``:
  VTA's Python API over vdla's compiler): TVM's and VTA's helper modules, reached under
  TVM's paths.

``vdla.nd`` is :mod:`vdla.runtime.ndarray`; TVM's ``tir`` spellings (``tir.IntImm``,
``tir.exp`` ...) are the loop IR's own (:mod:`vdla.compiler.tir.op`, :mod:`vdla.compiler.tir.scalar`).

Layering: this package's ``__init__`` and :mod:`.aliases` import nothing of vdla (any
module may use :func:`module_getattr`); the helper modules sit above the compiler, and
nothing in vdla but ``vdla/__init__.py`` imports them.
"""

from .aliases import (
    ALIASES,
    MOVED_NAMES,
    PUBLIC,
    SILENT,
    UNSUPPORTED,
    UNSUPPORTED_MODULES,
    NotSupportedError,
    install,
    is_public,
    module_getattr,
    moved_names,
    new_path,
    not_supported,
)

__all__ = ["ALIASES", "MOVED_NAMES", "PUBLIC", "SILENT", "UNSUPPORTED", "UNSUPPORTED_MODULES", "NotSupportedError",
           "install", "is_public", "module_getattr", "moved_names", "new_path", "not_supported"]
