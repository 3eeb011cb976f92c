"""``python -m vdla.hardware.formal [NAME ...] [--work DIR] [--quick]``: run the formal proofs,
print a table: the same command as ``vdla formal`` (:mod:`vdla.cli.formal`; the proofs are
:func:`vdla.hardware.formal.sby.select` and :func:`~vdla.hardware.formal.sby.prove_all`)."""

import sys

from ...cli import main

if __name__ == "__main__":
    sys.exit(main(["formal", *sys.argv[1:]]))
