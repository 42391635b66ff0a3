"""A run's page, its archive part: the images it booted as the archive holds them (each file a download,
``archive/<sha256>/<name>``), the files it ran from, the command that reproduces it, and its
reproductions with their verdicts (farm reproduce).

``archive/<sha256>/<name>`` is answered from the archive ``FARM_ARCHIVE`` names (farm.archive), by
``farm serve`` and in the static site (a copy, a symbolic link or nothing, as ``farm dashboard --files``
says for a run's files): the object's bytes are hashed before they are sent, one that is not what its
name says is refused; ``name`` only names the download. Text is masked (``FARM_SECRET_*``) as every
file the dashboard gives (farm.dashboard.files); the archive holds it masked already.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import attrs

from farm.results.record import open_atomic

from . import files

_OBJECT = re.compile(r"archive/([0-9a-f]{64})/([A-Za-z0-9_][A-Za-z0-9._+-]{0,199})")


@attrs.frozen
class ArchiveView:
    """What the archive holds of a run (``record`` None: not archived), and where the archive is."""

    location: str
    record: Any = None            # farm.archive.record.RunRecord
    problem: str = ""             # why the archive could not be read


def view(run_id: str) -> ArchiveView | None:
    """The archive's record of ``run_id``; None when archiving is off (``FARM_ARCHIVE=none``)."""
    from farm.archive import open_archive

    try:
        archive = open_archive()
    except Exception as exc:  # noqa: BLE001 - a page shows the problem, it does not fail
        return ArchiveView("", None, f"{type(exc).__name__}: {exc}")
    if archive is None:
        return None
    try:
        return ArchiveView(archive.location, archive.record(run_id))
    except Exception as exc:  # noqa: BLE001
        return ArchiveView(archive.location, None, str(exc))


def downloads(record: Any) -> list[tuple[str, str, str, Any]]:
    """(what, file, download name, entry) of everything the record names: each image's artifacts and
    manifest, the pipeline file and recipes as run, the run's own files."""
    out = []
    for name, image in sorted(record.images.items()):
        out += [(f"image {name}", artifact, artifact, entry) for artifact, entry in sorted(image.entries().items())]
    for text, what in ([(record.pipeline, "pipeline file")] if record.pipeline else []) + \
            [(r, "recipe") for r in record.recipes]:
        out.append((what, text.path + (" (secrets masked)" if text.masked else ""), Path(text.path).name, text))
    out += [("run", name, name, entry) for name, entry in sorted(record.files.items())]
    return out


@attrs.frozen
class ArchivePart:
    """What a run's page shows of the archive (``templates/macros.html``'s archive): ``view`` None when
    archiving is off; its record's files (``downloads``) and the command that reproduces the run when the
    archive holds it, else ``why`` it does not."""

    view: ArchiveView | None
    downloads: tuple = ()
    command: str = ""
    why: str = ""

    @property
    def archived(self) -> bool:
        return self.view is not None and self.view.record is not None


def part(run_id: str, archived: ArchiveView | None) -> ArchivePart:
    record = archived.record if archived is not None else None
    if archived is None:
        return ArchivePart(None)
    if record is None:
        return ArchivePart(archived, why=archived.problem
                           or f"not in the archive {archived.location}: farm archive RUN_DIR puts it there")
    setting = f"FARM_ARCHIVE={archived.location} " if os.environ.get("FARM_ARCHIVE") else ""
    return ArchivePart(archived, tuple(downloads(record)), f"{setting}farm reproduce {run_id}")


def is_object_path(path: str) -> bool:
    return _OBJECT.fullmatch(path) is not None


def read_object(path: str) -> files.RunFile | None:
    """``archive/<sha256>/<name>`` from the archive, hashed before it is given; None when there is no
    such object or it is too large for the dashboard; an ArchiveError (farm serve: a 500 saying so)
    when it is not what its name says."""
    from farm.archive import open_archive
    from farm.archive.record import Entry

    match = _OBJECT.fullmatch(path)
    archive = open_archive() if match else None
    if archive is None or not match:
        return None
    sha256, name = match.groups()
    size = _size_of(archive, sha256)
    if size is None or size > files.MAX_BYTES:
        return None
    return files.from_bytes(name, archive.read(Entry(sha256, size), f"archive/{sha256}/{name}"))


def _size_of(archive: Any, sha256: str) -> int | None:
    path = getattr(archive, "object_path", None)
    if path is None:  # an archive over HTTP: the dashboard reads a lab's share, not another server
        return None
    try:
        return path(sha256).stat().st_size
    except OSError:
        return None


def write_objects(records: Sequence[Any], out: Path, mode: str, make_dirs: Callable[[Path, Path], None]) -> list[Path]:
    """The archived files of ``records`` into the static site's ``archive/<sha256>/<name>``, each once:
    copied (hashed first) or linked to the archive's object (``mode``: farm dashboard's ``--files``);
    ``make_dirs(out, folder)`` makes a folder of the site (refusing a symbolic link on the way)."""
    from farm.archive import ArchiveError, open_archive

    archive = open_archive()
    if archive is None or mode == "none":
        return []
    written = []
    done: set[tuple[str, str]] = set()
    for record in records:
        for _what, _label, name, entry in downloads(record):
            if (entry.sha256, name) in done:
                continue
            done.add((entry.sha256, name))
            target = out / "archive" / entry.sha256 / name
            make_dirs(out, target.parent)
            if mode == "link" and hasattr(archive, "object_path"):
                source = archive.object_path(entry.sha256)
                if not source.is_file():
                    continue
                if target.is_symlink() or target.exists():
                    target.unlink()
                target.symlink_to(source.resolve())
            else:
                try:
                    got = read_object(f"archive/{entry.sha256}/{name}")
                except ArchiveError as exc:
                    print(f"farm: warning: dashboard: {exc}: not copied", file=sys.stderr)
                    continue
                if got is None:
                    continue
                with open_atomic(target, "wb") as f:
                    f.write(got.data)
            written.append(target)
    return written
