"""The `vdla` command: the jobs people run from a shell.

    vdla info [--config NAME] [--isa]       the configuration, the ISA field table (--isa: the reference page)
    vdla asm FILE.s -o prog.vdla            assemble text into a program file
    vdla disasm prog.vdla                   print a program file as assembly
    vdla run prog.vdla [--device fsim] [--json]   run a program file and print the report
    vdla run MODEL [--device fsim] [--reduced] [--json] [--target cuda] [--compare]
                                            compile and run a model (resnet18, mobilenet_v1, mlp,
                                            dcgan_generator, resnet_block, resnet50, dqn, lstm_lm,
                                            digits, FILE.onnx, or a compiled model file), check it,
                                            print the per-layer table
    vdla build MODEL -o model.vdla          compile a model into one file
    vdla synth BOARD [BOARD ...] | all      bitstream + report into bitstreams/BOARD/ (YoWASP tools)
    vdla verilog [--config NAME] [--top axi|core] [-o FILE] [--lint]
                                            the core as Verilog, its port list and register map beside it
    vdla --version                          (also: python -m vdla ...)
    vdla tune MODEL|OP --target llvm|vdla --trials N --tuner xgb|ga|random|grid --log FILE
                                            auto-tune schedules (vdla.compiler.autotvm.cli); build and
                                            run take --tuning-log FILE
    vdla sweep --board B --vary NAME=V1,V2 [--no-synth] [--reduced]
                                            design-space sweep: resources, fmax, model cycles, latency,
                                            Pareto plot (vdla.explore.cli)

Each subcommand is a small function over the Python API; errors print one line and exit 2
(`vdla.cli_errors`; ``--debug`` prints the traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import __version__, isa
from .cli_errors import Parser, count, report
from .commands import outputs as run_outputs
from .commands import verilog as verilog_command
from .config import preset
from .progress import close as close_progress
from .progress import quiet

__all__ = ["main"]


def _info(args: argparse.Namespace) -> int:
    config = preset(args.config)
    if args.isa:
        print(isa.reference_markdown(config), end="")
        return 0
    rows = config.summary()
    width = max(len(k) for k, _ in rows)
    print(f"config {config.name}")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    print("\ninstruction fields (bit:width)")
    lay = isa.layout(config)
    for name, fmt in list(lay.formats.items()) + [("uop", lay.uop)]:
        print(f"  {name:<7}" + " ".join(f"{s.name}@{s.bit}:{s.width}" for s in fmt.slots))
    return 0


def _asm(args: argparse.Namespace) -> int:
    from .runtime import Program

    config = preset(args.config)
    try:
        text = Path(args.file).read_text()
    except UnicodeDecodeError as e:
        raise isa.ISAError(f"{args.file}: not a text file (byte {e.start} is not UTF-8): `vdla asm` reads "
                           "assembly text; `vdla disasm` reads program files") from None
    words, uops = isa.assemble(text, config)
    if not len(words):
        raise isa.ISAError(f"{args.file}: no instructions: a program needs at least a FINISH")
    prog = Program.from_words(config, words, uops, name=Path(args.file).stem)
    out = args.output or str(Path(args.file).with_suffix(".vdla"))
    prog.save(out)
    print(f"{out}: {len(prog)} instructions, {prog.uops.size} uops")
    return 0


def _disasm(args: argparse.Namespace) -> int:
    from .runtime import Program

    print(Program.load(args.file).disassemble(), end="")
    return 0


def _is_program(path: str) -> bool:
    from .runtime.program import MAGIC

    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def _model_config(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    return preset(args.config or "default")


def _run_model(args: argparse.Namespace) -> int:
    """`vdla run MODEL`: a built-in model, an .onnx file or a compiled model file."""
    from .compiler.autotvm.cli import tuning_context
    from .compiler.graph.job import parse_shapes, run_job, stderr_progress

    progress = stderr_progress(not args.quiet)
    with tuning_context(getattr(args, "tuning_log", None)):
        res = run_job(args.file, args.device, _model_config(args), reduced=args.reduced, size=args.size,
                      seed=args.seed, calib=args.calib, check_fp32=not args.no_fp32_check, progress=progress,
                      per_channel=args.per_channel, calibration=args.calibration,
                      device_options=run_outputs.device_options(args), shapes=parse_shapes(args.shape))
    close_progress(progress)
    print(json.dumps(res.to_dict(), indent=2) if args.json else res.table())
    run_outputs.write(args, job=res)
    return 0 if res.ok else 1


def _build_model(args: argparse.Namespace) -> int:
    """`vdla build MODEL -o model.vdla`: compile once, run later without recompiling."""
    from .compiler.autotvm.cli import tuning_context
    from .compiler.graph.job import build_model, load_model, parse_shapes, quant_options, stderr_progress

    progress = stderr_progress(not args.quiet)
    spec = quant_options(load_model(args.model, reduced=args.reduced, size=args.size, shapes=parse_shapes(args.shape)),
                         per_channel=args.per_channel, calibration=args.calibration)
    with tuning_context(getattr(args, "tuning_log", None)):
        m = build_model(spec, _model_config(args), calib=args.calib, progress=progress)
    close_progress(progress)
    out = Path(args.output or f"{spec.name}.vdla")
    m.save(out)
    nv = sum(k.target == "vdla" for k in m.kernels.values())
    print(f"{out}: {spec.description}, config {m.config.name}: {len(m.kernels)} nodes, {nv} on VDLA "
          f"({len(m.functions)} kernels), {out.stat().st_size} bytes, compiled in {m.info['compile_s']:.1f} s")
    return 0


def _run(args: argparse.Namespace) -> int:
    from .runtime import Device, Program

    if getattr(args, "compare", False):  # vdla run MODEL --compare: llvm, cuda and VDLA in one table
        from .compiler.graph.compare import run_cli as compare_cli

        return compare_cli(args)
    if getattr(args, "target", None):  # vdla run MODEL --target cuda: the float model on a GPU
        from .compiler.targets.cuda.model import run_cli

        return run_cli(args)
    if not _is_program(args.file):
        return _run_model(args)
    prog = Program.load(args.file)
    with Device(args.device, config=prog.config, **run_outputs.device_options(args)) as dev:
        report = dev.run(prog, strict=not args.lenient)
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.table())
    run_outputs.write(args, report=report, name=prog.name or Path(args.file).stem)
    return 0


def _model_args(q: argparse.ArgumentParser) -> None:
    q.add_argument("--config", default=None, help="configuration preset or JSON file (models; default: default)")
    q.add_argument("--reduced", action="store_true", help="the model's reduced size (for RTL simulation and tests)")
    q.add_argument("--size", type=count("--size", 1), default=None, help="input height/width of the model")
    q.add_argument("--calib", type=count("--calib", 1), default=1, help="calibration inputs for int8 quantisation")
    q.add_argument("--per-channel", action=argparse.BooleanOptionalAction, default=None,
                   help="int8 weight scales per output channel (default: the model's setting)")
    q.add_argument("--calibration", choices=("max", "percentile", "kl"), default=None,
                   help="activation calibration (default: the model's setting)")
    q.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    q.add_argument("--shape", action="append", default=[], metavar="NAME=d0,d1,...",
                   help="bind an ONNX input's dynamic dimensions (repeat per input)")
    q.add_argument("--tuning-log", default=None, help="a `vdla tune` log: build with its best schedules")


def _synth(args: argparse.Namespace) -> int:
    from .hardware.boards import BOARDS, board
    from .hardware.boards.build import BuildError, build

    names = list(BOARDS) if args.boards == ["all"] else args.boards
    if args.boards == ["all"]:
        for n in [n for n in names if BOARDS[n].blocked]:
            print(f"vdla synth: skipping {n}: {BOARDS[n].blocked} (name it to try anyway)", file=sys.stderr)
        names = [n for n in names if not BOARDS[n].blocked]
    try:
        boards = [board(n) for n in names]
    except KeyError as e:
        print(f"vdla synth: error: {e.args[0]}", file=sys.stderr)
        return 2
    reports = []
    for b in boards:
        try:
            reports.append(build(b, out_dir=args.out, build_dir=Path(args.build_dir) / b.name))
        except BuildError as e:
            print(f"vdla synth: {b.name}: error: {e}", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps(reports, indent=2))
        return 0
    print(f"\n{'board':<12} {'config':<28} {'MACs dsp/lut':>12} {'clock':>7} {'fmax':>8} {'GOPS':>6}  bitstream")
    for r in reports:
        print(f"{r['board']:<12} {r['bitstream_name']:<28} {r['macs']['dsp']:>5}/{r['macs']['lut']:<6} "
              f"{r['clock']['core_mhz']:>5g}M {r['clock']['fmax_mhz']:>7.1f}M {r['peak_gops']['at_core_clock']:>6g}  "
              f"{args.out}/{r['board']}/{r['bitstream']['file']} ({r['bitstream']['bytes']} B)")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = Parser(prog="vdla", description="VDLA accelerator co-design kit")
    p.add_argument("--debug", action="store_true", help="print the traceback of an error")
    p.add_argument("--version", action="version", version=f"vdla {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("info", help="show a configuration and the ISA field table")
    q.add_argument("--config", default="default")
    q.add_argument("--isa", action="store_true", help="print the ISA reference page (markdown)")
    q.set_defaults(fn=_info)
    q = sub.add_parser("asm", help="assemble a text program into a program file")
    q.add_argument("file")
    q.add_argument("-o", "--output")
    q.add_argument("--config", default="default")
    q.set_defaults(fn=_asm)
    q = sub.add_parser("disasm", help="print a program file as assembly")
    q.add_argument("file")
    q.set_defaults(fn=_disasm)
    q = sub.add_parser("run", help="run a program file, or a model (built-in name, .onnx, compiled .vdla) on a device")
    q.add_argument("file", help="program file, built-in model (resnet18, resnet50, mobilenet_v1, dqn, lstm_lm, digits, ...), "
                   ".onnx or compiled model")
    q.add_argument("--device", default="fsim", help="fsim, pysim, verilator, ...")
    q.add_argument("--json", action="store_true")
    q.add_argument("--lenient", action="store_true", help="report leftover tokens and races as warnings")
    _model_args(q)
    q.add_argument("--seed", type=count("--seed"), default=0, help="seed of the synthetic input (models)")
    q.add_argument("--no-fp32-check", action="store_true", help="skip the fp32 onnxruntime cross-check (models)")
    q.add_argument("--target", default=None, help="cuda (or 'cuda -arch=sm_90'): run the float32 model on a GPU")
    q.add_argument("--compare", action="store_true",
                   help="one table of the model on llvm (this CPU, fp32), cuda (the GPU, if any) and VDLA (int8)")
    run_outputs.add_arguments(q)
    q.set_defaults(fn=_run)
    q = sub.add_parser("build", help="compile a model (built-in name or .onnx) into one file")
    q.add_argument("model")
    q.add_argument("-o", "--output", help="output file (default MODEL.vdla)")
    _model_args(q)
    q.set_defaults(fn=_build_model)
    q = sub.add_parser("synth", help="build board bitstreams and reports into bitstreams/ (yowasp tools)")
    q.add_argument("boards", nargs="+", metavar="BOARD", help="ulx3s-85f, ulx3s-45f, ulx3s-25f, icebreaker, or all")
    q.add_argument("--out", default="bitstreams", help="output folder (default bitstreams)")
    q.add_argument("--build-dir", default="build", help="scratch folder for the tools (default build)")
    q.add_argument("--json", action="store_true")
    q.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    q.set_defaults(fn=_synth)
    verilog_command.add_parser(sub)
    from .compiler.autotvm.cli import add_parser as _add_tune

    _add_tune(sub)
    from .explore.cli import add_parser as _add_sweep

    _add_sweep(sub)
    for q in sub.choices.values():  # `vdla run --debug ...` as well as `vdla --debug run ...`
        q.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="print the traceback of an error")
    args = p.parse_args(argv)
    # -q for this command only: main() is also called in-process (tests, scripts), and a later
    # call without -q must show progress again
    with quiet(bool(getattr(args, "quiet", False))):
        try:
            return args.fn(args)
        except (Exception, KeyboardInterrupt) as e:  # every error: one line, exit status 2 (cli_errors)
            return report(args.cmd, e, args.debug)


if __name__ == "__main__":
    sys.exit(main())
