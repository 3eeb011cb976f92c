"""``python -m vdla.fuzz``: the differential fuzz campaign (see :mod:`vdla.fuzz.campaign`; also ``vdla fuzz``)."""

import sys

from .campaign import main

sys.exit(main())
