"""Build a bitstream for a board: the Python side of `vdla synth BOARD`.

    python examples/board_build.py icebreaker             # Yosys + nextpnr + icepack, ~2 minutes
    python examples/board_build.py ulx3s-25f --dry-run    # elaborate only: RTLIL, constraints, Yosys script

The board top (`vdla.hardware.boards`: the core, its memory, an arbiter and the UART
host bridge) is elaborated by amaranth-boards' platform for the board; the full build
then runs the YoWASP tools from PyPI (the ``fpga`` extra: no system install) and writes
the bitstream, report.md/report.json and config.json into ``--out/BOARD``. ``--dry-run``
stops after elaboration: it writes the tool inputs into ``--build-dir`` and prints their
hash (the ``source_sha256`` a full build records) and the commands a build would run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vdla.hardware.boards import BOARDS, board
from vdla.hardware.boards.build import BuildError, build, prepare, source_hash


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("board", choices=sorted(BOARDS), help="which board")
    p.add_argument("--dry-run", action="store_true", help="elaborate and write the tool inputs, run no tool")
    p.add_argument("--out", default="bitstreams", help="output folder of a full build (default bitstreams)")
    p.add_argument("--build-dir", default=None, help="scratch folder (default build/BOARD)")
    args = p.parse_args(argv)
    b = board(args.board)
    scratch = Path(args.build_dir or Path("build") / b.name)
    c = b.config
    print(f"{b.name}: {b.description}")
    print(f"config {c.name} ({c.bitstream_name}): {c.batch}x{c.block_in}x{c.block_out} GEMM, "
          f"{b.dsp_macs} MACs on DSP blocks + {b.lut_macs} in LUTs, core clock {b.clk_mhz:g} MHz")
    if args.dry_run:
        files = prepare(b, scratch)
        for name in sorted(files):
            print(f"  {scratch / name}: {len(files[name].splitlines())} lines")
        print(f"sources sha256 {source_hash(b, files)}")
        print(f"a full build runs yosys ({scratch / 'top.ys'}), nextpnr-{b.family} (seed {b.seed}) and "
              f"{'ecppack' if b.family == 'ecp5' else 'icepack'}: python examples/board_build.py {b.name}")
        return 0
    try:
        report = build(b, out_dir=args.out, build_dir=scratch)
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"fmax {report['clock']['fmax_mhz']:.1f} MHz, peak {report['peak_gops']['at_core_clock']} GOPS; "
          f"report: {Path(args.out) / b.name / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
