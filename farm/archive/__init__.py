"""The image archive: every image a run booted, kept by sha256 where the whole lab can fetch it again.

    $FARM_ARCHIVE/                       a directory the lab shares (the TFTP server's tree, an NFS mount)
        objects/<aa>/<sha256>            every file once, named by its sha256, read-only (0444)
        runs/<run id>.json               what one run used: its images, pipeline, recipes, run.json, results
        tmp/put-<random>/                a write in progress (its .lock held by the writer)
        .lock                            writers and readers hold it shared, ``farm archive gc`` exclusive

``farm run`` archives what it booted when its results are complete: :data:`farm.archive.hook.ARCHIVE`
is a listener of the runner's ``run_published`` hook (farm.run.events), as the results store is;
``farm archive RUN_DIR`` does the same for a run that ran before, ``farm reproduce RUN`` fetches it
back (farm.archive.reproduce). How it holds up:

- **atomic**: an object is written into a private directory, fsync'ed, checked against the sha256
  the run recorded, and only then linked under its name; a run's record is renamed into place after
  all its objects. A writer that dies leaves its private directory, never a partial object (the next
  writer or ``gc`` removes it once its lock is free: farm.images.cachefs);
- **deduplicated**: an object that is there already is not written again; two runs archiving the
  same image at once both succeed, and one copy stays (the second link fails with EEXIST: fine);
- **verified on read**: every fetch hashes what it reads; a missing or corrupt object is an
  :class:`ArchiveError` naming the run, the image and the file;
- **retained by a rule**: ``farm archive gc --keep …`` (farm.archive.retention) removes the records
  the rule lets go and then the objects no record names, never a run a baseline or a stored
  qualification references.

``FARM_ARCHIVE`` chooses (:func:`open_archive`): a directory path; an ``http(s)://`` URL of an
archive served read-only (``farm archive serve``: farm.archive.http); ``none`` turns archiving off;
unset, ``archive/`` beside the results store (``~/.local/share/farm/archive`` by default).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from ..errors import InfrastructureError, JobError

ARCHIVE_ENV = "FARM_ARCHIVE"
DEFAULT_ARCHIVE = Path("~/.local/share/farm/archive")
DISABLED = frozenset({"none", "off"})


class ArchiveError(InfrastructureError):
    """The archive cannot give what it should: an object missing or corrupt, the directory unreadable."""


class NotArchived(JobError):
    """The run asked for is not in the archive."""


def archive_location(environ: Mapping[str, str] | None = None) -> str | None:
    """Where ``FARM_ARCHIVE`` says the archive is (a path or an http(s) URL), None when it is off;
    unset, ``archive/`` beside the results store's SQLite file (``FARM_DB``), else the default."""
    environ = os.environ if environ is None else environ
    value = (environ.get(ARCHIVE_ENV) or "").strip()
    if value.lower() in DISABLED:
        return None
    if value:
        return value if value.startswith(("http://", "https://")) else str(Path(value).expanduser())
    return str(_beside_store(environ))


def _beside_store(environ: Mapping[str, str]) -> Path:
    try:
        from ..store.db import database_url

        url = database_url(environ)
    except (JobError, ImportError):
        url = None
    if url and url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        return Path(url[len("sqlite:///"):]).parent / "archive"
    return DEFAULT_ARCHIVE.expanduser()


def open_archive(environ: Mapping[str, str] | None = None, location: str | None = None):
    """The archive ``location`` (default: :func:`archive_location`) names: a
    :class:`~farm.archive.directory.DirArchive`, or an :class:`~farm.archive.http.HttpArchive` to
    read from; None when archiving is off."""
    location = location if location is not None else archive_location(environ)
    if location is None:
        return None
    if location.startswith(("http://", "https://")):
        from .http import HttpArchive

        return HttpArchive(location)
    from .directory import DirArchive

    return DirArchive(Path(location))
