"""A virtual board's power switch, driven through QMP; pdudaemon's ``localcmdline`` PDU runs this.

    python -m farm.virtual.power {on,off,cycle} QMP_SOCKET

The board's QEMU was started paused (``-S``). *off* stops the CPUs and resets the machine, so the
next *on* (``cont``) starts from the firmware again, as after a real power cut. The serial socket is
QEMU's and stays open all along: a console attached before power-on sees U-Boot's first line.
"""

from __future__ import annotations

import sys

from .qmp import QMPError, qmp_execute

COMMANDS = {
    "on": ("cont",),
    "off": ("stop", "system_reset"),
    "cycle": ("stop", "system_reset", "cont"),
}


def switch(socket_path: str, action: str) -> None:
    if action not in COMMANDS:
        raise ValueError(f"unknown power action {action!r} (known: {', '.join(COMMANDS)})")
    qmp_execute(socket_path, *COMMANDS[action])


def is_on(socket_path: str) -> bool:
    (status,) = qmp_execute(socket_path, "query-status")
    return bool(status.get("running"))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in COMMANDS:
        print(f"usage: python -m farm.virtual.power {{{','.join(COMMANDS)}}} QMP_SOCKET", file=sys.stderr)
        return 2
    try:
        switch(args[1], args[0])
    except QMPError as exc:
        print(f"farm.virtual.power: {args[0]}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
