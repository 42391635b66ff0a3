"""What ``farm reproduce`` takes from the archive, laid out in farm's cache (``$FARM_CACHE/archive/``).

    <cache>/archive/runs/<run id>/            the original's run.json and results.csv (a run directory
                                              farm compare and farm report read)
    <cache>/archive/images/<name>-<sha16>/    an image as booted: manifest.json and its artifacts
    <cache>/archive/pipelines/<sha16>/…       the pipeline file as run, its recipes in their places

Each folder is fetched into a private directory beside it (every object sha256-checked as it is
read: farm.archive.directory), then renamed into place under a lock, so concurrent reproductions
share it and a killed one leaves nothing half-made under the name. A folder there already is checked
(every file hashed) before it is used; a damaged one is fetched again, and says so.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Mapping

from ..images import cachefs
from ..images.image import Image, load_image
from . import ArchiveError
from .record import ArchivedImage, Entry, RunRecord, TextFile

FETCH_PREFIX = ".fetch-"


def _intact(folder: Path, files: Mapping[str, Entry]) -> str | None:
    """Why ``folder`` is not exactly ``files`` (relative path -> entry), or None."""
    for rel, entry in files.items():
        path = folder / rel
        try:
            if path.is_symlink() or not path.is_file() or path.stat().st_size != entry.size:
                return f"{rel} is missing or of another size"
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
        except OSError as exc:
            return f"{rel}: {exc.strerror}"
        if digest.hexdigest() != entry.sha256:
            return f"{rel} does not match its sha256"
    return None


def materialise(folder: Path, files: Mapping[str, Entry], archive: Any, what: str) -> Path:
    """``folder`` holding exactly ``files`` (relative path -> entry) fetched from ``archive``; ``what``
    names it in errors (an :class:`ArchiveError` names the file that is missing or corrupt)."""
    cachefs.clean_abandoned(folder.parent, FETCH_PREFIX)
    with cachefs.locked(folder.with_name(f".{folder.name}.lock")):
        if folder.exists() or folder.is_symlink():
            problem = _intact(folder, files)
            if problem is None:
                return folder
            cachefs.say(f"{folder} is damaged ({problem}): fetching it again")
            cachefs.discard(folder)
        with cachefs.private_dir(folder.parent, FETCH_PREFIX) as tmp:
            for rel, entry in files.items():
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                archive.fetch(entry, tmp / rel, f"{what}: {rel}")
            os.replace(tmp, folder)
    return folder


def cache_root(cache: Path) -> Path:
    return cache / "archive"


def fetch_run(record: RunRecord, archive: Any, cache: Path) -> Path:
    """The original's run.json and results.csv, as a run directory in the cache."""
    files = {n: e for n, e in record.files.items() if n in ("run.json", "results.csv")}
    if "run.json" not in files:
        raise ArchiveError(f"run {record.run_id}: the archive's record has no run.json")
    return materialise(cache_root(cache) / "runs" / record.run_id, files, archive, f"run {record.run_id}")


def fetch_image(run_id: str, image: ArchivedImage, archive: Any, cache: Path) -> Image:
    """An image of the run as it was booted (its manifest and every artifact), ready to boot."""
    folder = cache_root(cache) / "images" / f"{image.name}-{image.manifest.sha256[:16]}"
    path = materialise(folder, image.entries(), archive, f"run {run_id}: image {image.name}")
    loaded = load_image(path)
    recorded = {n: a.get("sha256") for n, a in loaded.manifest["artifacts"].items()}
    if recorded != {n: e.sha256 for n, e in image.artifacts.items()}:
        raise ArchiveError(f"run {run_id}: image {image.name}: its archived manifest.json lists other artifacts "
                           "than the record: refused")
    return Image(path, loaded.manifest, cached=True)


def fetch_tree(run_id: str, pipeline: TextFile, recipes: tuple[TextFile, ...], archive: Any, cache: Path) -> Path:
    """The pipeline file as run with its recipes in their places; the pipeline file's path."""
    files: dict[str, Entry] = {t.path: Entry(t.sha256, t.size) for t in (pipeline, *recipes)}
    name = hashlib.sha256("\n".join(f"{p} {e.sha256}" for p, e in sorted(files.items())).encode()).hexdigest()
    folder = materialise(cache_root(cache) / "pipelines" / name[:16], files, archive, f"run {run_id}: pipeline")
    return folder / pipeline.path

