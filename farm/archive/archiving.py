"""Archiving one run directory: what it booted, the files it ran from, what it measured.

    result = archive_run(Path("results/20261129-224818-e762"), archive)

Read from the run's ``run.json``: every image it booted (its directory and manifest: each artifact's
sha256 and size), the pipeline file (archived only when its sha256 is still the run's) and the
recipes that file names, and the run's own ``run.json``, ``results.csv`` (and a reproduction's
``reproduction.json``). Each artifact is hashed as it is copied; one that is not in its image
directory any more, or not what the run recorded, is named in the record's ``missing`` and its image
left out (``farm reproduce`` then says so, naming it), never archived under the wrong sha256.

**Secrets** (farm.secrets) never reach the archive unmasked: every text file (the pipeline, the
recipes, the manifests, run.json, results.csv) is masked as it is archived, after its own ``!secret``
values are registered by reading it; one that changed is marked ``masked`` (its bytes are not the file
as run: ``farm reproduce --pipeline FILE`` takes the lab's own copy then). Kernels, initrds and DTBs
are archived as built: farm builds them from Debian packages, its own init scripts and the recipe's
programs, never from a secret.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import attrs

from ..config import load_json, load_yaml, read_bytes
from ..errors import JobError
from ..results.record import now_iso
from ..secrets import mask
from ..values import name_problem
from .directory import DirArchive, SourceChanged
from .record import RUN_FILES, ArchivedImage, Entry, RunRecord, TextFile

MAX_RUN_JSON_BYTES = 64 << 20
MAX_RESULTS_BYTES = 256 << 20


@attrs.frozen
class Archived:
    """What archiving a run did."""

    record: RunRecord
    new_objects: int
    new_bytes: int
    unchanged: bool = False  # the archive had this very run already


def run_info(run_dir: Path) -> dict[str, Any]:
    """The run's run.json, with a run id that can name a file; a JobError otherwise."""
    info = load_json(run_dir / "run.json", "run.json", limit=MAX_RUN_JSON_BYTES)
    if (problem := name_problem(info.get("run_id"), "run id")):
        raise JobError(f"{run_dir / 'run.json'}: run_id: {problem}")
    return info


def archivable(info: dict[str, Any]) -> bool:
    """Whether a run booted images (an import, a pytest session of its own images has none)."""
    return "imported_from" not in info and isinstance(info.get("images"), dict) and bool(info["images"])


def _masked_text(data: bytes, path: Path | None) -> tuple[bytes, bool]:
    """``data`` (a text file) with every secret masked, its own ``!secret`` values registered first
    (reading it through farm's YAML loader); whether masking changed it."""
    if path is not None and path.suffix in (".yaml", ".yml"):
        try:
            load_yaml(path)
        except JobError:
            pass  # a file this farm cannot read still has the secrets the environment names masked
    text = data.decode("utf-8", errors="surrogateescape")
    masked = mask(text)
    return masked.encode("utf-8", errors="surrogateescape"), masked != text


class _Writer:
    """Puts a run's objects into the archive, counting what was new."""

    def __init__(self, archive: DirArchive):
        self.archive, self.new_objects, self.new_bytes = archive, 0, 0

    def text(self, data: bytes, path: Path | None = None) -> tuple[Entry, bool]:
        data, masked = _masked_text(data, path)
        entry, new = self.archive.put_bytes(data)
        self._count(entry, new)
        return entry, masked

    def file(self, path: Path, entry: Entry) -> None:
        self._count(entry, self.archive.put_file(path, entry))

    def _count(self, entry: Entry, new: bool) -> None:
        if new:
            self.new_objects += 1
            self.new_bytes += entry.size


def _images(info: dict[str, Any], put: _Writer, missing: list[str]) -> dict[str, ArchivedImage]:
    images: dict[str, ArchivedImage] = {}
    for name, recorded in sorted(info["images"].items()):
        if not isinstance(recorded, dict) or not isinstance(recorded.get("artifacts"), dict) \
                or name_problem(name, "image name"):
            missing.append(f"image {name}: run.json does not record its manifest")
            continue
        manifest = {k: v for k, v in recorded.items() if k not in ("dir", "given")}
        folder = Path(str(recorded.get("dir", "")))
        artifacts, lost = {}, []
        for artifact, meta in sorted(manifest["artifacts"].items()):
            try:
                entry = Entry.from_json(meta, f"run.json images.{name}.artifacts.{artifact}")
                if "/" in artifact or artifact in (".", ".."):
                    raise JobError(f"{artifact!r} is not a plain file name")
            except JobError as exc:
                lost.append(f"{artifact}: {exc}")
                continue
            source = folder / artifact
            try:
                if not put.archive.has(entry):
                    if not source.is_file():
                        lost.append(f"{artifact}: not in {folder} any more (rebuild the same image, or archive "
                                    "its directory with the run, before the cache lets it go)")
                        continue
                    put.file(source, entry)
            except SourceChanged as exc:
                lost.append(f"{artifact}: {source} is not the file the run booted: {exc}")
                continue
            artifacts[artifact] = entry
        if lost:
            missing += [f"image {name}: {why}" for why in lost]
            continue
        manifest_entry, _ = put.text((json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())
        images[name] = ArchivedImage(manifest_entry, artifacts, bool(recorded.get("given", False)), name=name,
                                     key=str(manifest.get("key") or ""))
    return images


def recipe_paths(pipeline_path: Path) -> list[Path]:
    """The recipes a pipeline file names: ``image``, ``images.<arch>``, each setup's ``image`` and the
    ``image`` of a setup's flow settings (a guest's recipe), relative to the file's directory. Read
    from the YAML alone (farm.run.model reads it whole, its benchmarks too: a run's own registry,
    a pytest session's, is not this process's)."""
    from ..flows import setup_fields

    doc = load_yaml(pipeline_path, "pipeline file")
    found: list[str] = []
    if isinstance(doc.get("image"), str):
        found.append(doc["image"])
    if isinstance(doc.get("images"), dict):
        found += [v for v in doc["images"].values() if isinstance(v, str)]
    for setup in doc.get("setups") or []:
        if not isinstance(setup, dict):
            continue
        if isinstance(setup.get("image"), str):
            found.append(setup["image"])
        for key in setup_fields():
            settings = setup.get(key)
            if isinstance(settings, dict) and isinstance(settings.get("image"), str):
                found.append(settings["image"])
    base = Path(pipeline_path).parent
    return list(dict.fromkeys(Path(p) if Path(p).is_absolute() else base / p for p in found))


def _tree(info: dict[str, Any], put: _Writer, missing: list[str]) -> tuple[TextFile | None, tuple[TextFile, ...]]:
    """The pipeline file as run and its recipes, their paths relative to the directory holding them all."""
    path = Path(str(info.get("pipeline") or ""))
    if not info.get("pipeline"):
        return None, ()
    try:
        data = read_bytes(path, "pipeline file")
    except JobError as exc:
        missing.append(f"pipeline file: {exc}")
        return None, ()
    if hashlib.sha256(data).hexdigest() != info.get("pipeline_sha256"):
        missing.append(f"pipeline file: {path} is not the file as run any more (its sha256 differs from run.json's "
                       "pipeline_sha256); farm reproduce needs --pipeline FILE with the file as run")
        return None, ()
    try:
        recipes = recipe_paths(path)
    except JobError as exc:
        missing.append(f"recipes: {exc}")
        recipes = []
    files = [path, *(p for p in recipes if p.is_file())]
    missing += [f"recipe {p}: not found" for p in recipes if not p.is_file()]
    absolute = [Path(os.path.abspath(p)) for p in files]
    root = Path(os.path.commonpath([str(p.parent) for p in absolute]))
    entries = []
    for source, full in zip(files, absolute):
        try:
            entry, masked = put.text(data if source is path else read_bytes(source, "recipe"), source)
        except JobError as exc:
            missing.append(f"recipe {source}: {exc}")
            continue
        entries.append(TextFile(entry.sha256, entry.size, full.relative_to(root).as_posix(), masked))
    return entries[0], tuple(entries[1:])


def archive_run(run_dir: Path, archive: DirArchive) -> Archived | None:
    """Archive ``run_dir`` (see the module docstring); None when it booted no image (an import, a
    pytest session's results, which have no run.json). A run archived
    already is archived again only when its run.json changed (a resumed run): an image the first
    archiving kept and this one cannot (the cache let it go since) stays as it was."""
    run_dir = Path(run_dir)
    if not (run_dir / "run.json").is_file():  # a pytest session's records: no image recorded
        return None
    if not archivable(load_json(run_dir / "run.json", "run.json", limit=MAX_RUN_JSON_BYTES)):
        return None
    info = run_info(run_dir)
    run_json = read_bytes(run_dir / "run.json", "run.json", MAX_RUN_JSON_BYTES)
    with archive.locked():
        archive.clean_abandoned()
        put = _Writer(archive)
        run_json_entry, _ = put.text(run_json)
        old = archive.record(info["run_id"])
        if old is not None and old.files.get("run.json") == run_json_entry and not old.missing:
            return Archived(old, put.new_objects, put.new_bytes, unchanged=True)
        missing: list[str] = []
        files = {"run.json": run_json_entry}
        for name in RUN_FILES[1:]:
            if (run_dir / name).is_file():
                files[name], _ = put.text(read_bytes(run_dir / name, name, MAX_RESULTS_BYTES))
        images = _images(info, put, missing)
        if old is not None:  # what an earlier archiving of this run kept, and this one could not
            for name, image in old.images.items():
                if name not in images and all(archive.has(e) for e in image.entries().values()):
                    images[name] = image
                    missing = [m for m in missing if not m.startswith(f"image {name}: ")]
        pipeline, recipes = _tree(info, put, missing)
        record = RunRecord(run_id=info["run_id"], archived=now_iso(), archived_by=getpass.getuser(),
                           pipeline_name=str(info.get("pipeline_name") or ""), status=str(info.get("status") or ""),
                           started=str(info.get("started") or ""), files=files, pipeline=pipeline, recipes=recipes,
                           images=images, missing=tuple(missing))
        archive.write_record(record)
    return Archived(record, put.new_objects, put.new_bytes)
