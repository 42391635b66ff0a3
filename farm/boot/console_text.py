"""Console text as a person reads it (pure): the one definition of what a terminal shows and a log
reader does not want, for the dashboard's console view and for errors that quote a console."""

from __future__ import annotations

import re

_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|[\x00-\x08\x0b-\x1f\x7f]")


def clean(text: str) -> str:
    """``text`` without terminal escape sequences and control characters (tabs and line feeds kept)."""
    return _ESCAPE.sub("", text)
