"""Console lines that end a boot or a run at once, instead of at a timeout.

Each pattern says what kind of failure it is. A pattern matches as soon as the start of its line is
on the console; the failure then waits for the rest of that line (at most :data:`LINE_TIMEOUT`
seconds, for a board that stops mid-line), so that its message is the whole line, not the part of it
that had arrived ("Kernel panic - not syncing: VFS: Unabl").

Each pattern says what kind of failure it is. A board's bootloader failing (TFTP, a reset) is the
lab's problem (infrastructure: retried with a power cycle); a kernel that panics is the image's
(a test failure: retrying the same image cannot help, and the board is not to blame).
"""

from __future__ import annotations

import re

import attrs

from ..errors import FarmError, InfrastructureError, TestFailure


class BootFailure(TestFailure):
    """The image under test did not boot (kernel panic, init died): not the lab's fault, not retried."""


@attrs.frozen
class Fatal:
    pattern: str  # a regex on the console bytes (pexpect)
    what: str
    kind: type[FarmError]


KERNEL_PANIC = Fatal(r"Kernel panic - not syncing[^\r\n]*", "kernel panic", BootFailure)
#: after the bootloader handed over to Linux (and during benchmarks)
LINUX_FATAL = (
    KERNEL_PANIC,
    Fatal(r"Attempted to kill init[^\r\n]*", "init died", BootFailure),
    Fatal(r"U-Boot 20\d\d\.[^\r\n]*", "the board reset (U-Boot banner seen again)", InfrastructureError),
    Fatal(r"iPXE \d+\.\d+[^\r\n]* -- Open Source Network Boot Firmware", "the board reset (iPXE banner seen again)",
          InfrastructureError),
    # a guest setup's QEMU ended under a command in the guest (farm.guest.command's start line prints it;
    # its typed echo says "=$s", never digits): the command fails at once, not at its timeout
    Fatal(r"FARM-QEMU-EXIT=\d+", "the guest's QEMU exited", InfrastructureError),
)
#: while U-Boot works (tftpboot, booti)
UBOOT_FATAL = (
    Fatal(r"Retry count exceeded[^\r\n]*", "TFTP gave up", InfrastructureError),
    Fatal(r"TFTP error: [^\r\n]*", "TFTP error", InfrastructureError),
    Fatal(r"Resetting CPU[^\r\n]*", "the board reset", InfrastructureError),
    Fatal(r"### ERROR ### Please RESET the board ###", "U-Boot hung", InfrastructureError),
    Fatal(r"Bad Linux ARM64 Image magic![^\r\n]*", "not an arm64 kernel", BootFailure),
    Fatal(r"Wrong Ramdisk Image Format[^\r\n]*", "not an initrd", BootFailure),
    KERNEL_PANIC,
)


def excerpt(before: bytes | str, match: bytes | str, lines: int = 12) -> str:
    """The console lines leading to a fatal line, and the line itself (with what came before the
    match on its line, e.g. the kernel's timestamp: the line as the console log has it), printable."""
    text = (before.decode("utf-8", "replace") if isinstance(before, bytes) else before)
    hit = (match.decode("utf-8", "replace") if isinstance(match, bytes) else match)
    tail = [line.rstrip() for line in (text + hit.rstrip("\r\n")).replace("\r", "").split("\n")][-(lines + 1):]
    return "\n".join(tail).strip("\n")


#: seconds a fatal line's end is waited for before it is reported as far as it came
LINE_TIMEOUT = 2.0


def rest_of_line(console, timeout: float = LINE_TIMEOUT) -> bytes:
    """What ``console`` (a labgrid console driver) gives up to the end of the current line, or
    within ``timeout`` seconds when no end of line comes (a board that stopped printing mid-line);
    what was read stays in the console log either way."""
    from pexpect import TIMEOUT

    try:
        _, before, _, _ = console.expect([r"[\r\n]"], timeout=timeout)
    except TIMEOUT:
        return _unread(console)
    except Exception:  # noqa: BLE001 - the console closed under it (the board is gone): what there is
        return _unread(console)
    return before if isinstance(before, bytes) else str(before).encode()


def _unread(console) -> bytes:
    from ..lgcompat import unread_console_input

    try:
        return unread_console_input(console)
    except Exception:  # noqa: BLE001 - a console without labgrid's expect buffer
        return b""


def raise_fatal(fatal: Fatal, where: str, before, match, console=None) -> None:
    """Raise ``fatal``'s failure class for the console line ``match`` found; with ``console``, the
    line is read to its end first (:func:`rest_of_line`), so the message holds the whole line."""
    text = match.group(0) if hasattr(match, "group") else match
    if console is not None:
        rest = rest_of_line(console)
        text = text + (rest if isinstance(text, bytes) else rest.decode("utf-8", "replace"))
    line = (text.decode("utf-8", "replace") if isinstance(text, bytes) else text).strip()
    raise fatal.kind(f"{where}: {fatal.what}: {line}\n--- console ---\n{excerpt(before, text)}")
