"""``python -m vdla.cli ...``: the `vdla` command (as ``python -m vdla``)."""

import sys

from .main import main

sys.exit(main())
