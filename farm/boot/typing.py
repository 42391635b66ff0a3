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

A firmware that takes keys through a small buffer loses a burst: iPXE as a PC's option ROM reads the
serial line through SeaBIOS' sercon, which queues keys in the BIOS keyboard buffer (15 keys) and drops
what does not fit while iPXE is busy echoing (seen on the x86 twin under load: ``${next-server}``
arrived as ``${-server}``, on every retry). ``chunk`` types such a line a few characters at a time,
each piece only once the one before it has echoed, so no more than ``chunk`` keys are ever in flight.
Each piece's echo must follow the last one's directly (only a terminal's escape sequences and line
breaks between), so the pieces' echoes together are the exact echo of the line.

labgrid and LAVA users slow typing down instead (labgrid's ``txdelay`` on the console driver, LAVA's
``character_delay``); farm keeps ``txdelay`` as the env file's setting and adds the check on top.
"""

from __future__ import annotations

import re
import time

from pexpect import TIMEOUT

from ..errors import InfrastructureError
from ..lgcompat import drop_console_input, unread_console_input
from .console_text import clean

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
                 longest_wait: float = 60.0, chunk: int = 0) -> int:
    """Type ``line`` and Enter on ``console`` (a labgrid ConsoleProtocol driver), retyping until the
    echo is exact; ``chunk`` > 0: at most that many characters in flight (see the module's text).
    Returns how many times the line had to be retyped (0: the first was intact)."""
    if chunk < 0:
        raise ValueError(f"chunk must be 0 (the whole line at once) or more, not {chunk}")
    pieces = [line[i:i + chunk] for i in range(0, len(line), chunk)] if chunk and line else [line]
    echoed = b""
    for attempt in range(attempts):
        echoed = b""
        start = len(unread_console_input(console))
        for n, piece in enumerate(pieces):
            console.write(piece.encode())
            # the line's first piece anywhere after what came before it; the others right after the last
            came = _echoed(console, echo_pattern(piece) if n == 0 else rf"\A{_BETWEEN}{echo_pattern(piece)}",
                           echo_timeout, longest_wait)
            if came is None:
                echoed += unread_console_input(console)[start if n == 0 else 0:]
                break
            echoed += came[start:] if n == 0 else came
        else:
            console.write(b"\n")
            return attempt
        # what this try echoed must not match the next try's first piece (it stays in the console log)
        drop_console_input(console)
        console.write(ERASE_LINE)
    last = shown_echo(echoed)
    seen = f"the last try echoed {last[-100:]!r}" if last else "the last try echoed nothing"
    raise InfrastructureError(
        f"the console never echoed the typed line intact in {attempts} tries (characters lost on the serial "
        f"line?): typed {line[:80]!r}, {seen}; the bootloader driver's type_chunk (keys in flight) or a larger "
        "txdelay on the console driver slows typing down")


def _echoed(console, echo: str, quiet: float, longest: float) -> bytes | None:
    """The console's text up to and with ``echo`` once it came whole, waiting while the console still
    sends something: None once it has been quiet for ``quiet`` seconds (or after ``longest``) without it."""
    now = time.monotonic()
    give_up, quiet_since = now + longest, now
    received = len(unread_console_input(console))
    while True:
        try:
            _, before, _, after = console.expect(echo, timeout=max(0.0, min(_POLL, give_up - now)))
            return bytes(before or b"") + bytes(after or b"")
        except TIMEOUT:
            pass
        now = time.monotonic()
        if (grown := len(unread_console_input(console))) != received:
            received, quiet_since = grown, now
        if now - quiet_since >= quiet or now >= give_up:
            return None
