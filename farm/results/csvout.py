"""results.csv: one :class:`~farm.results.record.Record` per row, header exactly ``RECORD_FIELDS``.

Plain CSV so that a spreadsheet, pandas or ``grep`` can read results without farm. Lines end in
``\\n``; floats are written with ``repr`` so they read back bit for bit.
"""

from __future__ import annotations

import csv
import errno
import io
import os
from pathlib import Path
from typing import IO, Iterable

from farm.errors import JobError, ParseError
from farm.results.record import RECORD_FIELDS, Record, write_text_atomic

PathLike = str | os.PathLike[str]


#: what makes a spreadsheet read a cell as a formula (``=HYPERLINK(…)``, ``@SUM(…)``, ``+cmd|…``, ``-2+3``)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


def spreadsheet_safe(cell: object) -> str:
    """A CSV cell meant for people's spreadsheets (compare.csv, qualify.csv) that no spreadsheet takes
    for a formula: text starting with ``= + - @`` or a tab, CR or LF gets a leading ``'`` (the mark
    spreadsheets show as "text"); a number, ``-1.5`` too, stays as it is. results.csv is not written
    through this: it is read back bit for bit, and its names are checked when they are made."""
    text = "" if cell is None else str(cell)
    if not text.startswith(_FORMULA_START):
        return text
    try:
        float(text)
        return text
    except ValueError:
        return "'" + text


def _writer(f: IO[str]) -> csv.DictWriter:
    return csv.DictWriter(f, fieldnames=RECORD_FIELDS, lineterminator="\n")


def write_records(path: PathLike, records: Iterable[Record]) -> None:
    """Write a complete results file, replacing ``path`` atomically (never a half-written file)."""
    buf = io.StringIO()
    writer = _writer(buf)
    writer.writeheader()
    writer.writerows(r.as_row() for r in records)
    write_text_atomic(path, buf.getvalue())


def append_records(path: PathLike, records: Iterable[Record]) -> None:
    """Append rows to ``path`` (header first if the file is new or empty), then flush and fsync.

    Called after every benchmark so that what was measured is on disk if the run dies later
    (board hang, power cut, Ctrl-C). Rows written before ``records`` raises are kept too. An
    existing file with another header raises ParseError rather than mixing up columns. A symlink
    at ``path`` is not followed (a JobError): farm appends only to a file of the run's own.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise JobError(f"{path}: is a symbolic link; farm appends only to a file of its own") from None
        raise
    with open(fd, "a+", encoding="utf-8", newline="") as f:
        f.seek(0)
        first = f.readline()
        writer = _writer(f)
        if not first:
            writer.writeheader()
        else:
            _check_header(path, next(csv.reader([first])))
        try:
            for record in records:
                writer.writerow(record.as_row())
        finally:
            f.flush()
            os.fsync(f.fileno())


def read_records(path: PathLike) -> list[Record]:
    """All records of a results file; a bad row raises ParseError naming the file and line."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.reader(f)
            _check_header(path, next(reader, None))
            return [_record(path, reader.line_num, row) for row in reader if row]
    except UnicodeDecodeError as e:
        raise ParseError(f"{path}: not UTF-8 text ({e})") from None
    except csv.Error as e:
        raise ParseError(f"{path} line {reader.line_num}: {e}") from None


def _check_header(path: Path, header: list[str] | None) -> None:
    if header is None:
        raise ParseError(f"{path} line 1: empty file, expected the header {','.join(RECORD_FIELDS)}")
    if tuple(header) != RECORD_FIELDS:
        raise ParseError(f"{path} line 1: header {','.join(header)!r} is not "
                         f"{','.join(RECORD_FIELDS)!r}")


def _record(path: Path, line: int, row: list[str]) -> Record:
    if len(row) != len(RECORD_FIELDS):
        raise ParseError(f"{path} line {line}: {len(row)} fields, expected {len(RECORD_FIELDS)}")
    try:
        return Record.from_row(dict(zip(RECORD_FIELDS, row)))
    except ValueError as e:
        raise ParseError(f"{path} line {line}: {e}") from None
