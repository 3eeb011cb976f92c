"""``python -m vdla ...``: the `vdla` command (`vdla.cli`)."""

import sys

from .cli import main

sys.exit(main())
