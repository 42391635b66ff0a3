"""Which runs reproduce which (``farm reproduce``), as the store keeps them: read at ingest from a run
directory's ``reproduction.json`` (farm.results.reproduction), asked by the dashboard and farm history.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import sqlalchemy as sa

from farm.config import load_json
from farm.errors import JobError
from farm.results.reproduction import VERDICTS
from farm.store import schema
from farm.values import name_problem

FILE = "reproduction.json"
_COUNTS = ("reproduced", "not_reproduced", "not_measured")


def reproduction_rows(run_dir: str | os.PathLike[str]) -> tuple[dict[str, Any], ...]:
    """The reproductions row of a run directory (its reproduction.json), or none; a JobError naming
    the file and field when it is not what farm reproduce writes."""
    path = Path(run_dir) / FILE
    if path.is_symlink() or not path.is_file():
        return ()
    data = load_json(path, FILE)
    original = data.get("original_run_id")
    if (problem := name_problem(original, "run id")):
        raise JobError(f"{path}: original_run_id: {problem}")
    if data.get("verdict") not in VERDICTS:
        raise JobError(f"{path}: verdict: expected one of {', '.join(map(repr, VERDICTS))}, got {data.get('verdict')!r}")
    for key in _COUNTS:
        if not isinstance(data.get(key), int) or isinstance(data[key], bool) or not 0 <= data[key] < 2 ** 31:
            raise JobError(f"{path}: {key}: expected a count of figures")
    threshold = data.get("threshold")
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not math.isfinite(threshold):
        raise JobError(f"{path}: threshold: expected a number")
    return ({"original_run_id": original, "verdict": data["verdict"], **{k: data[k] for k in _COUNTS},
             "threshold": float(threshold), "headline": str(data.get("headline", ""))[:10000]},)


def reproductions_of(c: sa.Connection, run_id: str) -> list[Any]:
    """The stored reproductions of ``run_id``, oldest first: run_id, started, status and the verdict."""
    r, p = schema.runs, schema.reproductions
    return c.execute(sa.select(r.c.run_id, r.c.started, r.c.status, p.c.verdict, p.c.headline, p.c.reproduced,
                               p.c.not_reproduced, p.c.not_measured)
                     .join(p, p.c.run == r.c.id).where(p.c.original_run_id == run_id)
                     .order_by(r.c.started, r.c.id)).all()


def reproduced_by(c: sa.Connection, run_id: str) -> Any | None:
    """What ``run_id`` reproduces (original_run_id, verdict, headline), when it is a reproduction."""
    r, p = schema.runs, schema.reproductions
    return c.execute(sa.select(p.c.original_run_id, p.c.verdict, p.c.headline)
                     .join(r, p.c.run == r.c.id).where(r.c.run_id == run_id)).first()


def links(c: sa.Connection, run_ids: Iterable[str] | None = None) -> dict[str, tuple[str, str]]:
    """Reproduction run id -> (original run id, verdict), of every reproduction (or of ``run_ids``)."""
    r, p = schema.runs, schema.reproductions
    query = sa.select(r.c.run_id, p.c.original_run_id, p.c.verdict).join(p, p.c.run == r.c.id)
    return {run: (original, verdict) for run, original, verdict in c.execute(query)
            if run_ids is None or run in set(run_ids)}


def beside(points: Sequence[Any], links: Mapping[str, tuple[str, str]],
           only: bool = False) -> list[tuple[Any, str]]:
    """History points (by time: one run each) with what each is of a reproduction: every original's
    reproductions right after it, each marked ``reproduces RUN: verdict``, an original with its count.
    ``only``: the originals that have reproductions, and those, alone."""
    run_of = {p.runs[0]: p for p in points if p.runs}
    of: dict[str, list[Any]] = {}
    for p in points:
        original = links.get(p.runs[0], ("", ""))[0] if p.runs else ""
        if original in run_of:
            of.setdefault(original, []).append(p)
    placed = {id(p) for reps in of.values() for p in reps}
    out: list[tuple[Any, str]] = []
    for p in points:
        if id(p) in placed:
            continue
        reps = of.get(p.runs[0], []) if p.runs else []
        link = links.get(p.runs[0]) if p.runs else None
        if only and not reps and link is None:
            continue
        note = f"reproduces {link[0]}: {link[1]}" if link else ""
        if reps:
            note = (note + "; " if note else "") + f"{len(reps)} reproduction{'s' * (len(reps) != 1)}"
        out.append((p, note))
        out += [(r, f"reproduces {p.runs[0]}: {links[r.runs[0]][1]}") for r in reps]
    return out
