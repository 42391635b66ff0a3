"""The run list: which runs a filter selects, a page of them, and the values to filter by.

A :class:`RunFilter` comes from a query string (``farm serve``: ``index.html?place=maaxboard-1&
status=failed&since=2026-12-01``) or from one facet of the static site (``runs/place/maaxboard-1/1.html``),
and becomes SQL conditions on ``runs`` that the store answers from its indexes at 10,000 runs
(``ix_runs_started``; ``ix_runs_place`` for a place). Every value is checked when it is read: a date
is ``YYYY-MM-DD``, a commit hexadecimal; names are matched exactly (a run's targets and setups are one
of its comma-separated names).
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping, Sequence
from urllib.parse import urlencode

import attrs
import sqlalchemy as sa

from farm.store import schema

RUNS_PER_PAGE = 100

#: the filters, in the order the form shows them: (field, label)
FIELDS = (("target", "board"), ("place", "place"), ("pipeline", "pipeline"), ("setup", "setup"),
          ("status", "status"), ("commit", "commit"), ("since", "from"), ("until", "until"))
#: the filters the static site has a page for, per value (the rest need farm serve's form)
FACETS = ("target", "place", "pipeline", "setup", "status")

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_COMMIT = re.compile(r"[0-9a-fA-F]{4,40}")


class FilterError(ValueError):
    """A filter value that cannot be one (the page says which and why)."""


@attrs.frozen
class RunFilter:
    target: str = ""     # the board, as the env file names the target
    place: str = ""      # the farm place (farm run --farm)
    pipeline: str = ""
    setup: str = ""
    status: str = ""
    commit: str = ""     # a prefix of the git sha, at least 4 hex digits
    since: str = ""      # YYYY-MM-DD, from the start of that day (UTC)
    until: str = ""      # YYYY-MM-DD, to the end of that day (UTC)

    def __attrs_post_init__(self) -> None:
        for name in ("since", "until"):
            value = getattr(self, name)
            if value and not _DATE.fullmatch(value):
                raise FilterError(f"{name}={value!r}: expected a date YYYY-MM-DD")
        if self.commit and not _COMMIT.fullmatch(self.commit):
            raise FilterError(f"commit={self.commit!r}: expected 4 to 40 hexadecimal digits of a git sha")
        for name, _ in FIELDS:
            if len(getattr(self, name)) > 200:
                raise FilterError(f"{name}: longer than 200 characters")

    @classmethod
    def from_query(cls, query: Mapping[str, Sequence[str]]) -> "RunFilter":
        """From a parsed query string (``urllib.parse.parse_qs``); unknown keys are not filters."""
        return cls(**{name: (query.get(name) or [""])[0].strip() for name, _ in FIELDS})

    @property
    def empty(self) -> bool:
        return not any(getattr(self, name) for name, _ in FIELDS)

    def items(self) -> list[tuple[str, str]]:
        return [(name, getattr(self, name)) for name, _ in FIELDS if getattr(self, name)]

    def query(self, **more: Any) -> str:
        """The query string of this filter (and ``more``, e.g. ``page``), "" when there is none."""
        pairs = self.items() + [(k, str(v)) for k, v in more.items() if v not in (None, "")]
        return "?" + urlencode(pairs) if pairs else ""

    def describe(self) -> str:
        labels = dict(FIELDS)
        return ", ".join(f"{labels[k]} {v}" for k, v in self.items())

    def conditions(self) -> list[Any]:
        r = schema.runs
        where: list[Any] = []
        for name, column in (("target", r.c.targets), ("setup", r.c.setups)):
            if value := getattr(self, name):  # one of the comma-separated names
                where.append((sa.literal(",") + column + sa.literal(",")).contains(f",{value},", autoescape=True))
        for name, column in (("place", r.c.place), ("pipeline", r.c.pipeline), ("status", r.c.status)):
            if value := getattr(self, name):
                where.append(column == value)
        if self.commit:
            where.append(r.c.git_sha.startswith(self.commit.lower(), autoescape=True))
        if self.since:
            where.append(r.c.started >= self.since)
        if self.until:
            where.append(r.c.started < self.until + "T99")  # every time of that day sorts below
        return where


#: the columns a run list row shows
def _columns() -> list[Any]:
    r = schema.runs
    return [r.c.run_id, r.c.kind, r.c.status, r.c.who, r.c.started, r.c.duration_s, r.c.pipeline, r.c.targets,
            r.c.setups, r.c.images, r.c.kernels, r.c.junit, r.c.place, r.c.git_sha, r.c.stopped_at]


def count(c: sa.Connection, flt: RunFilter = RunFilter()) -> int:
    return c.execute(sa.select(sa.func.count()).select_from(schema.runs).where(*flt.conditions())).scalar_one()


def page_count(total: int, per_page: int = RUNS_PER_PAGE) -> int:
    return max(1, math.ceil(total / per_page))


def runs(c: sa.Connection, flt: RunFilter = RunFilter(), page: int = 1, per_page: int = RUNS_PER_PAGE) -> list[Any]:
    """The runs of page ``page`` (1 = newest) that ``flt`` selects, newest first."""
    r = schema.runs
    return c.execute(sa.select(*_columns()).where(*flt.conditions()).order_by(r.c.started.desc(), r.c.id.desc())
                     .limit(per_page).offset((page - 1) * per_page)).all()


@attrs.frozen
class Facet:
    """One filter's values in the store, each with how many runs have it, most runs first."""

    field: str
    label: str
    values: tuple[tuple[str, int], ...]


def facets(c: sa.Connection) -> list[Facet]:
    """The values of each of :data:`FACETS` (a run's targets and setups count once per name)."""
    r = schema.runs
    out = []
    for field in FACETS:
        column = r.c[{"target": "targets", "setup": "setups"}.get(field, field)]
        counts: dict[str, int] = {}
        for value, n in c.execute(sa.select(column, sa.func.count()).group_by(column)):
            names = value.split(",") if field in ("target", "setup") else [value]
            for name in filter(None, names):
                counts[name] = counts.get(name, 0) + n
        out.append(Facet(field, dict(FIELDS)[field], tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))))
    return out


def facet_filter(field: str, value: str) -> RunFilter:
    if field not in FACETS:
        raise FilterError(f"no filter {field!r}")
    return RunFilter(**{field: value})
