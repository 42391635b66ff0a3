"""The ``farm`` command: builds the parser from the command modules and maps failures to exit codes."""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .commands import CommandParser
from .errors import EXIT_INTERRUPTED, FarmError, Terminated
from .secrets import MaskingStream, mask, register_environment

#: command modules under farm.commands, in the order --help lists them
COMMAND_MODULES = ("images", "boot", "run", "archive", "analysis", "results", "places", "health", "lab", "db",
                   "history", "findings", "dashboard", "schema", "completion")
#: the module that registers each command: a command line builds only its command's parser (importing every
#: command module, the benchmark registry among them, is ~50 ms of each `farm boot`); tests check the table
COMMANDS = {"build": "images", "boot": "boot", "run": "run", "archive": "archive", "reproduce": "archive",
            "compare": "analysis", "import": "analysis",
            "report": "results", "qualify": "results", "baseline": "results", **dict.fromkeys(
                ("places", "reserve", "lock", "release", "who", "console", "janitor"), "places"),
            "health": "health", "lab": "lab", "db": "db", "history": "history", "changes": "findings",
            "diff": "findings", "dashboard": "dashboard",
            "serve": "dashboard", "schema": "schema", "completion": "completion"}

EPILOG = """\
exit codes: 0 passed, 1 a benchmark failed (test), 2 bad input (job: recipe, env or pipeline file),
3 the lab failed (infrastructure: power, console, TFTP, bootloader), 130 interrupted (Ctrl-C), 143 terminated
(SIGTERM), 129 hung up (SIGHUP). Interrupted or not, the board is powered off and what was measured is kept.

examples:
  farm build images/maaxboard-bench.yaml
  farm boot --env env/qemu-maaxboard.yaml --image ~/.cache/farm/images/maaxboard-bench-<key> --console
  farm run pipelines/smoke.yaml
  farm reproduce 20261129-224818-e762
"""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """farm's argument parser: every command, or (``command``) only the module that registers that one."""
    parser = argparse.ArgumentParser(
        prog="farm", description="Build images, netboot boards (or their QEMU twins) through labgrid, "
        "run benchmarks and publish JUnit XML + CSV.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"farm {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="labgrid's step log on stderr (-vv: and the serial console, -vvv: and debug)")
    # a command's arguments from plugins (farm import's kinds) are added when it is used (CommandParser.defer)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=CommandParser)
    for name in (COMMANDS[command],) if command in COMMANDS else COMMAND_MODULES:
        importlib.import_module(f"farm.commands.{name}").register(sub)
    return parser


def command_of(argv: list[str]) -> str | None:
    """The command a command line names: its first word that is not an option (farm's own options take no
    value), or None (``farm --help``)."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    from .signals import interrupts

    # every line any command prints is masked, not only the ones that remember to mask
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = MaskingStream(stdout), MaskingStream(stderr)
    try:
        try:  # a command's parser may load the plugins (farm import's kinds): a broken one is a job error
            args = build_parser(command_of(sys.argv[1:] if argv is None else argv)).parse_args(argv)
        except FarmError as exc:
            return _failed(exc)
        with interrupts():  # SIGTERM, SIGHUP: Terminated, unwound like Ctrl-C (the one place it is set up)
            return _run(args)
    finally:
        sys.stdout, sys.stderr = stdout, stderr


def _run(args: argparse.Namespace) -> int:
    try:
        register_environment()  # a FARM_SECRET_* too short to mask is refused, naming it
        from .steplog import step_log

        with step_log(getattr(args, "verbose", 0)):
            return args.func(args)
    except FarmError as exc:
        return _failed(exc)
    except OSError as exc:  # a path no module checked, a full disk: one line naming the file, not a traceback
        from .errors import os_error

        return _failed(os_error(exc))
    except KeyboardInterrupt as exc:
        print("farm: terminated" if isinstance(exc, Terminated) else "farm: interrupted", file=sys.stderr)
        return exc.exit_code if isinstance(exc, Terminated) else EXIT_INTERRUPTED


def _failed(exc: FarmError) -> int:
    """Say what failed (masked, its class: job, test, infrastructure) and return its exit code."""
    lines = mask(str(exc)).splitlines() or [type(exc).__name__]
    print(f"farm: {exc.kind} error: {lines[0]}", file=sys.stderr)
    for line in lines[1:]:
        print(f"  {line}", file=sys.stderr)
    return exc.exit_code


def command_line() -> int:
    """The ``farm`` program (its console script, ``python -m farm.cli``): :func:`main` in a process of its own,
    where labgrid's packages import only what the command uses (farm.lglazy). Not for a process that also
    uses labgrid by itself (a test calling :func:`main`): there labgrid stays as it loads."""
    from . import lglazy

    lglazy.install()
    return main()


if __name__ == "__main__":
    sys.exit(command_line())
