"""Subcommands of the `vdla` command that have a module of their own (cli.py registers them).

Each module has ``add_parser(subparsers)`` (its arguments) and ``run(args) -> exit code``.
"""
