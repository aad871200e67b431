"""The ``fusionspec`` command line: the parser and the dispatch to one module per command.

Each command lives in its own module of `fusionspec.cli` exposing ``HELP: str``,
``add_arguments(parser)`` and ``run(args) -> int``; `COMMANDS` lists them. This module only
dispatches, and turns every `FusionspecError` into a one-paragraph message on stderr with exit
code 1 (a user mistake never ends in a traceback). Exit code 0 means success; 2 is a usage error.

Every command that prints results takes ``--json`` for machine-readable output
(`fusionspec.cli.output.emit`).
"""

from __future__ import annotations

import argparse
import os
import sys
import zipfile
from collections.abc import Sequence
from types import ModuleType

from fusionspec.conformance.workers import terminate_cleanly
from fusionspec.spec.errors import FusionspecError

from . import (
    bench,
    conform,
    diff,
    explain,
    findings,
    merge,
    partition,
    patterns,
    report,
    run,
    validate,
)
from .output import UsageError, emit, say
from .version import VersionAction

__all__ = ["main", "COMMANDS", "build_parser"]

#: Subcommand name -> its module, in the order `fusionspec --help` lists them.
COMMANDS: dict[str, ModuleType] = {
    "validate": validate,
    "patterns": patterns,
    "partition": partition,
    "explain": explain,
    "run": run,
    "conform": conform,
    "bench": bench,
    "merge": merge,
    "diff": diff,
    "report": report,
    "findings": findings,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fusionspec",
        description="Conformance suite and reference for the oneDNN Graph fusion patterns.")
    parser.add_argument("--version", action=VersionAction,
                        help="the suite's and the spec's versions, Python, the backends found")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command, module in COMMANDS.items():
        help_text: str = module.HELP
        cmd_parser = sub.add_parser(command, help=help_text, description=help_text)
        module.add_arguments(cmd_parser)
        cmd_parser.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    module: ModuleType = args._module
    try:
        # SIGTERM stops a command as Ctrl-C does, so no backend worker outlives it.
        with terminate_cleanly():
            code: int = module.run(args)
    except BrokenPipeError:
        # The reader went away (``fusionspec ... --json | head``): nothing more can be said
        # there. Point standard output at nothing so the interpreter's final flush is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a shell reports a command ended by SIGPIPE
    except UsageError as exc:
        return _fail(args, "error", exc, 2)
    except FusionspecError as exc:
        return _fail(args, "", exc, 1)
    except OSError as exc:
        return _fail(args, "", exc, 1, f"{exc.strerror or exc}: {exc.filename or ''}")
    except (OverflowError, RecursionError, MemoryError, zipfile.BadZipFile) as exc:
        # An input past what Python can hold (a number too large, JSON nested too deep, an
        # array too big): still one line, never a traceback.
        return _fail(args, "", exc, 1, f"the input is too large to handle: "
                                       f"{type(exc).__name__}: {exc}")
    except KeyboardInterrupt:
        print(f"fusionspec {args.command}: interrupted", file=sys.stderr)
        return 130
    return code


def _fail(args: argparse.Namespace, label: str, exc: BaseException, code: int,
          message: str | None = None) -> int:
    """Report `exc` in one line (JSON with ``--json``) and return the exit `code`."""
    text = say(message if message is not None else str(exc))
    if getattr(args, "json", False):
        emit(args, "", {"ok": False, "error": type(exc).__name__, "message": text})
    else:
        prefix = f"fusionspec {args.command}: " + (f"{label}: " if label else "")
        print(prefix + text, file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
