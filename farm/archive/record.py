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
HTTP, so every field is checked when it is read (:meth:`RunRecord.from_json`): a record that does
not parse is an error naming it, never a half-trusted one.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

import attrs

from ..errors import JobError
from ..values import name_problem

FORMAT = 1
SHA256 = re.compile(r"[0-9a-f]{64}")
#: an artifact's or a file's name: one plain path component
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]{0,199}")
#: the files of the run directory the archive keeps (what a reproduction compares with, and reads)
RUN_FILES = ("run.json", "results.csv", "reproduction.json")


@attrs.frozen
class Entry:
    """An object of the archive: its sha256 and size."""

    sha256: str
    size: int

    def as_json(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "size": self.size}

    @classmethod
    def from_json(cls, data: Any, where: str) -> "Entry":
        if not (isinstance(data, dict) and isinstance(data.get("sha256"), str) and SHA256.fullmatch(data["sha256"])
                and isinstance(data.get("size"), int) and not isinstance(data["size"], bool) and data["size"] >= 0):
            raise JobError(f"{where}: expected {{sha256: 64 hex digits, size: bytes}}")
        return cls(data["sha256"], data["size"])


@attrs.frozen
class TextFile(Entry):
    """The pipeline file or a recipe, as run: where it lay, and whether secrets were masked out of it."""

    path: str = ""
    masked: bool = False

    def as_json(self) -> dict[str, Any]:
        return {**super().as_json(), "path": self.path, "masked": self.masked}

    @classmethod
    def from_json(cls, data: Any, where: str) -> "TextFile":
        entry = Entry.from_json(data, where)
        path = data.get("path")
        if not isinstance(path, str) or tree_path_problem(path):
            raise JobError(f"{where}: path: {tree_path_problem(path) if isinstance(path, str) else 'missing'}")
        return cls(entry.sha256, entry.size, path, bool(data.get("masked", False)))


def tree_path_problem(path: str) -> str | None:
    """Why ``path`` cannot be laid out inside a directory (absolute, ``..``, empty parts), or None."""
    parts = PurePosixPath(path).parts
    if not parts or path.startswith("/") or "\\" in path or "\0" in path or any(p in ("", ".", "..") for p in parts):
        return f"{path!r} is not a relative path inside the archived tree"
    return None


@attrs.frozen
class ArchivedImage:
    """An image as it was booted: its manifest and every artifact the manifest lists."""

    name: str
    key: str
    manifest: Entry
    artifacts: dict[str, Entry]
    given: bool = False  # booted as given (--image, a lab's system image), not built by the run

    def entries(self) -> dict[str, Entry]:
        """What the image is made of, by what a message calls it."""
        return {"manifest.json": self.manifest, **self.artifacts}

    def as_json(self) -> dict[str, Any]:
        return {"key": self.key, "manifest": self.manifest.as_json(), "given": self.given,
                "artifacts": {n: e.as_json() for n, e in sorted(self.artifacts.items())}}

    @classmethod
    def from_json(cls, name: str, data: Any, where: str) -> "ArchivedImage":
        if not isinstance(data, dict) or not isinstance(data.get("artifacts"), dict):
            raise JobError(f"{where}: expected {{key, manifest, artifacts}}")
        for artifact in data["artifacts"]:
            if not _PLAIN.fullmatch(artifact):
                raise JobError(f"{where}.artifacts: {artifact!r} is not a plain file name")
        return cls(name, str(data.get("key") or ""), Entry.from_json(data.get("manifest"), f"{where}.manifest"),
                   {n: Entry.from_json(e, f"{where}.artifacts.{n}") for n, e in data["artifacts"].items()},
                   bool(data.get("given", False)))


@attrs.frozen
class RunRecord:
    run_id: str
    archived: str
    archived_by: str
    pipeline_name: str
    status: str
    started: str
    files: dict[str, Entry]
    pipeline: TextFile | None
    recipes: tuple[TextFile, ...]
    images: dict[str, ArchivedImage]
    missing: tuple[str, ...] = ()

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

    @classmethod
    def from_json(cls, data: Any, where: str) -> "RunRecord":
        """A record as the archive holds it; a JobError naming ``where`` and the field when it is not one."""
        if not isinstance(data, dict):
            raise JobError(f"{where}: not a run record (a JSON object)")
        if data.get("format") != FORMAT:
            raise JobError(f"{where}: format {data.get('format')!r}: this farm reads format {FORMAT} (a newer "
                           "farm archived it? upgrade farm)")
        run_id = data.get("run_id")
        if (problem := name_problem(run_id, "run id")):
            raise JobError(f"{where}: run_id: {problem}")
        files, images, recipes = data.get("files"), data.get("images"), data.get("recipes")
        if not isinstance(files, dict) or not isinstance(images, dict) or not isinstance(recipes, list):
            raise JobError(f"{where}: expected files and images (mappings) and recipes (a list)")
        for name in files:
            if name not in RUN_FILES:
                raise JobError(f"{where}: files: {name!r} is not a file the archive keeps ({', '.join(RUN_FILES)})")
        for name in images:
            if (problem := name_problem(name, "image name")):
                raise JobError(f"{where}: images: {problem}")
        missing = data.get("missing", [])
        if not isinstance(missing, list) or not all(isinstance(m, str) for m in missing):
            raise JobError(f"{where}: missing: expected a list of texts")
        pipeline = data.get("pipeline")
        return cls(run_id, str(data.get("archived", "")), str(data.get("archived_by", "")),
                   str(data.get("pipeline_name", "")), str(data.get("status", "")), str(data.get("started", "")),
                   {n: Entry.from_json(e, f"{where}: files.{n}") for n, e in files.items()},
                   TextFile.from_json(pipeline, f"{where}: pipeline") if pipeline is not None else None,
                   tuple(TextFile.from_json(r, f"{where}: recipes[{i}]") for i, r in enumerate(recipes)),
                   {n: ArchivedImage.from_json(n, i, f"{where}: images.{n}") for n, i in images.items()},
                   tuple(missing))
