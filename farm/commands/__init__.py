"""The farm sub-commands, one module per group of verbs. Each module has ``register(subparsers)``,
which adds its verbs with their help and sets ``func`` to a small function that calls into farm's
modules and returns an exit code. No logic lives here beyond turning arguments into calls."""

from __future__ import annotations

import argparse
from typing import Callable

#: how every command that talks to the coordinator finds it (farm.coordinator.coordinator_address)
COORDINATOR_DEFAULT = "default $LG_COORDINATOR, else 127.0.0.1:20408"


def add_coordinator(parser: argparse.ArgumentParser, what: str = "", default: str = COORDINATOR_DEFAULT) -> None:
    """The ``--coordinator HOST:PORT`` option, one definition for every command that has it; ``what``
    says what the command asks it for, ``default`` where it is found when not given."""
    parser.add_argument("--coordinator", metavar="HOST:PORT",
                        help=f"the labgrid coordinator{' ' + what if what else ''} ({default})")


class CommandParser(argparse.ArgumentParser):
    """A command's parser (every sub-command's: farm.cli) whose arguments from plugins are added when it is
    first used (its command line parsed, its help or usage printed, completion walking it), not when
    farm's parser is built: ``farm --help`` and the other commands load no plugin (farm.plugins)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._deferred: list[Callable[[argparse.ArgumentParser], None]] = []

    def defer(self, add: Callable[[argparse.ArgumentParser], None]) -> None:
        """Call ``add(self)`` (it adds arguments, sets the description) once the parser is used."""
        self._deferred.append(add)

    def complete(self) -> "CommandParser":
        """Add what was deferred (once)."""
        while self._deferred:
            self._deferred.pop(0)(self)
        return self

    def parse_known_args(self, args=None, namespace=None):
        return super(CommandParser, self.complete()).parse_known_args(args, namespace)

    def format_help(self) -> str:
        return super(CommandParser, self.complete()).format_help()

    def format_usage(self) -> str:
        return super(CommandParser, self.complete()).format_usage()
