"""A run's run.json by what a user names it with: its run directory, or its run id in the results store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from farm.errors import JobError
from farm.results.runjson import MAX_RUN_JSON_BYTES, check_run_json
from farm.store import schema


def stored_run_json(connection: sa.Connection, run_id: str) -> dict[str, Any] | None:
    """run.json as the store keeps it for ``run_id`` (None: no such run)."""
    text = connection.execute(sa.select(schema.runs.c.info).where(schema.runs.c.run_id == run_id)).scalar()
    if text is None:
        return None
    info = json.loads(text)
    return info if isinstance(info, dict) else {}


def run_json(spec: str) -> tuple[str, dict[str, Any]]:
    """``(the run's id, its run.json)`` of ``spec``: a run directory (its run.json, checked), else a run id
    of the results store ($FARM_DB); a JobError naming ``spec`` when it is neither."""
    from farm.config import load_json
    from farm.store.db import DB_ENV, database_url, describe, open_store, store_errors

    path = Path(spec)
    if path.is_dir():
        file = path / "run.json"
        if not file.is_file():
            raise JobError(f"{spec}: a directory without run.json: not a run directory")
        info = check_run_json(load_json(file, "run.json", limit=MAX_RUN_JSON_BYTES), str(file))
        return str(info.get("run_id") or path.name), info
    url = database_url()
    with store_errors(url):
        eng = open_store()
        if eng is None:
            raise JobError(f"run {spec!r}: not a run directory, and the results store is off ({DB_ENV}=none) "
                           "to look it up by id")
        with eng.connect() as connection:
            info = stored_run_json(connection, spec)
    if info is None:
        raise JobError(f"run {spec!r}: neither a run directory nor a run in the results store {describe(url)} "
                       "(farm db ingest RUN_DIR adds one)")
    return spec, info
