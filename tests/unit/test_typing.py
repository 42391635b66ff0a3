"""The echo check of typed bootloader commands: what counts as the same line, and when a line is typed
again (through labgrid's own console expect, on a console that echoes like a slow serial line)."""

from __future__ import annotations

import math
import re
import time
from collections import deque
from typing import Callable

import attr
import pytest
from labgrid import Target
from labgrid.driver.common import Driver
from labgrid.driver.consoleexpectmixin import ConsoleExpectMixin
from labgrid.protocol import ConsoleProtocol
from pexpect import TIMEOUT

from farm.boot.typing import echo_pattern, type_checked
from farm.errors import InfrastructureError

LINE = "chain tftp://${next-server}/root/t-x86-lossy/boot.ipxe"


def _found(echo: str) -> bool:
    return re.search(echo_pattern(LINE).encode(), echo.encode()) is not None


def test_the_exact_echo_matches_with_what_came_before_it():
    assert _found("iPXE> " + LINE)


def test_escape_sequences_and_a_wrapped_line_between_characters_still_match():
    """iPXE's editor redraws with cursor sequences; a serial terminal wraps long lines with CR LF."""
    assert _found("iPXE> chain tftp://\x1b[K${next-ser\r\nver}/root/t-x86-lo\x1b[0mssy/boot.ipxe")


def test_a_lost_character_does_not_match():
    assert not _found("iPXE> " + LINE.replace("lossy", "ossy"))
    assert not _found("iPXE> " + LINE[:-1])


def test_a_changed_or_doubled_character_does_not_match():
    assert not _found(LINE.replace("lossy", "loszy"))
    assert not _found(LINE.replace("lossy", "losssy"))


@attr.s(eq=False)
class EchoConsole(ConsoleExpectMixin, Driver, ConsoleProtocol):
    """A bootloader's line editor on a slow serial line: every byte written comes back ``delay`` seconds
    after the one before it; ``lose(n)`` drops the n-th byte written (counting from 0); ``keys``: at most
    that many bytes wait for their echo, more are dropped (SeaBIOS' keyboard buffer under iPXE);
    ``extra``: bytes echoed after the n-th byte's echo; Ctrl-U comes back as a redraw (CR and an
    erase-line sequence, as a terminal would see it)."""

    delay: float = attr.ib(default=0.0)
    lose: Callable[[int], bool] = attr.ib(default=lambda n: False)
    keys: int = attr.ib(default=0)
    extra: dict = attr.ib(factory=dict)

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self.txdelay = None
        self.pending: deque[tuple[float, bytes]] = deque()
        self.written = 0
        self.sent = b""

    def _write(self, data: bytes) -> int:
        due = max(time.monotonic(), self.pending[-1][0] if self.pending else 0.0)
        for byte in data:
            self.written += 1
            self.sent += bytes([byte])
            if self.lose(self.written - 1) or (self.keys and len(self.pending) >= self.keys):
                continue
            due += self.delay
            self.pending.append((due, b"\r\x1b[K" if byte == 0x15 else bytes([byte])))
            if self.written - 1 in self.extra:
                self.pending.append((due, self.extra[self.written - 1]))
        return len(data)

    def _read(self, size=1, timeout=0.0, max_size=None):
        """As a serial driver reads: the next byte once it has come, waiting up to ``timeout`` for it."""
        wait = self.pending[0][0] - time.monotonic() if self.pending else math.inf
        if wait > timeout:
            time.sleep(timeout)
            raise TIMEOUT("nothing within the timeout")
        time.sleep(max(0.0, wait))
        return self.pending.popleft()[1]


def _console(**kwargs) -> EchoConsole:
    target = Target("t")
    console = EchoConsole(target, "console", **kwargs)
    target.activate(console)
    return console


def test_an_echo_slower_than_the_echo_timeout_is_waited_for_not_retyped():
    """A loaded host echoes the line slowly (here 2.7 s for 54 characters against a 1 s echo timeout):
    the console is still sending, so the line is not mangled yet and is typed once."""
    console = _console(delay=0.05)
    started = time.monotonic()
    assert type_checked(console, LINE, echo_timeout=1.0) == 0
    assert console.sent == LINE.encode() + b"\n"
    assert time.monotonic() - started < 5


def test_a_lost_character_is_erased_and_the_line_typed_again_after_the_console_went_quiet():
    console = _console(delay=0.001, lose=lambda n: n == 3)
    started = time.monotonic()
    assert type_checked(console, LINE, echo_timeout=0.5) == 1
    assert console.sent == LINE.encode() + b"\x15" + LINE.encode() + b"\n"
    assert 0.5 <= time.monotonic() - started < 3


def test_a_line_lost_every_time_names_what_the_console_echoed_last():
    console = _console(lose=lambda n: LINE.encode()[n % (len(LINE) + 1):].startswith(b"lossy"))
    with pytest.raises(InfrastructureError) as error:
        type_checked(console, LINE, echo_timeout=0.3)
    assert f"typed {LINE!r}, the last try echoed {LINE.replace('lossy', 'ossy')!r}" in str(error.value)
    assert console.sent == (LINE.encode() + b"\x15") * 3


def test_a_console_that_echoes_nothing_says_so():
    console = _console(lose=lambda n: True)
    with pytest.raises(InfrastructureError, match="the last try echoed nothing"):
        type_checked(console, LINE, echo_timeout=0.2, attempts=2)


def test_a_console_that_never_goes_quiet_gives_up_after_the_longest_wait():
    """Noise that never stops (a console at the wrong baud rate) does not hold the boot forever."""
    console = _console(delay=0.01)
    console.write(b"\xff" * 1000)
    started = time.monotonic()
    with pytest.raises(InfrastructureError):
        type_checked(console, LINE, echo_timeout=0.5, attempts=1, longest_wait=1.0)
    assert time.monotonic() - started < 2


def test_a_burst_larger_than_the_key_buffer_is_typed_a_chunk_at_a_time():
    """iPXE behind SeaBIOS' sercon keeps 15 keys: the whole line at once loses its middle on every try
    (CI's x86 twin under load: ``${next-server}`` echoed as ``${-server}``); 8 keys at a time, each
    chunk after the last one's echo, never has more than 8 in flight."""
    whole = _console(delay=0.002, keys=15)
    with pytest.raises(InfrastructureError, match=r"the last try echoed 'chain tftp://\$'; "):
        type_checked(whole, LINE, echo_timeout=0.2)
    chunked = _console(delay=0.002, keys=15)
    assert type_checked(chunked, LINE, echo_timeout=0.2, chunk=8) == 0
    assert chunked.sent == LINE.encode() + b"\n"


def test_a_chunk_lost_is_erased_and_the_whole_line_typed_again():
    console = _console(delay=0.001, lose=lambda n: n == 20)
    assert type_checked(console, LINE, echo_timeout=0.3, chunk=8) == 1
    assert console.sent == LINE.encode()[:24] + b"\x15" + LINE.encode() + b"\n"


def test_chunks_must_echo_back_to_back():
    """Something between two chunks' echoes (a key the console made up) is a line that differs."""
    console = _console(delay=0.001, extra={7: b"x"})
    assert type_checked(console, LINE, echo_timeout=0.3, chunk=8) == 1
    console = _console(delay=0.001, extra={7: b"\x1b[K\r\n"})  # a redraw or a wrapped line is not
    assert type_checked(console, LINE, echo_timeout=0.3, chunk=8) == 0


def test_the_last_try_s_echo_is_named_across_its_chunks():
    console = _console(lose=lambda n: console.sent.endswith(b"t-x86-l"))  # every try's 'l' of "lossy"
    with pytest.raises(InfrastructureError) as error:
        type_checked(console, LINE, echo_timeout=0.2, chunk=8)
    assert f"the last try echoed {LINE[:LINE.index('lossy')]!r}" in str(error.value)


def test_a_negative_chunk_is_refused():
    with pytest.raises(ValueError, match="chunk"):
        type_checked(_console(), LINE, chunk=-1)
