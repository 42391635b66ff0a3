"""Typing a command line into a bootloader and checking its echo before pressing Enter.

Serial consoles drop characters: a USB-UART under load, ser2net with a full buffer, or the twin's
serial socket when the host is busy (seen here: an iPXE ``chain`` URL arrived with one letter
missing). A bootloader echoes every character it receives, so farm types the line without its
newline, waits for the exact echo, and only then sends Enter. When the echo differs, the line is
erased with Ctrl-U (U-Boot's ``cread_line`` and iPXE's line editor both erase the line on it) and
typed again. The mangled echo and the retyped line both stay in the console log.

A slow echo is not a mangled one: a loaded host or a slow UART may take longer than ``echo_timeout``
to echo a long line, so a line counts as mangled only once the console has been quiet for
``echo_timeout`` without its exact echo (or after ``longest_wait``, should the console never go quiet).

labgrid and LAVA users slow typing down instead (labgrid's ``txdelay`` on the console driver, LAVA's
``character_delay``); farm keeps ``txdelay`` as the env file's setting and adds the check on top.
"""

from __future__ import annotations

import re
import time

from pexpect import TIMEOUT

from ..errors import InfrastructureError
from .console_text import clean
from .lgcompat import unread_console_input

ERASE_LINE = b"\x15"  # Ctrl-U
# what a console may put between two echoed characters without changing them: cursor and colour escape
# sequences (iPXE's line editor redraws with them) and a line break where a terminal wraps at 80 columns
_BETWEEN = r"(?:\x1b\[[0-9;?]*[A-Za-z]|\r|\n)*"
# how often a wait for the echo looks whether the console is still sending
_POLL = 0.25


def echo_pattern(line: str) -> str:
    """A regular expression matching the echo of ``line``, every character of it, in order."""
    return _BETWEEN.join(re.escape(ch) for ch in line)


def shown_echo(raw: bytes) -> str:
    """What a console echoed, as a person reads it: escape sequences and control characters left out,
    and the line breaks of a terminal that wrapped it."""
    return clean(raw.decode("utf-8", errors="replace")).replace("\n", "").replace("\t", "")


def type_checked(console, line: str, *, echo_timeout: float = 5.0, attempts: int = 3,
                 longest_wait: float = 60.0) -> int:
    """Type ``line`` and Enter on ``console`` (a labgrid ConsoleProtocol driver), retyping until the
    echo is exact. Returns how many times the line had to be retyped (0: the first was intact)."""
    echo = echo_pattern(line)
    echoed = b""
    for attempt in range(attempts):
        start = len(unread_console_input(console))
        console.write(line.encode())
        if _echoed(console, echo, echo_timeout, longest_wait):
            console.write(b"\n")
            return attempt
        echoed = unread_console_input(console)[start:]
        console.write(ERASE_LINE)
    last = shown_echo(echoed)
    seen = f"the last try echoed {last[-100:]!r}" if last else "the last try echoed nothing"
    raise InfrastructureError(
        f"the console never echoed the typed line intact in {attempts} tries (characters lost on the serial "
        f"line?): typed {line[:80]!r}, {seen}; a larger txdelay on the env file's console driver slows "
        "typing down")


def _echoed(console, echo: str, quiet: float, longest: float) -> bool:
    """Whether ``echo`` came whole, waiting while the console still sends something: False once it has
    been quiet for ``quiet`` seconds (or after ``longest``) without it."""
    now = time.monotonic()
    give_up, quiet_since = now + longest, now
    received = len(unread_console_input(console))
    while True:
        try:
            console.expect(echo, timeout=max(0.0, min(_POLL, give_up - now)))
            return True
        except TIMEOUT:
            pass
        now = time.monotonic()
        if (grown := len(unread_console_input(console))) != received:
            received, quiet_since = grown, now
        if now - quiet_since >= quiet or now >= give_up:
            return False
