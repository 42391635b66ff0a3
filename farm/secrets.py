"""Values that must never appear in a log or a report: masked wherever farm writes text.

A value is secret when it is in an environment variable named ``FARM_SECRET_*`` (a CI variable, a
U-Boot password) or ``LG_SECRET_*`` (one an env file takes with ``!template "$LG_SECRET_…"``:
labgrid substitutes only ``LG_*`` variables), or tagged ``!secret`` in a pipeline (an env file is
read by labgrid too, which does not know farm's tag: farm refuses it there). Every file farm writes goes
through :func:`farm.results.record.write_text_atomic` (or, for the console log, :func:`mask_bytes`),
which masks it; every line the ``farm`` command prints goes through :class:`MaskingStream`.

A secret is masked in the forms a writer may have escaped it into: as is, JSON-escaped (run.json),
XML-escaped (junit.xml), HTML-escaped (``html.escape`` writes ``'`` as ``&#x27;``, the dashboard's
templates as ``&#39;`` and ``"`` as ``&#34;``: markupsafe's), URL-quoted (a link) and with CSV's doubled
quotes, so a ``"``, ``'``, ``&`` or space in it cannot let it through.

The password of the results store's URL (``FARM_DB=postgresql://user:PASSWORD@host/db``, or
``?password=``) is a secret too, when it is long enough to mask; the store's messages hide it in any
case (farm.store.db.redact).

**Too short to mask safely** (:func:`refusal`): a secret under :data:`MIN_LENGTH` (6) characters,
or one made only of digits and the characters of a number. Masking such a value would also mask
ordinary text and numbers (a 4-character password ``root`` in every shell prompt, ``1472`` in
every packet size, ``100000`` inside a measured ``1000000.0``), corrupting results.csv and the
console log, and not masking it leaks it; so it is refused (a :class:`~farm.errors.JobError`,
exit 2, naming the variable). 6 characters is also the shortest U-Boot/CI password that is not
trivially guessed from the masked log's context; longer real tokens are unaffected.
"""

from __future__ import annotations

import html
import json
import os
import re
import urllib.parse
from typing import Any, Mapping, TextIO

from .errors import JobError

MASK = "*****"
MIN_LENGTH = 6
ENV_PREFIX = "FARM_SECRET_"
#: the environment variables whose values are secrets (labgrid's env files can take only LG_* ones)
ENV_PREFIXES = (ENV_PREFIX, "LG_SECRET_")
DB_ENV = "FARM_DB"  # the results store's URL (farm.store.db)
_NUMBER_LIKE = re.compile(r"[0-9.,:eE+-]*")  # "123456", "1.5e+10", "10:00:01": would hit measured values
_secrets: set[str] = set()
_forms: list[str] = []  # every form of every secret, longest first


def xml_escape(text: str, quotes: bool = False) -> str:
    """``xml.sax.saxutils.escape`` (with ``quotes``: as given ``{'"': "&quot;", "'": "&apos;"}``), whose module
    imports urllib.request, http.client and email (~20 ms of every farm command)."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace('"', "&quot;").replace("'", "&apos;") if quotes else text


def markup_escape(text: str) -> str:
    """``text`` as markupsafe escapes it (the dashboard's jinja2 templates): ``html.escape``'s but ``'`` as
    ``&#39;`` and ``"`` as ``&#34;``. Written out: every farm command masks, and only the dashboard imports
    jinja2."""
    return html.escape(text, quote=True).replace("&#x27;", "&#39;").replace("&quot;", "&#34;")


def refusal(value: str) -> str | None:
    """Why ``value`` cannot be masked safely, or None (see the module docstring)."""
    if len(value) < MIN_LENGTH:
        return (f"is {len(value)} characters; a secret must have at least {MIN_LENGTH} to be masked "
                "without masking ordinary words and numbers")
    if _NUMBER_LIKE.fullmatch(value):
        return "is made only of digits and number characters; masking it would also mask measured values"
    return None


def register(value: Any, name: str = "a value tagged !secret") -> Any:
    """Mask ``value`` from now on; :class:`~farm.errors.JobError` naming ``name`` when it is too
    short to mask safely. An empty value has nothing to leak and is ignored."""
    if not isinstance(value, str) or not value or value in _secrets:
        return value
    if (why := refusal(value)) is not None:
        raise JobError(f"secret {name} {why}")
    _secrets.add(value)
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1],
             xml_escape(value, quotes=True), xml_escape(value), value.replace('"', '""'),
             html.escape(value, quote=True), html.escape(value, quote=False), markup_escape(value),
             urllib.parse.quote(value), urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)}
    _forms[:] = sorted(set(_forms) | forms, key=len, reverse=True)
    return value


def register_environment(environ: Mapping[str, str] = os.environ, *, strict: bool = True) -> None:
    """Register every ``FARM_SECRET_*`` and ``LG_SECRET_*`` variable. ``strict`` (the ``farm`` command): a value too
    short to mask is a JobError naming the variable; at import time (``strict=False``, for code that
    does not start through the command) such a value is skipped, the command refuses it later."""
    for key, value in sorted(environ.items()):
        if key.startswith(ENV_PREFIXES):
            try:
                register(value, f"${key}")
            except JobError:
                if strict:
                    raise
    for password in url_passwords(environ.get(DB_ENV) or ""):
        if refusal(password) is None:  # a short one is hidden by the store's messages only
            register(password, f"the password of ${DB_ENV}")


def url_passwords(url: str) -> list[str]:
    """The passwords a database URL carries: its user part's and ``?password=`` (unquoted)."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        found = [urllib.parse.unquote(parts.password)] if parts.password else []
        found += [v for k, v in urllib.parse.parse_qsl(parts.query) if "password" in k.lower()]
    except ValueError:
        return []
    return [p for p in found if p]


def mask(text: str) -> str:
    for form in _forms:
        text = text.replace(form, MASK)
    return text


def mask_bytes(data: bytes) -> bytes:
    for form in _forms:
        data = data.replace(form.encode(), MASK.encode())
    return data


class MaskingStream:
    """A text stream (stdout, stderr) whose ``write`` masks; everything else is the stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(mask(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


register_environment(strict=False)
