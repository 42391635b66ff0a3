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
from typing import Any, Callable

from ..run.events import hookimpl


def ingest_after(run_dir: str | os.PathLike[str], *, qualification: dict | None = None) -> bool:
    """Ingest ``run_dir`` into the store ``FARM_DB`` names (nothing when it is ``none``); with
    ``qualification`` (path, baseline, passed, headline) ``run_dir`` is qualify's candidate, and the
    verdict is stored with it: against the numbers qualify read, which are the stored run's (the
    directory replaced a stale stored copy; a baseline's copy of a stored run has the same records,
    or is refused, and then the verdict is not stored either). True when something was stored."""
    def store(eng) -> bool:
        from farm.store.ingest import ingest, record_qualification

        (done,) = ingest(eng, [run_dir])
        if qualification is not None:
            record_qualification(eng, **{**qualification, "candidate_run_id": done.rows.run_id})
        return True
    return bool(_with_store(store, f"{Path(run_dir)} not ingested", f"`farm db ingest {run_dir}` later"))


def moved_after(old: str | os.PathLike[str], new: str | os.PathLike[str]) -> bool:
    """``--force`` moved the directory ``old`` aside to ``new``: a run (or a verdict) stored from
    ``old`` is now at ``new``, and the store says so. True when a stored path changed."""
    def store(eng) -> int:
        from farm.store.ingest import relocate

        new_path = Path(new).resolve()
        return relocate(eng, new_path.parent / Path(old).name, new_path)
    return bool(_with_store(store, f"the runs stored from {Path(old)} still name it (they moved to {Path(new)})",
                            f"`farm db ingest {new}`"))


def _with_store(action: Callable[[Any], Any], failed: str, later: str) -> Any:
    """``action(engine)`` on the store (None, without a word, when it is off); any failure a warning."""
    try:
        from farm.store.db import open_store

        eng = open_store()
        if eng is None:
            return None
        try:
            return action(eng)
        finally:
            eng.dispose()
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, the run directory is what counts
        from farm.store.db import DB_ENV, redact

        reason = redact(" ".join(str(exc).split()))[:300] or type(exc).__name__
        print(f"farm: warning: results store: {failed} ({reason}); the run directory is kept: {later}, "
              f"or {DB_ENV}=none to turn the store off", file=sys.stderr)
        return None


class StoreListener:
    """Ingests what is published (``run_published``) into the store ``FARM_DB`` names."""

    @hookimpl
    def run_published(self, run_dir: Path, qualification: dict[str, Any] | None) -> None:
        ingest_after(run_dir, qualification=qualification)

    @hookimpl
    def results_moved(self, old: Path, new: Path) -> None:
        moved_after(old, new)


#: the listener farm registers for every run and every way results come in (farm.run.events.FARM_LISTENERS)
STORE = StoreListener()
