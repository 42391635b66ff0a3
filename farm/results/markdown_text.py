"""Text from runs (tool output, names, messages) made safe for Markdown: summary.md, qualify.md,
reproduction.md and the GitHub job summary show it literally, never as markup."""

from __future__ import annotations

import re
from typing import Any

_MD_ESCAPES = {"\\": "\\\\", "|": "\\|", "`": "\\`", "*": "\\*", "$": "\\$", "<": "\\<",
               "\r": " ", "\n": " "}
_MD_SPECIAL = re.compile("|".join(re.escape(c) for c in _MD_ESCAPES))


def md_escape(text: Any) -> str:
    """Text that stays literal in a Markdown table cell or list item, on GitHub too: no pipe or line
    break to end the cell, no emphasis, code, HTML or ``$…$`` maths made from tool output."""
    return _MD_SPECIAL.sub(lambda m: _MD_ESCAPES[m.group()], str(text))
