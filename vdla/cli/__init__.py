"""The `vdla` command: the jobs people run from a shell, one module per subcommand.

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
    vdla tune MODEL|OP --target llvm|vdla --trials N --tuner xgb|ga|random|grid --log FILE
                                            auto-tune schedules (vdla.compiler.autotvm.tuning); build and
                                            run take --tuning-log FILE
    vdla sweep --board B --vary NAME=V1,V2 [--no-synth] [--reduced]
                                            design-space sweep: resources, fmax, model cycles, latency,
                                            Pareto plot (vdla.explore)
    vdla fuzz [--device pysim] [--count N] [--invalid N] ...
                                            differential fuzz campaign (vdla.fuzz; as python -m vdla.fuzz)
    vdla formal [NAME ...] [--quick] [--solver z3]
                                            formal proofs of the core's protocols (vdla.hardware.formal;
                                            as python -m vdla.hardware.formal)
    vdla --version                          (also: python -m vdla ...)

Modules: `main` (the top-level parser, which registers every command module, and `main(argv)`),
`errors` (the one error path: one line on stderr, exit status 2; ``--debug`` prints the
traceback), `common` (what run and build share: the model options, progress on stderr),
`outputs` (run's ``--waves`` / ``--plot``), and one module per command: `info`, `asm` (asm
and disasm), `run`, `build`, `synth`, `verilog`, `tune`, `sweep`, `fuzz`, `formal`. Each has
``add_parser(subparsers)`` and ``run(args) -> exit status``; each is a thin layer over the
library, which never imports this package.
"""

from __future__ import annotations

from .main import main

__all__ = ["main"]
