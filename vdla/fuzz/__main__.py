"""``python -m vdla.fuzz``: the differential fuzz campaign, the same command as ``vdla fuzz``
(:mod:`vdla.cli.fuzz`; the campaign is :mod:`vdla.fuzz.campaign`)."""

import sys

from ..cli import main

sys.exit(main(["fuzz", *sys.argv[1:]]))
