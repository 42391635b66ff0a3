"""Ingesting a run directory: read it into a :class:`RunRows` (no database), then write that in
one transaction.

**Which run it is.** A live run is named by run.json's ``run_id`` (unique lab-wide:
farm.run.rundir.new_run_id); an import (``farm import``: run.json holds ``imported_from``) by its
records' ``run_id`` (``import-<hash of the file and how it was imported>``), so importing one file
the same way twice is one run too. A run id already stored is, by :func:`write_run`:

- *the same run* (a resumed run, a run directory moved, ingested again): the stored copy is
  replaced by what the directory holds now (the directory is the truth);
- *a baseline's copy* of it (``farm baseline save``: results.csv and run.json without the console
  or junit.xml): the stored run is kept, if the copy's records are the run's; a copy whose records
  differ (edited) is refused;
- *another run* under the same id (an id of the old 4-digit form met again, or a run.json edited):
  refused (:class:`RunConflict`), the stored run kept. Nothing is ever silently replaced.

**What is stored** is what farm writes elsewhere: every text masked (farm.secrets), every value
checked to fit its column alike in SQLite and PostgreSQL (farm.store.fit), a NaN value stored as
NULL. A value that does not fit is a JobError naming the directory, the file and the field.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Iterable

import attrs
import sqlalchemy as sa

from farm.errors import JobError
from farm.measure.params import canonical
from farm.results.baselines import META as BASELINE_META
from farm.results.identity import key_params
from farm.results.record import FAILED_METRIC, Record, now_iso
from farm.results.stats import median
from farm.results.rundata import RunData, load_run
from farm.secrets import mask
from farm.store import fit, schema
from farm.store.reproductions import reproduction_rows

#: junit outcome of a run, worst first
_OUTCOMES = ("error", "failure", "pass")


@attrs.frozen
class RunRows:
    """The rows one run directory gives each table (``run`` is the runs row without its id)."""

    run: dict[str, Any]
    stages: tuple[dict[str, Any], ...]
    records: tuple[dict[str, Any], ...]
    boots: tuple[dict[str, Any], ...]
    artifacts: tuple[dict[str, Any], ...]
    images: tuple[dict[str, Any], ...]
    consoles: tuple[dict[str, Any], ...]
    #: the run reproduces another (farm reproduce's reproduction.json): farm.store.reproductions
    reproductions: tuple[dict[str, Any], ...] = ()

    @property
    def run_id(self) -> str:
        return self.run["run_id"]

    @property
    def is_copy(self) -> bool:
        """A saved baseline (farm.results.baselines): a copy of a run's records and run.json."""
        return any(a["path"] == BASELINE_META for a in self.artifacts)

    @property
    def figures(self) -> tuple[dict[str, Any], ...]:
        return figure_rows(self.run, self.records)


#: what a figure is the summary of: the values of one measurement in one run, on one kernel and image;
#: its params are the records' identity (farm.results.identity), so runs of other lengths are one series
_FIGURE_KEY = ("target", "setup", "suite", "benchmark", "params", "metric", "unit", "kernel", "image_key", "git_sha")


def figure_rows(run: dict[str, Any], records: Iterable[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    """Per measurement of the run: n, median and interval (:mod:`farm.store.history`) and the values.
    Failed-benchmark markers and values that are not finite are no measurement."""
    from farm.store.history import median_interval

    groups: dict[tuple, list[float]] = {}
    for r in records:
        if r["metric"] != FAILED_METRIC and r["value"] is not None and math.isfinite(r["value"]):
            key = {**r, "params": key_params(r["benchmark"], r["metric"], r["params"])}
            groups.setdefault(tuple(key[k] for k in _FIGURE_KEY), []).append(r["value"])
    rows = []
    for key, values in groups.items():
        lo, hi, interval = median_interval(values)
        rows.append({**dict(zip(_FIGURE_KEY, key)), "run_id": run["run_id"], "started": run["started"],
                     "n": len(values), "median": median(values), "lo": lo, "hi": hi, "interval": interval,
                     "values": json.dumps(values)})
    return tuple(rows)


def junit_outcome(kinds: Iterable[str]) -> str:
    """``error`` if a stage had one, else ``failure``, else ``pass``; ``none`` without junit.xml."""
    kinds = set(kinds)
    if not kinds:
        return "none"
    return next((k for k in _OUTCOMES if k in kinds), "pass")


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _seconds(started: str, finished: str | None) -> float | None:
    from datetime import datetime

    try:
        end = datetime.fromisoformat(finished)  # type: ignore[arg-type]
        return (end - datetime.fromisoformat(started)).total_seconds()
    except (TypeError, ValueError):
        return None


def _place(info: dict[str, Any]) -> str:
    """The farm place the run ran on (run.json's ``place.name``, ``farm run --farm``), "" off the farm."""
    place = info.get("place")
    name = place.get("name") if isinstance(place, dict) else None
    return name[:200] if isinstance(name, str) else ""


def _boots(info: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    targets = info.get("targets") if isinstance(info.get("targets"), dict) else {}
    for target, facts in targets.items():
        for boot in (facts or {}).get("boots") or []:
            if not isinstance(boot, dict):
                continue
            rows.append({
                "position": len(rows), "target": str(target), "setup": _text(boot.get("setup")),
                "repeat": boot.get("repeat") or 0, "kernel": _text(boot.get("kernel")),
                "image": _text(boot.get("image")), "image_key": _text(boot.get("image_key")),
                "cpus": boot.get("cpus") if isinstance(boot.get("cpus"), int) else None,
                "frequency_hz": _number(boot.get("frequency_hz")),
                "boot_seconds": _number(boot.get("boot_seconds"))})
    return rows


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _images(info: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    manifests = info.get("images") if isinstance(info.get("images"), dict) else {}
    for name, manifest in manifests.items():
        if not isinstance(manifest, dict):
            continue
        for artifact, facts in sorted((manifest.get("artifacts") or {}).items()):
            if isinstance(facts, dict) and facts.get("sha256"):
                rows.append({"image": str(name), "artifact": str(artifact), "sha256": str(facts["sha256"]),
                             "image_key": _text(manifest.get("key")),
                             "kernel": _text(manifest.get("kernel_version"))})
    return rows


def _artifacts(path: Path) -> list[dict[str, Any]]:
    """Every regular file of the run directory (symlinks are not followed), relative path and size."""
    rows = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(root, d)))
        for name in sorted(files):
            full = Path(root, name)
            if full.is_symlink() or not full.is_file():
                continue
            rows.append({"path": full.relative_to(path).as_posix(), "size": full.stat().st_size})
    return rows


def _consoles(path: Path) -> list[dict[str, Any]]:
    rows = []
    folder = path / "console"
    if not folder.is_dir() or folder.is_symlink():
        return rows
    for log in sorted(folder.glob("*.log")):
        if log.is_symlink() or not log.is_file():
            continue
        text = log.read_bytes().decode("utf-8", errors="replace").replace("\x00", "\\x00")
        keep = schema.CONSOLE_KEEP_CHARS
        rows.append({"target": log.stem, "text": text[-keep:], "truncated": len(text) > keep})
    return rows


def read_run(run_dir: str | os.PathLike[str]) -> RunRows:
    """What ``run_dir`` holds, as rows fit for the store (masked, checked: :func:`check_rows`);
    JobError when it is not a run directory or a value does not fit."""
    data: RunData = load_run(run_dir)
    rows = attrs.evolve(rows_of(data, _artifacts(data.path), _consoles(data.path)),
                        reproductions=reproduction_rows(data.path))
    check_rows(rows, data.path)
    return rows


def _masked(row: dict[str, Any]) -> dict[str, Any]:
    return {k: mask(v) if isinstance(v, str) else v for k, v in row.items()}


#: where each table's rows come from, for messages: (table, the RunRows field, the file and item of row i)
_SOURCES = (
    (schema.runs, None, lambda i, row: "run.json"),
    (schema.stages, "stages", lambda i, row: f"junit.xml testcase {i + 1}"),
    (schema.records, "records", lambda i, row: f"results.csv line {i + 2}"),
    (schema.boots, "boots", lambda i, row: f"run.json targets.{row['target']}.boots"),
    (schema.artifacts, "artifacts", lambda i, row: f"file {row['path']!r}"),
    (schema.images, "images", lambda i, row: f"run.json images.{row['image']}.artifacts.{row['artifact']}"),
    (schema.consoles, "consoles", lambda i, row: f"console/{row['target']}.log"),
    (schema.figures, "figures", lambda i, row: f"results.csv ({row['suite']}.{row['benchmark']} {row['metric']})"),
)
#: the text columns of the figures' history index (one PostgreSQL index entry holds them all)
_FIGURE_INDEX = tuple(c.name for c in next(i for i in schema.figures.indexes if i.name == "ix_figures_metric").columns
                      if isinstance(c.type, sa.String))


def check_rows(rows: RunRows, run_dir: Path) -> None:
    """Every value of every row fits its column in both databases (:mod:`farm.store.fit`), and every
    figure's key fits an index entry; else a JobError naming ``run_dir``, where the value came from
    and the column."""
    for table, field, where in _SOURCES:
        items = (rows.run,) if field is None else getattr(rows, field)
        for i, row in enumerate(items):
            problems = list(fit.row_problems(table, row))
            if table is schema.figures and (big := fit.index_problem(_FIGURE_INDEX, row)):
                problems.append(big)
            if problems:
                raise JobError(f"{run_dir}: {where(i, row)}: {problems[0]}: not stored (the results store "
                               "keeps a run only whole)")


def rows_of(data: RunData, artifacts: list[dict[str, Any]], consoles: list[dict[str, Any]]) -> RunRows:
    info, records = data.info, data.records
    imported = "imported_from" in info
    run_id = _text(info.get("run_id")) or (records[0].run_id if records else "") or data.path.name
    if not run_id:
        raise JobError(f"{data.path}: no run id (run.json has none and there are no records)")
    stamps = sorted(r.timestamp for r in records)
    started = _text(info.get("started")) or (stamps[0] if stamps else now_iso())
    finished = _text(info.get("finished")) or (stamps[-1] if stamps and imported else "") or None
    boots = _boots(info)
    kernel_of = {(b["target"], b["setup"], b["repeat"]): b for b in boots}
    kernel_of_setup = {(b["target"], b["setup"]): b for b in reversed(boots)}
    image_rows = _images(info)
    git_sha = _text(info.get("git_sha"))

    def record_row(r: Record) -> dict[str, Any]:
        boot = kernel_of.get((r.target, r.setup, r.repeat)) or kernel_of_setup.get((r.target, r.setup)) or {}
        return _masked({"timestamp": r.timestamp, "target": r.target, "arch": r.arch, "setup": r.setup,
                        "image": r.image, "suite": r.suite, "benchmark": r.benchmark, "params": canonical(r.params),
                        "repeat": r.repeat, "metric": r.metric, "value": None if math.isnan(r.value) else r.value,
                        "unit": r.unit, "kernel": boot.get("kernel", ""), "image_key": boot.get("image_key", ""),
                        "git_sha": git_sha, "started": started})

    targets = sorted({r.target for r in records} | set((info.get("targets") or {}) if isinstance(
        info.get("targets"), dict) else ()))
    setups = sorted({r.setup for r in records} | set(info.get("setups") or () if isinstance(
        info.get("setups"), dict) else ()))
    run = _masked({
        "run_id": run_id, "kind": "import" if imported else "live",
        "status": _text(info.get("status")) or ("imported" if imported else "unknown"),
        "who": _text(info.get("who")), "started": started, "finished": finished,
        "duration_s": _seconds(started, finished),
        "pipeline": _text(info.get("pipeline_name") or info.get("pipeline") or
                          (f"import {Path(str(info['imported_from'])).name}" if imported else "")),
        "targets": ",".join(targets), "setups": ",".join(setups),
        "images": ",".join(sorted({r.image for r in records if r.image} | {i["image"] for i in image_rows})),
        "kernels": ",".join(sorted({b["kernel"] for b in boots if b["kernel"]})),
        "git_sha": git_sha, "farm_version": _text(info.get("farm_version")), "ci_job": _text(info.get("ci_job")),
        "stopped_at": _text(info.get("stopped_at")),
        "junit": junit_outcome(s.kind for s in data.stages), "path": str(data.path.resolve()),
        "info": json.dumps(info, sort_keys=True, default=str), "ingested": now_iso(), "place": _place(info),
    })
    stages = tuple(_masked({"position": i, "name": s.name, "classname": s.classname,
                            "seconds": s.seconds if math.isfinite(s.seconds) else None, "kind": s.kind,
                            "message": s.message}) for i, s in enumerate(data.stages))
    return RunRows(run, stages, tuple(record_row(r) for r in records), tuple(_masked(b) for b in boots),
                   tuple(_masked(a) for a in artifacts), tuple(_masked(i) for i in image_rows),
                   tuple(_masked(c) for c in consoles))


_CHILDREN = (("stages", schema.stages), ("records", schema.records), ("figures", schema.figures),
             ("boots", schema.boots),
             ("artifacts", schema.artifacts), ("images", schema.images), ("consoles", schema.consoles),
             ("reproductions", schema.reproductions))


class RunConflict(JobError):
    """A run directory whose run id is stored for another run (or whose baseline copy differs from
    the stored run): refused, the stored run kept."""


#: what :func:`write_run` did with a run
STORED, REPLACED, KEPT = "stored", "replaced", "kept"


def write_run(connection: sa.Connection, rows: RunRows) -> str:
    """Store ``rows`` on an open transaction by the rules of the module docstring; :data:`STORED`
    (new), :data:`REPLACED` (the same run, stored again) or :data:`KEPT` (a baseline's copy of a
    stored run: nothing written). :class:`RunConflict` when the id is another run's."""
    runs = schema.runs
    stored = connection.execute(sa.select(runs.c.id, runs.c.path, runs.c.started, runs.c.kind)
                                .where(runs.c.run_id == rows.run_id)).first()
    if stored is not None:
        stored_is_copy = connection.execute(sa.select(schema.artifacts.c.run).where(
            schema.artifacts.c.run == stored.id, schema.artifacts.c.path == BASELINE_META)).first() is not None
        if rows.is_copy and not stored_is_copy:
            if _same_records(connection, stored.id, rows):
                return KEPT
            raise RunConflict(f"{rows.run['path']}: a baseline's copy of run {rows.run_id} whose records differ "
                              f"from the stored run's ({stored.path}): edited after it was saved? Not stored; "
                              "the stored run is kept")
        if not _same_origin(stored, rows):
            raise RunConflict(f"{rows.run['path']}: run id {rows.run_id} is stored already for another run "
                              f"(started {stored.started}, {stored.path}; this one started {rows.run['started']}): "
                              "not stored, the stored run is kept")
        connection.execute(sa.delete(runs).where(runs.c.id == stored.id))
    run_pk = connection.execute(sa.insert(runs).values(**rows.run)).inserted_primary_key[0]
    for field, table in _CHILDREN:
        children = getattr(rows, field)
        if children:
            connection.execute(sa.insert(table), [{**child, "run": run_pk} for child in children])
    return STORED if stored is None else REPLACED


def _same_origin(stored: Any, rows: RunRows) -> bool:
    """Whether a stored run and ``rows`` of the same id are one run: an import's id is made of its
    content and options (the same id is the same import); a live run's start time is its own."""
    if stored.kind == "import" and rows.run["kind"] == "import":
        return True
    return stored.kind == rows.run["kind"] and stored.started == rows.run["started"]


_RECORD_KEY = ("target", "setup", "suite", "benchmark", "params", "repeat", "metric", "value", "unit")


def _same_records(connection: sa.Connection, run_pk: int, rows: RunRows) -> bool:
    r = schema.records
    stored = connection.execute(sa.select(*(r.c[k] for k in _RECORD_KEY)).where(r.c.run == run_pk)).all()

    def key(row: Iterable[Any]) -> tuple:
        return tuple((v is None, v if v is not None else 0) for v in row)
    return sorted(map(key, stored)) == sorted(key(rec[k] for k in _RECORD_KEY) for rec in rows.records)


@attrs.frozen
class Ingested:
    """One run directory ingested: its rows and what :func:`write_run` did (stored, replaced, kept)."""

    rows: RunRows
    outcome: str


#: how often a transaction that lost a race to store the same run is tried again (each sees more stored)
INGEST_TRIES = 5


def ingest(eng: sa.Engine, run_dirs: Iterable[str | os.PathLike[str]]) -> list[Ingested]:
    """Read every directory first (bad input writes nothing), then write them all in one transaction
    (a :class:`RunConflict` writes none of them).

    Two ingests of one run at once (``farm db ingest`` beside a run's own listener, four CI jobs) both see it
    unstored and both insert it: the second transaction fails on the run id's uniqueness (PostgreSQL, SQLite) or
    on its stale snapshot (SQLite's WAL: "database is locked"), writing nothing. It is tried again, and then
    finds the run stored by the other: the same run is one run, and neither ingest is the lab's failure."""
    import time

    all_rows = [read_run(d) for d in run_dirs]
    for attempt in range(INGEST_TRIES):
        try:
            with eng.begin() as connection:
                return [Ingested(rows, write_run(connection, rows)) for rows in all_rows]
        except (sa.exc.IntegrityError, sa.exc.OperationalError) as exc:
            lost_race = isinstance(exc, sa.exc.IntegrityError) or "locked" in str(exc.orig)
            if not lost_race or attempt == INGEST_TRIES - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def relocate(eng: sa.Engine, old: Path, new: Path) -> int:
    """A run directory (or a qualify --out) moved from ``old`` to ``new`` (``--force`` moves an old
    one aside): the stored path follows it. The number of rows changed."""
    changed = 0
    with eng.begin() as connection:
        for table in (schema.runs, schema.qualifications):
            changed += connection.execute(sa.update(table).where(table.c.path == str(old))
                                          .values(path=str(new))).rowcount
    return changed


def record_qualification(eng: sa.Engine, *, path: Path, baseline: str, candidate_run_id: str, passed: bool,
                         headline: str) -> None:
    """Remember a ``farm qualify`` verdict (its --out directory is its key: made anew, replaced here)."""
    row = {"path": str(path.resolve()), "baseline": baseline, "candidate_run_id": candidate_run_id,
           "passed": passed, "headline": headline, "created": now_iso()}
    with eng.begin() as connection:
        connection.execute(sa.delete(schema.qualifications).where(schema.qualifications.c.path == row["path"]))
        connection.execute(sa.insert(schema.qualifications).values(**row))
