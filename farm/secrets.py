"""Values that must never appear in a log or a report: masked wherever farm writes text.

A value is secret when it is in an environment variable named ``FARM_SECRET_*`` (a CI variable, a
U-Boot password) or tagged ``!secret`` in a pipeline or env file. Every writer (console log, junit,
run.json, summary, progress lines, error messages) passes its text through :func:`mask`.
"""

from __future__ import annotations

import os

MASK = "*****"
_secrets: set[str] = set()
MIN_LENGTH = 4  # shorter values would mask ordinary words


def register(value: str) -> str:
    if isinstance(value, str) and len(value) >= MIN_LENGTH:
        _secrets.add(value)
    return value


def register_environment(environ=os.environ) -> None:
    for key, value in environ.items():
        if key.startswith("FARM_SECRET_"):
            register(value)


def mask(text: str) -> str:
    for secret in sorted(_secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def mask_bytes(data: bytes) -> bytes:
    for secret in sorted(_secrets, key=len, reverse=True):
        data = data.replace(secret.encode(), MASK.encode())
    return data


register_environment()
