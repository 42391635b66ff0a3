"""farm's ``LG_*`` variables and their defaults, the same in plain labgrid and under farm.

labgrid substitutes ``LG_*`` variables only in values tagged ``!template`` and refuses a file that
names an unset one (``unknown variable``), with no default syntax. So farm's env files name none of
them: they hold the default, and farm's drivers let the variable override it where it applies:

- ``LG_TFTP_ROOT``: the TFTP root of a *local* ``TFTPProvider`` (the twins'; not a remote one,
  whose root is the exporter's), served by the twin's QEMU user-mode network too.
- ``LG_QEMU_ACCEL``: the twin's QEMU accelerator (``tcg``; ``kvm`` to opt in).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..images.image import default_cache

#: farm's defaults: what a variable is when it is unset or empty
LG_DEFAULTS = {
    "LG_TFTP_ROOT": lambda: str(default_cache() / "tftp"),
    "LG_QEMU_ACCEL": lambda: "tcg",
}


def apply_lg_defaults() -> None:
    """Set every unset farm variable to its default (farm's commands; subprocesses inherit them)."""
    for key, default in LG_DEFAULTS.items():
        if not os.environ.get(key):
            os.environ[key] = default()
    Path(os.environ["LG_TFTP_ROOT"]).mkdir(parents=True, exist_ok=True)


def lg_value(name: str) -> str:
    """The variable's value, else farm's default."""
    return os.environ.get(name) or LG_DEFAULTS[name]()


def local_tftp_root(configured: str) -> str:
    """A local TFTPProvider's root: ``$LG_TFTP_ROOT`` when set, else the env file's (``~`` expanded)."""
    return os.environ.get("LG_TFTP_ROOT") or os.path.expanduser(configured)
