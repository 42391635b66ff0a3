"""junit.xml: one test case per benchmark (or boot step), for Jenkins / GitLab / LAVA-style CI views.

Callers map infrastructure problems to ``error`` and benchmark problems to ``failure``, so a CI
page tells "the lab broke" from "the board got slower". Board output is hostile text (ANSI colour,
NUL bytes, undecodable serial noise) and must never make the file unparseable: every string is
passed through :func:`xml_safe` first.
"""

from __future__ import annotations

import os
import re
from typing import Iterable, Literal

import attrs
import junit_xml

from farm.results.record import write_text_atomic

Kind = Literal["pass", "failure", "error", "skipped"]
KINDS: tuple[Kind, ...] = ("pass", "failure", "error", "skipped")


@attrs.define
class Case:
    """One ``<testcase>``; ``output`` is the tool or console output worth showing next to it."""

    name: str
    classname: str
    seconds: float
    kind: Kind = attrs.field(validator=attrs.validators.in_(KINDS))
    message: str = ""
    output: str = ""


# Code points XML 1.0 forbids (C0 controls but tab/LF/CR, surrogates, U+FFFE/U+FFFF), plus those
# junit_xml's own cleaner would silently delete from the finished document (DEL and C1 controls,
# noncharacters U+FDD0..U+FDDF and U+xFFFE/U+xFFFF of every plane): escaped, they stay visible.
# U+0085 (NEL) is legal but escaped with its C1 neighbours: it is serial noise, not text.
_UNSAFE_RANGES = [
    (0x00, 0x08), (0x0B, 0x0C), (0x0E, 0x1F), (0x7F, 0x9F),
    (0xD800, 0xDFFF), (0xFDD0, 0xFDDF), (0xFFFE, 0xFFFF),
    *((plane + 0xFFFE, plane + 0xFFFF) for plane in range(0x10000, 0x110000, 0x10000)),
]
_UNSAFE = re.compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in _UNSAFE_RANGES) + "]")
_NEWLINE = re.compile(r"\r\n?")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that surrogateescape could not decode: show the byte
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def xml_safe(text: str) -> str:
    """``text`` with every character XML 1.0 cannot carry replaced by a visible escape.

    ``"\\x1b[0m"`` becomes ``"\\\\x1b[0m"``, an undecodable byte 0xff (read with
    ``errors="surrogateescape"``) becomes ``"\\\\xff"``. CR LF and lone CR become LF: XML parsers
    normalise line ends anyway and junit_xml deletes CR. ``]]>`` needs nothing here: the
    serializer escapes ``>`` in text and attributes and writes no CDATA.
    """
    return _UNSAFE.sub(_escape, _NEWLINE.sub("\n", text))


def _test_case(case: Case) -> junit_xml.TestCase:
    tc = junit_xml.TestCase(xml_safe(case.name), classname=xml_safe(case.classname),
                            elapsed_sec=float(case.seconds))
    # junit_xml drops a failure/error that has neither message nor output (the case would
    # silently pass), so an empty message falls back to the kind.
    message, output = xml_safe(case.message) or case.kind, xml_safe(case.output) or None
    if case.kind == "failure":
        tc.add_failure_info(message=message, output=output)
    elif case.kind == "error":
        tc.add_error_info(message=message, output=output)
    elif case.kind == "skipped":
        tc.add_skipped_info(message=message, output=output)
    else:
        tc.stdout = output
    return tc


def write_junit(path: str | os.PathLike[str], suite_name: str, cases: Iterable[Case]) -> None:
    """Write ``cases`` as one ``<testsuite>`` to ``path``, atomically.

    Not pretty-printed: junit_xml pretty-prints through minidom, which writes newlines inside
    attributes raw, and a parser then turns them into spaces; compact output keeps them.
    """
    suite = junit_xml.TestSuite(xml_safe(suite_name), [_test_case(c) for c in cases])
    text = junit_xml.to_xml_report_string([suite], prettyprint=False, encoding="utf-8")
    write_text_atomic(path, text)
