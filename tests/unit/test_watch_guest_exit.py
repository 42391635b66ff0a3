"""A guest's QEMU that exits under a running command is a fatal console line: the shell driver fails the
command at once (an infrastructure error), instead of waiting out the command's timeout."""

from __future__ import annotations

import re

from farm.boot.watch import LINUX_FATAL
from farm.errors import InfrastructureError
from farm.guest.command import start_line


def _fatal(text: bytes):
    return [f for f in LINUX_FATAL if re.search(f.pattern.encode(), text)]


def test_qemu_exit_line_is_fatal_but_its_typed_echo_is_not():
    (fatal,) = _fatal(b"qemu-system-aarch64: terminating on signal 9\r\nFARM-QEMU-EXIT=137\r\n")
    assert fatal.kind is InfrastructureError and "QEMU" in fatal.what
    echo = start_line(["qemu-system-aarch64", "-M", "virt"], None, 1).encode()
    assert b"FARM-QEMU-EXIT=" in echo and not _fatal(echo)
