"""``hyperframes COMMAND ...``: parse, run the command's handler, turn errors into exit statuses.

Argument parsing and printing only; every command calls a library function (``_commands``).

Exit statuses: 0 done; 1 a fatal error (printed as ``hyperframes COMMAND: error: ...``, the
parameter it names said as the option given: ``_flags``); 2 done with listed failures (build);
130/143 stopped by Ctrl-C/SIGTERM; 141 the reader of the output went away (``hyperframes info
--json | head``), which ends the command quietly.
"""

from __future__ import annotations

import os
import sys

from .._core._errors import HyperframesError, Interrupted
from .._core._signals import exit_status_for_interrupt
from .._core._sizes import DEFAULT_MAX_PIXELS
from .._core._text import printable
from ._commands import EXIT_FAILURES, EXIT_FATAL, EXIT_OK
from ._flags import as_option
from ._parser import build_parser

__all__ = ["DEFAULT_MAX_PIXELS", "EXIT_FAILURES", "EXIT_FATAL", "EXIT_OK", "main"]

EXIT_CLOSED_PIPE = 128 + 13  # as a process killed by SIGPIPE


def main(argv: list[str] | None = None) -> int:
    """Run one command line (``sys.argv[1:]`` when ``argv`` is None); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _run(argv)
    except BrokenPipeError:
        return _closed_pipe()


def _run(argv: list[str]) -> int:
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit:  # --help, --version or a usage error: printed, flush it here
        sys.stdout.flush()
        raise
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except Interrupted as e:
        print(f"hyperframes {args.command}: {e}", file=sys.stderr)
        return exit_status_for_interrupt()
    except HyperframesError as e:
        said = as_option(str(e), parser, args.command, argv)
        # a name in the message may hold an ESC: written as an escape (its lines kept)
        print(f"hyperframes {args.command}: error: {printable(said)}", file=sys.stderr)
        return EXIT_FATAL
    except KeyboardInterrupt:
        print(f"hyperframes {args.command}: interrupted", file=sys.stderr)
        return 130


def _closed_pipe() -> int:
    """The reader of stdout has gone: say nothing more, and keep Python from complaining when it
    flushes stdout at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a real file (captured in a test)
        pass
    return EXIT_CLOSED_PIPE
