"""The echo check of typed bootloader commands: what counts as the same line."""

from __future__ import annotations

import re

from farm.boot.typing import echo_pattern

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
