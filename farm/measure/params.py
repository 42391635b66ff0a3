"""A measurement's parameters as text (``key=value;key=value``), as records and results.csv carry them."""

from __future__ import annotations

from typing import Any, Mapping


def format_params(params: Mapping[str, Any]) -> str:
    """Canonical, order-independent text of a parameter set: ``key=value;key=value`` sorted by key."""
    return ";".join(f"{k}={params[k]}" for k in sorted(params))


def parse_params(text: str) -> dict[str, str]:
    """Inverse of :func:`format_params` (values come back as strings)."""
    if not text:
        return {}
    return dict(item.split("=", 1) for item in text.split(";"))
