"""What the dashboard's pages show, read from the store (SQLAlchemy Core, SQLite or PostgreSQL)."""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

import attrs
import sqlalchemy as sa

from farm.results.figures import KeyFigure, group_figures
from farm.results.record import FAILED_METRIC
from farm.results.stats import median
from farm.store import schema
from farm.store.history import Filters, Series, history
from farm.store.reproductions import reproduced_by, reproductions_of

_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._]*(-[A-Za-z0-9._]+)*")


def slug(text: str) -> str:
    """A file name for ``text``: itself when it is plain (letters, digits, ``._-``, no ``--``),
    else its plain characters and a hash, so two texts never share a page."""
    if len(text) <= 120 and _SAFE.fullmatch(text):
        return text
    plain = re.sub(r"-+", "-", re.sub(r"[^A-Za-z0-9._-]+", "_", text)).strip("-_.")[:60] or "x"
    return f"{plain}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


@attrs.frozen
class RunDetail:
    run: Any                      # the runs row
    stages: list[Any]
    figures: list[KeyFigure]
    failed: list[Any]             # records of failed benchmarks
    images: list[Any]
    artifacts: list[Any]
    consoles: list[Any]
    boots: list[Any]
    previous: str | None          # the run before it of the same pipeline, for a comparison
    qualifications: list[Any]
    sweeps: list[SweepCurve] = attrs.field(factory=list)  # its network sweeps, drawn on its page
    reproductions: list[Any] = attrs.field(factory=list)  # runs that reproduce it (farm reproduce), their verdicts
    reproduces: Any | None = None                          # the run it reproduces, and the verdict


def all_run_ids(c: sa.Connection) -> list[str]:
    return list(c.execute(sa.select(schema.runs.c.run_id).order_by(schema.runs.c.started)).scalars())


def run_for_slug(c: sa.Connection, text: str) -> str | None:
    r = schema.runs
    if c.execute(sa.select(r.c.id).where(r.c.run_id == text)).first():
        return text
    return next((rid for rid in c.execute(sa.select(r.c.run_id)).scalars() if slug(rid) == text), None)


def figures_of(rows) -> list[KeyFigure]:
    return group_figures(rows)


#: what a run page draws of a network sweep, against the requested rate: achieved rate and RTT
SWEEP_METRICS = ("received_throughput", "rtt_median")


@attrs.frozen
class SweepCurve:
    """One metric of one network sweep (target, setup) against the requested rate: the median over
    repeats at each point, in the order of the requested rate."""

    target: str
    setup: str
    metric: str
    unit: str
    points: tuple[tuple[float, float], ...]   # (requested bit/s, median)


def sweep_curves(rows) -> list[SweepCurve]:
    """The :data:`SWEEP_METRICS` curves of the sweep records among ``rows`` (records or store rows)."""
    from farm.results.identity import identity_params
    from farm.results.ipbench import BENCHMARK

    requested: dict[tuple[str, str, str], float] = {}
    values: dict[tuple[str, str, str, str, str], list[float]] = {}
    for r in rows:
        if r.benchmark != BENCHMARK or not math.isfinite(r.value):
            continue
        point = (r.target, r.setup, identity_params(r.benchmark, r.params))
        if r.metric == "requested_throughput":
            requested[point] = r.value
        elif r.metric in SWEEP_METRICS:
            values.setdefault((*point, r.metric, r.unit), []).append(r.value)
    curves: dict[tuple[str, str, str, str], list[tuple[float, float]]] = {}
    for (target, setup, params, metric, unit), vs in values.items():
        if (target, setup, params) in requested:
            curves.setdefault((target, setup, metric, unit), []).append(
                (requested[target, setup, params], median(vs)))
    return [SweepCurve(*key, tuple(sorted(points))) for key, points in sorted(curves.items())]


def run_detail(c: sa.Connection, run_id: str) -> RunDetail | None:
    r = schema.runs
    run = c.execute(sa.select(r).where(r.c.run_id == run_id)).first()
    if run is None:
        return None

    def rows(table: sa.Table, *order) -> list[Any]:
        return c.execute(sa.select(table).where(table.c.run == run.id).order_by(*order)).all()

    records = rows(schema.records, schema.records.c.id)
    previous = c.execute(sa.select(r.c.run_id).where(r.c.pipeline == run.pipeline, r.c.started < run.started)
                         .order_by(r.c.started.desc()).limit(1)).scalar()
    q = schema.qualifications
    quals = c.execute(sa.select(q).where(q.c.candidate_run_id == run_id).order_by(q.c.created)).all()
    return RunDetail(run, rows(schema.stages, schema.stages.c.position), figures_of(records),
                     [x for x in records if x.metric == FAILED_METRIC], rows(schema.images, schema.images.c.image),
                     rows(schema.artifacts, schema.artifacts.c.path), rows(schema.consoles, schema.consoles.c.target),
                     rows(schema.boots, schema.boots.c.position), previous, quals, sweep_curves(records),
                     reproductions_of(c, run_id), reproduced_by(c, run_id))


def setups_of(c: sa.Connection, run_id: str | None = None) -> dict[str, list[str]]:
    """Run id → the setups it measured, in name order (of one run, or of all)."""
    f = schema.figures
    query = sa.select(f.c.run_id, f.c.setup).distinct().order_by(f.c.run_id, f.c.setup)
    if run_id is not None:
        query = query.where(f.c.run_id == run_id)
    out: dict[str, list[str]] = {}
    for rid, setup in c.execute(query):
        out.setdefault(rid, []).append(setup)
    return out


def only_setup(figures: list[KeyFigure], setup: str | None) -> list[KeyFigure]:
    return figures if setup is None else [f for f in figures if f.setup == setup]


def consecutive_pairs(c: sa.Connection) -> list[tuple[str, str]]:
    """Each run with the one before it of the same pipeline: the comparisons the static site holds."""
    r = schema.runs
    last: dict[str, str] = {}
    pairs = []
    for pipeline, run_id in c.execute(sa.select(r.c.pipeline, r.c.run_id).order_by(r.c.started, r.c.id)):
        if pipeline in last:
            pairs.append((last[pipeline], run_id))
        last[pipeline] = run_id
    return pairs


@attrs.frozen
class Trend:
    suite: str
    benchmark: str
    metric: str
    unit: str
    runs: int

    @property
    def slug(self) -> str:
        return slug(f"{self.suite}.{self.benchmark}.{self.metric}.{self.unit}")

    def label(self) -> str:
        return f"{self.suite}.{self.benchmark} {self.metric} ({self.unit})"


def trends(c: sa.Connection) -> list[Trend]:
    from farm.store.history import metrics

    return [Trend(*row) for row in metrics(c)]


def trend_series(c: sa.Connection, trend: Trend) -> list[Series]:
    return history(c, Filters(metric=trend.metric, suite=trend.suite, benchmark=trend.benchmark, unit=trend.unit))


@attrs.frozen
class Pair:
    """One metric measured by both sides of a comparison."""

    a: KeyFigure
    b: KeyFigure

    @property
    def ratio(self) -> float:
        return self.b.median / self.a.median if self.a.median else math.nan


def compare_figures(a: list[KeyFigure],
                    b: list[KeyFigure]) -> tuple[list[Pair], list[KeyFigure], list[KeyFigure]]:
    """Pairs joined on target, setup, suite, benchmark, params, metric and unit; when that joins
    nothing and each side measured one target/setup (a VM run against a bare one), on the rest."""

    def join(key):
        left = {key(f): f for f in a}
        right = {key(f): f for f in b}
        pairs = [Pair(left[k], right[k]) for k in left if k in right]
        return pairs, [f for k, f in left.items() if k not in right], [f for k, f in right.items() if k not in left]

    pairs, only_a, only_b = join(lambda f: f.key)
    if not pairs and len({f.key[:2] for f in a}) == 1 and len({f.key[:2] for f in b}) == 1:
        pairs, only_a, only_b = join(lambda f: f.key[2:])
    return pairs, only_a, only_b


# --- places --------------------------------------------------------------------------------------

#: how many of the newest runs the places page reads for each place's last run and failure
PLACE_RUNS = 2000


@attrs.frozen
class PlaceNow:
    """A place as the coordinator sees it now (from :func:`farm.places.list_places`)."""

    name: str
    tags: dict[str, str]
    holder: str | None      # lock owner, host/user
    since: float | None     # locked since (epoch seconds)
    reservation: str | None
    health: str             # "ok", or what is wrong (resources, farm's health record)


@attrs.frozen
class PlaceRuns:
    """What the store knows of a place: the runs that ran on it (run.json's ``place``)."""

    name: str
    coordinator: str
    tags: dict[str, str]
    runs: int               # among the newest PLACE_RUNS runs
    last: Any               # runs row: run_id, started, status, who, stopped_at
    last_failure: Any | None
    health: str             # the health the newest run recorded for it ("" when none did)


def coordinator_places(address: str | None) -> tuple[list[PlaceNow] | None, str]:
    """The places of the coordinator at ``address`` now, and a line saying where they came from;
    ``None`` and why when it cannot be reached (the page then shows the store's side only)."""
    from farm.coordinator import Coordinator, coordinator_address
    from farm.errors import FarmError
    from farm.places import list_places

    where = coordinator_address(address)
    try:
        with Coordinator(where, connect_timeout=5.0) as coord:
            statuses = list_places(coord)
    except FarmError as exc:
        return None, f"the coordinator at {where} did not answer: {exc}"
    return [PlaceNow(s.name, dict(s.tags), s.holder, s.since, s.reservation, s.health_text()) for s in statuses], \
        f"the coordinator at {where}, now"


def place_history(c: sa.Connection, limit: int = PLACE_RUNS) -> list[PlaceRuns]:
    """Per place named by the newest ``limit`` runs' run.json, newest first: its runs, last run,
    last run that did not pass, and the health the newest run recorded."""
    r = schema.runs
    rows = c.execute(sa.select(r.c.run_id, r.c.started, r.c.status, r.c.who, r.c.stopped_at, r.c.info)
                     .where(r.c.info.like('%"place": {%')).order_by(r.c.started.desc(), r.c.id.desc())
                     .limit(limit)).all()
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        try:
            place = json.loads(row.info).get("place")
        except (ValueError, AttributeError):
            continue
        if not isinstance(place, dict) or not isinstance(place.get("name"), str):
            continue
        seen = found.setdefault(place["name"], {"coordinator": str(place.get("coordinator") or ""),
                                                "tags": place.get("tags") if isinstance(place.get("tags"), dict)
                                                else {}, "runs": 0, "last": row, "failure": None, "health": ""})
        seen["runs"] += 1
        if seen["failure"] is None and row.status != "passed":
            seen["failure"] = row
        if not seen["health"] and isinstance(place.get("health"), str):
            seen["health"] = place["health"]
    return [PlaceRuns(name, v["coordinator"], {str(k): str(t) for k, t in v["tags"].items()}, v["runs"], v["last"],
                      v["failure"], v["health"]) for name, v in sorted(found.items())]


#: how many of a place's newest runs its page draws over time
PLACE_TIMELINE = 200


@attrs.frozen
class PlaceDetail:
    """A place's page, from the store: its runs (run.json's ``place``), their outcomes, and the
    health each recorded, over time."""

    name: str
    coordinator: str
    tags: dict[str, str]
    total: int                          # runs on it
    outcomes: tuple[tuple[str, int], ...]  # status -> runs, most first
    timeline: tuple[Any, ...]           # its newest PLACE_TIMELINE runs, oldest first (run_id, started, status,
    #                                     junit, stopped_at, health: what the run recorded, "" when nothing)
    recent: tuple[Any, ...]             # its newest runs, for the jobs table (runlist rows)


def place_names(c: sa.Connection) -> list[str]:
    r = schema.runs
    return list(c.execute(sa.select(r.c.place).where(r.c.place != "").distinct().order_by(r.c.place)).scalars())


def place_for_slug(c: sa.Connection, text: str) -> str | None:
    return next((name for name in place_names(c) if slug(name) == text), None)


def place_detail(c: sa.Connection, name: str, timeline: int = PLACE_TIMELINE) -> PlaceDetail | None:
    from .runlist import RUNS_PER_PAGE, RunFilter, runs

    r = schema.runs
    outcomes = c.execute(sa.select(r.c.status, sa.func.count()).where(r.c.place == name).group_by(r.c.status)).all()
    if not outcomes:
        return None
    rows = c.execute(sa.select(r.c.run_id, r.c.started, r.c.status, r.c.junit, r.c.stopped_at, r.c.info)
                     .where(r.c.place == name).order_by(r.c.started.desc(), r.c.id.desc()).limit(timeline)).all()
    points, tags, coordinator = [], None, ""
    for row in rows:
        try:
            place = json.loads(row.info).get("place")
        except (ValueError, AttributeError):
            place = None
        place = place if isinstance(place, dict) else {}
        if tags is None and isinstance(place.get("tags"), dict):
            tags, coordinator = place["tags"], str(place.get("coordinator") or "")
        health = place.get("health") if isinstance(place.get("health"), str) else ""
        points.append(PlaceEvent(row.run_id, row.started, row.status, row.junit, row.stopped_at, health))
    return PlaceDetail(name, coordinator, {str(k): str(v) for k, v in (tags or {}).items()},
                       sum(n for _, n in outcomes), tuple(sorted(((s, n) for s, n in outcomes),
                                                                 key=lambda sn: (-sn[1], sn[0]))),
                       tuple(reversed(points)), tuple(runs(c, RunFilter(place=name), 1, RUNS_PER_PAGE)))


@attrs.frozen
class PlaceEvent:
    run_id: str
    started: str
    status: str
    junit: str
    stopped_at: str
    health: str


def point_values(c: sa.Connection, trend: Trend, series: Series, run_ids: list[str]) -> dict[str, list[float]]:
    """Run id → the values of ``series`` it measured, for the runs ``run_ids`` (a trend page's points,
    judged against each other by farm qualify's rules)."""
    f = schema.figures
    out: dict[str, list[float]] = {}
    for i in range(0, len(run_ids), 500):
        query = sa.select(f.c.run_id, f.c["values"]).where(
            f.c.metric == trend.metric, f.c.benchmark == trend.benchmark, f.c.suite == trend.suite,
            f.c.unit == trend.unit, f.c.target == series.target, f.c.setup == series.setup,
            f.c.params == series.params, f.c.run_id.in_(run_ids[i:i + 500]))
        for run_id, text in c.execute(query):
            out.setdefault(run_id, []).extend(json.loads(text))
    return out
