"""The results store as a listener: every complete result directory is ingested into it.

``farm run`` (and ``farm health check`` through it), ``farm import``, ``farm qualify`` and farm's
pytest plugin all end with the ``run_published`` hook (farm.run.events), and :data:`STORE` listens to
it. Ingesting is a convenience on top of the run directory, never a risk to it: any failure (no
database server, a locked file, a bad ``FARM_DB``) is a warning on stderr naming what to run later,
and the command's exit code is unchanged.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pluggy

#: farm.run.events.hookimpl (the same marker), without loading the runner
hookimpl = pluggy.HookimplMarker("farm")


def ingest_after(run_dir: str | os.PathLike[str], *, qualification: dict | None = None) -> bool:
    """Ingest ``run_dir`` into the store ``FARM_DB`` names (nothing when it is ``none``); with
    ``qualification`` (path, baseline, passed, headline) ``run_dir`` is qualify's candidate: it is
    stored unless it is there already, and the verdict with it.
    True when something was stored."""
    try:
        from farm.store.db import open_store
        from farm.store.ingest import ingest, record_qualification

        eng = open_store()
        if eng is None:
            return False
        try:
            rows = ingest(eng, [run_dir], replace=qualification is None)
            if qualification is not None:
                record_qualification(eng, **{**qualification, "candidate_run_id": rows[0].run_id})
        finally:
            eng.dispose()
        return True
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, the run directory is what counts
        from farm.store.db import DB_ENV

        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
        print(f"farm: warning: results store: {Path(run_dir)} not ingested ({reason}); the run directory is "
              f"kept: `farm db ingest {run_dir}` later, or {DB_ENV}=none to turn the store off", file=sys.stderr)
        return False


class StoreListener:
    """Ingests what is published (``run_published``) into the store ``FARM_DB`` names."""

    @hookimpl
    def run_published(self, run_dir: Path, qualification: dict[str, Any] | None) -> None:
        ingest_after(run_dir, qualification=qualification)


#: the listener farm registers for every run and every way results come in (farm.run.events.FARM_LISTENERS)
STORE = StoreListener()
