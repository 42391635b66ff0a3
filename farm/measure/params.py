"""A measurement's parameters as text, as records, results.csv and the store carry them.

    format_params({"cpus": "0;1", "name": "größe 2"})  ->  "cpus=0%3B1;name=größe 2"
    parse_params("cpus=0%3B1;name=größe 2")             ->  {"cpus": "0;1", "name": "größe 2"}

``key=value`` pairs sorted by key and joined by ``;``: canonical (one text per parameter set) and
round-tripping any value. The characters that would make two texts of one set, or one of two
(``%``, ``;``, ``=``, and line breaks and other control characters, which CSV readers and HTML pages
mangle), are written ``%XX`` (their UTF-8 bytes in hex, as in a URL); everything else, spaces and
any other Unicode, stays as it is, so a text of plain values reads as it always did.

Texts written before values were escaped read back as they were meant: a ``%`` not followed by two
hex digits is itself, and a part without ``=`` belongs to the value before it (``cpus=0;1``, as
farm's pytest plugin wrote ``cpus="0;1"``, is ``{"cpus": "0;1"}``).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

#: what :func:`escape` writes as %XX
_SPECIAL = re.compile(r"[%;=\x00-\x1f\x7f]")
_ESCAPED = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def escape(text: str) -> str:
    """``text`` with ``%``, ``;``, ``=`` and control characters as ``%XX``."""
    return _SPECIAL.sub(lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode()), text)


def unescape(text: str) -> str:
    """The inverse of :func:`escape`; a ``%`` that starts no escape is kept as it is."""
    if "%" not in text:
        return text

    def decode(m: re.Match[str]) -> str:
        raw = bytes(int(m.group(0)[i + 1:i + 3], 16) for i in range(0, len(m.group(0)), 3))
        return raw.decode("utf-8", errors="surrogateescape") if _valid(raw) else m.group(0)
    return _ESCAPED.sub(decode, text)


def _valid(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def format_params(params: Mapping[str, Any]) -> str:
    """Canonical, order-independent text of a parameter set: ``key=value;key=value`` sorted by key,
    each key and value escaped (:func:`escape`)."""
    return ";".join(f"{escape(str(k))}={escape(str(params[k]))}" for k in sorted(params))


def parse_params(text: str) -> dict[str, str]:
    """Inverse of :func:`format_params` (values come back as strings); reads texts written before
    values were escaped too (see the module docstring)."""
    if not text:
        return {}
    out: dict[str, str] = {}
    last: str | None = None
    for item in text.split(";"):
        key, sep, value = item.partition("=")
        if not sep and last is not None:  # an unescaped ';' of an older text: part of the value before
            out[last] += ";" + unescape(item)
            continue
        last = unescape(key)
        out[last] = unescape(value)
    return out


def canonical(text: str) -> str:
    """The canonical text of ``text`` (an older unescaped one, or one of another order)."""
    return format_params(parse_params(text))
