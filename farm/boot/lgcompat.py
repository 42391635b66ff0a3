"""The one place farm reaches into labgrid's private state, each with a test that fails when labgrid
changes it (tests/unit/test_lgcompat.py). Everything else goes through labgrid's public API or a
subclass farm owns (FarmShellDriver, FarmUBootDriver, the netboot strategies)."""

from __future__ import annotations


def drop_console_input(console) -> None:
    """Forget what a console driver read but no expect consumed yet (labgrid's ConsoleExpectMixin keeps
    it in its pexpect spawn, ``_expect``): after a failed boot attempt, a stale bootloader prompt there
    would be taken for the next attempt's. A console without the spawn has nothing kept.

    pexpect (4.8+) keeps unmatched input twice, in ``buffer`` and in ``_before``, and its next expect
    restores the first from the second: setting ``buffer`` alone (what farm did before) dropped nothing."""
    expect = getattr(console, "_expect", None)
    if expect is None:
        return
    expect.buffer = b""
    if hasattr(expect, "_before"):
        expect._before = expect.buffer_type()

def unread_console_input(console) -> bytes:
    """What a console driver read but no expect consumed yet (for an error's excerpt of the console)."""
    expect = getattr(console, "_expect", None)
    return bytes(getattr(expect, "buffer", b"") or b"") if expect is not None else b""


# Subclasses farm owns use their labgrid parent's internals, each covered by a test that boots a twin:
#   TwinQEMUDriver (farm.boot.qemu)        QEMUDriver's ``_child`` and ``_clientsocket``   tests/boot/test_twin_boot.py
#   FarmShellDriver (farm.boot.shell)      ShellDriver's ``_check_prompt``, ``_inject_run``   tests/boot/test_twin_boot.py, tests/guest
#   FarmUBootDriver (farm.boot.ubootdriver) UBootDriver's ``_run`` and ``_status``         tests/boot/test_twin_boot.py
