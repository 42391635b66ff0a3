"""Typing a command line into a bootloader and checking its echo before pressing Enter.

Serial consoles drop characters: a USB-UART under load, ser2net with a full buffer, or the twin's
serial socket when the host is busy (seen here: an iPXE ``chain`` URL arrived with one letter
missing). A bootloader echoes every character it receives, so farm types the line without its
newline, waits for the exact echo, and only then sends Enter. When the echo differs, the line is
erased with Ctrl-U (U-Boot's ``cread_line`` and iPXE's line editor both erase the line on it) and
typed again. The mangled echo and the retyped line both stay in the console log.

labgrid and LAVA users slow typing down instead (labgrid's ``txdelay`` on the console driver, LAVA's
``character_delay``); farm keeps ``txdelay`` as the env file's setting and adds the check on top.
"""

from __future__ import annotations

import re

from pexpect import TIMEOUT

from ..errors import InfrastructureError

ERASE_LINE = b"\x15"  # Ctrl-U
# what a console may put between two echoed characters without changing them: cursor and colour escape
# sequences (iPXE's line editor redraws with them) and a line break where a terminal wraps at 80 columns
_BETWEEN = r"(?:\x1b\[[0-9;?]*[A-Za-z]|\r|\n)*"


def echo_pattern(line: str) -> str:
    """A regular expression matching the echo of ``line``, every character of it, in order."""
    return _BETWEEN.join(re.escape(ch) for ch in line)


def type_checked(console, line: str, *, echo_timeout: float = 5.0, attempts: int = 3) -> int:
    """Type ``line`` and Enter on ``console`` (a labgrid ConsoleProtocol driver), retyping until the
    echo is exact. Returns how many times the line had to be retyped (0: the first was intact)."""
    echo = echo_pattern(line)
    for attempt in range(attempts):
        console.write(line.encode())
        try:
            console.expect(echo, timeout=echo_timeout)
        except TIMEOUT:
            console.write(ERASE_LINE)
            continue
        console.write(b"\n")
        return attempt
    raise InfrastructureError(
        f"the console never echoed the typed line intact in {attempts} tries (characters lost on the serial "
        f"line?): {line[:80]!r}; a larger txdelay on the env file's console driver slows typing down")
