"""The farm sub-commands, one module per group of verbs. Each module has ``register(subparsers)``,
which adds its verbs with their help and sets ``func`` to a small function that calls into farm's
modules and returns an exit code. No logic lives here beyond turning arguments into calls."""

from __future__ import annotations

import argparse

#: how every command that talks to the coordinator finds it (farm.coordinator.coordinator_address)
COORDINATOR_DEFAULT = "default $LG_COORDINATOR, else 127.0.0.1:20408"


def add_coordinator(parser: argparse.ArgumentParser, what: str = "", default: str = COORDINATOR_DEFAULT) -> None:
    """The ``--coordinator HOST:PORT`` option, one definition for every command that has it; ``what``
    says what the command asks it for, ``default`` where it is found when not given."""
    parser.add_argument("--coordinator", metavar="HOST:PORT",
                        help=f"the labgrid coordinator{' ' + what if what else ''} ({default})")
