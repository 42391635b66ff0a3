"""Which runs reproduce which (``farm reproduce``), as the store keeps them: read at ingest from a run
directory's ``reproduction.json`` (farm.results.reproduction), asked by the dashboard and farm history.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import attrs
import sqlalchemy as sa

from farm.config import json_node, load_json
from farm.results.reproduction import VERDICTS
from farm.schema import between, number, setting
from farm.store import schema
from farm.values import name_problem

FILE = "reproduction.json"


@attrs.frozen
class ReproductionFile:
    """reproduction.json as the store keeps it (farm reproduce writes it: farm.results.reproduction)."""

    OPEN = "a field the store does not keep"

    original_run_id: str = setting(check=lambda value: name_problem(value, "run id"), doc="the run reproduced")
    verdict: str = setting(choices=VERDICTS, doc="the run's verdict")
    reproduced: int = setting(check=between(0, 2**31 - 1), doc="figures reproduced")
    not_reproduced: int = setting(check=between(0, 2**31 - 1), doc="figures not reproduced")
    not_measured: int = setting(check=between(0, 2**31 - 1), doc="figures not measured")
    threshold: float = setting(check=number(-1e308, 1e308), doc="the threshold used")
    headline: str = setting("", doc="the verdict in a line")


def reproduction_rows(run_dir: str | os.PathLike[str]) -> tuple[dict[str, Any], ...]:
    """The reproductions row of a run directory (its reproduction.json), or none; a JobError naming
    the file and field when it is not what farm reproduce writes."""
    from farm.schema.read import structure

    path = Path(run_dir) / FILE
    if path.is_symlink() or not path.is_file():
        return ()
    row = attrs.asdict(structure(json_node(load_json(path, FILE), path), ReproductionFile))
    return ({**row, "headline": row["headline"][:10000]},)


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
