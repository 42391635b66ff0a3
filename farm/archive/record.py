"""What the archive holds of one run: its record, ``runs/<run id>.json``, naming every object by sha256.

    {"format": 1, "run_id": "20261129-224818-e762", "archived": "...", "archived_by": "ci",
     "pipeline_name": "smoke", "status": "passed", "started": "...",
     "files":    {"run.json": {"sha256": "…", "size": 4711}, "results.csv": {…}},
     "pipeline": {"path": "pipelines/smoke.yaml", "sha256": "…", "size": 612, "masked": false},
     "recipes":  [{"path": "images/maaxboard-bench.yaml", "sha256": "…", "size": 903, "masked": false}],
     "images":   {"maaxboard-bench": {"key": "…", "manifest": {"sha256": "…", "size": 2210},
                                      "artifacts": {"Image": {"sha256": "…", "size": 31…}, …}}},
     "missing":  ["image maaxboard-bench: Image: not in ~/.cache/farm/images/… any more"]}

The pipeline file and the recipes keep their places relative to one another (``path``: relative to
the directory that holds them all), so the pipeline's ``../images/x.yaml`` finds its recipe when the
tree is laid out again (``farm reproduce``). A text file that held a secret is archived masked
(``masked``: its bytes are not the file as run). A record is read from a shared directory or over
HTTP, so every field is checked when it is read (:meth:`RunRecord.from_json`, through the classes below,
declared with farm.schema): a record that does not parse is an error naming it, never a half-trusted one.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any, Literal, TypeVar

import attrs

from ..errors import JobError
from ..schema import Invalid, got, setting
from ..values import name_problem

T = TypeVar("T")

FORMAT = 1
SHA256 = re.compile(r"[0-9a-f]{64}")
#: an artifact's or a file's name: one plain path component
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]{0,199}")
#: the files of the run directory the archive keeps (what a reproduction compares with, and reads)
RUN_FILES = ("run.json", "results.csv", "reproduction.json")


def _sha256_problem(value: str) -> str | None:
    return None if SHA256.fullmatch(value) else f"{value!r} is not a sha256 (64 lowercase hex digits)"


def _plain_names(names: Any, what: str) -> None:
    """Refuse a name of ``names`` that is not one plain path component (it becomes a file name)."""
    for name in names:
        if not _PLAIN.fullmatch(name):
            raise Invalid(f"{name!r} is not a plain file name", key=(what, name))


@attrs.frozen
class Entry:
    """An object of the archive: its sha256 and size."""

    sha256: str = setting(check=_sha256_problem, doc="its sha256, its name in the archive")
    size: int = setting(check=lambda size: None if size >= 0 else f"{size}: not a size in bytes", doc="its size in bytes")

    def as_json(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "size": self.size}

    @classmethod
    def from_json(cls, data: Any, where: str) -> "Entry":
        """``data`` read as an entry; a JobError naming ``where`` and the field when it is not one."""
        return read_record(data, where, cls)


@attrs.frozen
class TextFile(Entry):
    """The pipeline file or a recipe, as run: where it lay, and whether secrets were masked out of it."""

    path: str = setting("", check=lambda path: tree_path_problem(path),
                        doc="where it lay, relative to the directory that holds the pipeline and its recipes")
    masked: bool = setting(False, doc="secrets were masked out of it: its bytes are not the file as run")

    def as_json(self) -> dict[str, Any]:
        return {**super().as_json(), "path": self.path, "masked": self.masked}


def tree_path_problem(path: str) -> str | None:
    """Why ``path`` cannot be laid out inside a directory (absolute, ``..``, empty parts), or None."""
    parts = PurePosixPath(path).parts
    if not parts or path.startswith("/") or "\\" in path or "\0" in path or any(p in ("", ".", "..") for p in parts):
        return f"{path!r} is not a relative path inside the archived tree"
    return None


@attrs.frozen
class ArchivedImage:
    """An image as it was booted: its manifest and every artifact the manifest lists."""

    #: its name: the record's key of it
    name: str = setting("", read=False, kw_only=True)
    key: str = setting("", doc="farm's content address of the image (its manifest's key)", kw_only=True)
    manifest: Entry = setting(doc="its manifest.json")
    artifacts: dict[str, Entry] = setting(doc="every file of the image, by plain file name")
    given: bool = setting(False, doc="booted as given (--image, a lab's system image), not built by the run")

    def entries(self) -> dict[str, Entry]:
        """What the image is made of, by what a message calls it."""
        return {"manifest.json": self.manifest, **self.artifacts}

    def as_json(self) -> dict[str, Any]:
        return {"key": self.key, "manifest": self.manifest.as_json(), "given": self.given,
                "artifacts": {n: e.as_json() for n, e in sorted(self.artifacts.items())}}

    def validate(self, given: Any) -> None:
        _plain_names(self.artifacts, "artifacts")


def _format_problem(value: int) -> str | None:
    return None if value == FORMAT else f"{value!r}: this farm reads format {FORMAT} (a newer farm archived it? upgrade farm)"


@attrs.frozen
class RecordFormat:
    """The format of a record, read before the record: another format is another record."""

    OPEN = "the record's fields, read by the class of its format"

    format: int = setting(check=_format_problem)


@attrs.frozen
class RunRecord:
    """``runs/<run id>.json``: what the archive holds of one run (the module docstring)."""

    OPEN = "a field a later farm of the same format may add: not read"

    run_id: str = setting(check=lambda value: name_problem(value, "run id"), doc="the run's id")
    archived: str = setting(doc="when it was archived")
    archived_by: str = setting(doc="who archived it")
    pipeline_name: str = setting(doc="its pipeline's name")
    status: str = setting(doc="how the run ended")
    started: str = setting(doc="when the run started")
    files: dict[Literal["run.json", "results.csv", "reproduction.json"], Entry] = setting(
        doc="the files of the run directory the archive keeps")
    pipeline: TextFile | None = setting(None, doc="the pipeline file as run", kw_only=True)
    recipes: tuple[TextFile, ...] = setting(doc="the recipes as run")
    images: dict[str, ArchivedImage] = setting(doc="the images it booted, by name")
    missing: tuple[str, ...] = setting((), doc="what could not be archived, and why")

    def objects(self) -> dict[str, Entry]:
        """Every object the record names, by sha256."""
        found: dict[str, Entry] = {e.sha256: e for e in self.files.values()}
        for text in (*([self.pipeline] if self.pipeline else []), *self.recipes):
            found[text.sha256] = Entry(text.sha256, text.size)
        for image in self.images.values():
            found.update({e.sha256: e for e in image.entries().values()})
        return found

    @property
    def size(self) -> int:
        return sum(e.size for e in self.objects().values())

    def as_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "run_id": self.run_id, "archived": self.archived, "archived_by": self.archived_by,
                "pipeline_name": self.pipeline_name, "status": self.status, "started": self.started,
                "files": {n: e.as_json() for n, e in sorted(self.files.items())},
                "pipeline": self.pipeline.as_json() if self.pipeline else None,
                "recipes": [r.as_json() for r in self.recipes],
                "images": {n: i.as_json() for n, i in sorted(self.images.items())},
                "missing": list(self.missing)}

    def validate(self, given: Any) -> None:
        for name in self.images:
            if (problem := name_problem(name, "image name")):
                raise Invalid(problem, key=("images", name))

    @classmethod
    def from_json(cls, data: Any, where: str) -> "RunRecord":
        """A record as the archive holds it; a JobError naming ``where`` and the field when it is not one."""
        if not isinstance(data, dict):
            raise JobError(f"{where}: not a run record (a JSON object)")
        read_record(data, where, RecordFormat)
        record = read_record(data, where, cls)
        return attrs.evolve(record, images={n: attrs.evolve(i, name=n) for n, i in record.images.items()})


def checked_run_id(record: RunRecord, run_id: str, where: str) -> RunRecord:
    """``record``, read as the record of ``run_id`` (its file's name): a JobError when it says it is another
    run's (a record copied or renamed by hand would reproduce another run than the one asked for)."""
    if record.run_id != run_id:
        raise JobError(f"{where}: run_id: {record.run_id!r} is not the run its file names ({run_id!r}): the record "
                       "was renamed or copied by hand; refused")
    return record


def read_record(data: Any, where: str, cls: type[T]) -> T:
    """``data`` (JSON of the archive, read from ``where``) read as ``cls``: every field checked, a problem a
    JobError ``where: field: problem``."""
    from ..config import json_node
    from ..schema.read import structure

    if not isinstance(data, dict):
        raise JobError(f"{where}: expected a mapping, got {got(data)}")
    return structure(json_node(data, where), cls)
