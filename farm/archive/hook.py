"""The archive as a listener: every run that booted images is archived when its results are complete.

``farm run`` (and ``farm health check``, ``farm reproduce`` through it), ``farm qualify`` and farm's
pytest plugin end with the ``run_published`` hook (farm.run.events); :data:`ARCHIVE` listens to it, as
the results store does (farm.store.hook). A run that booted nothing (an import) is not archived.
Archiving is never a risk to the run: any failure (the share not mounted, a full disk) is a warning on
stderr naming what to run later, and the command's exit code is unchanged.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..run.events import hookimpl


def _say(text: str) -> None:
    print(f"farm: {text}", file=sys.stderr, flush=True)


def archive_after(run_dir: Path) -> bool:
    """Archive ``run_dir`` into the archive ``FARM_ARCHIVE`` names (nothing when it is ``none``, or
    when the run booted no image); True when it is archived."""
    from . import ARCHIVE_ENV

    try:
        from . import open_archive
        from .archiving import archive_run

        archive = open_archive()
        if archive is None:
            return False
        if not archive.writable:
            _say(f"archive: {ARCHIVE_ENV}={archive.location} is read-only (served over HTTP): run {run_dir} not "
                 f"archived; set {ARCHIVE_ENV} to the share's directory where runs are archived")
            return False
        done = archive_run(Path(run_dir), archive)
        if done is None:
            return False
        record = done.record
        if not done.unchanged:
            _say(f"archived run {record.run_id} in {archive.location}: {len(record.images)} image(s), "
                 f"{done.new_objects} new object(s), {done.new_bytes / 1e6:.1f} MB new")
        for line in record.missing:
            _say(f"warning: archive: run {record.run_id}: {line}")
        return True
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, the run directory is what counts
        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
        _say(f"warning: archive: {run_dir} not archived ({reason}); the run directory is kept: "
             f"`farm archive {run_dir}` later, or {ARCHIVE_ENV}=none to turn the archive off")
        return False


class ArchiveListener:
    """Archives what is published (``run_published``) into the archive ``FARM_ARCHIVE`` names."""

    @hookimpl
    def run_published(self, run_dir: Path, qualification: dict[str, Any] | None) -> None:
        archive_after(run_dir)


#: the listener farm registers for every run (farm.run.events.FARM_LISTENERS)
ARCHIVE = ArchiveListener()
