"""The ``fusionspec`` command line.

Each subcommand lives in its own module ``fusionspec.conformance.cmd_<name>`` exposing
``HELP: str``, ``add_arguments(parser)`` and ``run(args) -> int``. This module only dispatches,
and turns every `FusionspecError` into a one-paragraph message on stderr with exit code 1 (a
user mistake never ends in a traceback). Exit code 0 means success; 2 is a usage error.

Every command that prints results takes ``--json`` for machine-readable output (`emit`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from fusionspec.spec.errors import FusionspecError

__all__ = ["main", "emit", "COMMANDS"]

#: Subcommand name -> module name, in the order `fusionspec --help` lists them.
COMMANDS: dict[str, str] = {
    "validate": "cmd_validate",
    "patterns": "cmd_patterns",
    "partition": "cmd_partition",
    "explain": "cmd_explain",
    "run": "cmd_run",
    "conform": "cmd_conform",
    "report": "cmd_report",
    "findings": "cmd_findings",
}


def _module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"fusionspec.conformance.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"fusionspec.conformance.{name}":
            return None
        raise


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fusionspec",
        description="Conformance suite and reference for the oneDNN Graph fusion patterns.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command, module_name in COMMANDS.items():
        module = _module(module_name)
        if module is None:
            continue
        help_text: str = getattr(module, "HELP", "")
        cmd_parser = sub.add_parser(command, help=help_text, description=help_text)
        module.add_arguments(cmd_parser)
        cmd_parser.set_defaults(_module=module)
    return parser


def emit(args: argparse.Namespace, text: str, data: Any) -> None:
    """Print `data` as JSON when ``--json`` was given, else the human-readable `text`."""
    if getattr(args, "json", False):
        json.dump(data, sys.stdout, indent=2, sort_keys=False)
        sys.stdout.write("\n")
    elif text:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    module: ModuleType = args._module
    try:
        code: int = module.run(args)
    except FusionspecError as exc:
        if getattr(args, "json", False):
            emit(args, "", {"ok": False, "error": type(exc).__name__, "message": str(exc)})
        else:
            print(f"fusionspec {args.command}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"fusionspec {args.command}: {exc.strerror or exc}: {exc.filename or ''}",
              file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    raise SystemExit(main())
