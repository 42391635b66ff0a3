"""Whether a value fits its column, decided by farm the same way for SQLite and PostgreSQL.

SQLite stores nearly anything in any column (a 5,000-character text in a ``VARCHAR(200)``, an
integer beyond 32 bits in an ``INTEGER``, a NUL character in a text) while PostgreSQL refuses them
(exit 3 ``value too long``, ``integer out of range``, ``invalid byte sequence``): a laptop's store
would keep a run a lab's refuses. So every row is checked against :mod:`farm.store.schema`'s column
types here, before either database sees it, and a value that does not fit is a
:class:`~farm.errors.JobError` naming the run directory, where the value came from and the column.

PostgreSQL also limits a b-tree index entry (2,704 bytes): the key columns of an index,
together, must fit it. :data:`INDEX_ENTRY_BYTES` is farm's bound on their UTF-8 bytes, checked for
``figures``' history index (whose entry holds the key of a measurement).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

import sqlalchemy as sa

INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)
#: farm's bound on the UTF-8 bytes of an index entry's text columns (PostgreSQL refuses entries over
#: 2704 bytes, length headers and the numbers included: tests/store check a key of 2,500 bytes of text
#: that does not compress fits)
INDEX_ENTRY_BYTES = 2500


def value_problem(column: sa.Column, value: Any) -> str | None:
    """Why ``value`` cannot be stored in ``column`` (in both databases alike), or None."""
    kind = column.type
    if value is None:
        return None if column.nullable else "missing (null)"
    if isinstance(kind, sa.Boolean):
        return None if isinstance(value, bool) else f"expected true/false, got {_shown(value)}"
    if isinstance(kind, sa.Integer):  # BigInteger is one too
        low, high = INT64 if isinstance(kind, sa.BigInteger) else INT32
        if isinstance(value, bool) or not isinstance(value, int):
            return f"expected a whole number, got {_shown(value)}"
        if not low <= value <= high:
            return f"{_shown(value)} is out of range (the store keeps {low} to {high})"
        return None
    if isinstance(kind, sa.Float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"expected a number, got {_shown(value)}"
        try:
            number = float(value)
        except OverflowError:
            return f"{_shown(value)} is out of range of a floating-point number"
        if math.isnan(number):
            return "NaN (only a record's value may be NaN)"
        return None
    if isinstance(kind, sa.String):  # Text is one too (no length)
        if not isinstance(value, str):
            return f"expected text, got {_shown(value)}"
        if "\x00" in value:
            return "holds a NUL character (PostgreSQL cannot store it)"
        if kind.length is not None and len(value) > kind.length:
            return f"{len(value)} characters, the store keeps at most {kind.length}"
        return None
    return None


def row_problems(table: sa.Table, row: Mapping[str, Any]) -> Iterable[str]:
    """``column: why`` for every value of ``row`` that does not fit ``table``."""
    for name, value in row.items():
        if name in table.c and (problem := value_problem(table.c[name], value)):
            yield f"{name}: {problem}"


def index_problem(columns: Iterable[str], row: Mapping[str, Any]) -> str | None:
    """Why ``row``'s text in the index ``columns`` would not fit one index entry, or None."""
    size = sum(len(row[c].encode("utf-8")) for c in columns if isinstance(row.get(c), str))
    if size > INDEX_ENTRY_BYTES:
        return (f"its key ({', '.join(columns)}) is {size} bytes of text, more than the {INDEX_ENTRY_BYTES} "
                "an index entry of the store holds")
    return None


def _shown(value: Any) -> str:
    try:
        text = repr(value)
    except ValueError:  # an integer of more digits than Python converts to text
        return "a number of thousands of digits"
    return text if len(text) <= 40 else text[:37] + "..."
