"""The ``farm`` command: builds the parser from the command modules and maps failures to exit codes."""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .errors import EXIT_INTERRUPTED, FarmError

#: command modules under farm.commands, in the order --help lists them
COMMAND_MODULES = ("images", "boot", "run", "analysis", "results")

EPILOG = """\
exit codes: 0 passed, 1 a benchmark failed (test), 2 bad input (job: recipe, env or pipeline file),
3 the lab failed (infrastructure: power, console, TFTP, bootloader), 130 interrupted.

examples:
  farm build images/maaxboard-bench.yaml
  farm boot --env env/qemu-maaxboard.yaml --image ~/.cache/farm/images/maaxboard-bench-<key> --console
  farm run pipelines/smoke.yaml
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="farm", description="Build images, netboot boards (or their QEMU twins) through labgrid, "
        "run benchmarks and publish JUnit XML + CSV.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"farm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(f"farm.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except FarmError as exc:
        lines = str(exc).splitlines() or [type(exc).__name__]
        print(f"farm: {exc.kind} error: {lines[0]}", file=sys.stderr)
        for line in lines[1:]:
            print(f"  {line}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("farm: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
