"""An archive in a directory the lab shares: objects by sha256, run records, the lock (layout: farm.archive).

    archive = DirArchive(Path("/srv/tftp/archive"))
    with archive.locked():                              # shared: gc waits until this block is done
        archive.put_file(Path(".../Image"), Entry(sha256, size), "image maaxboard-bench: Image")
        archive.write_record(record)
    archive.fetch(entry, Path("/tmp/x/Image"), "run R: image maaxboard-bench: Image")   # sha256-checked

Every write goes to a private directory under ``tmp/`` (farm.images.cachefs.private_dir: its lock
file says whether its writer still lives) and is linked under its final name only once it is whole,
fsync'ed and hashed to what the run recorded: a reader never sees a partial object, whatever kills
the writer. Reading hashes everything it reads; nothing wrong is ever handed on.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import io
import os
from pathlib import Path
from typing import IO, Callable, ClassVar, Iterator

import attrs

from ..config import load_json
from ..errors import JobError
from ..images import cachefs
from ..results.record import open_atomic, to_json, write_text_atomic
from ..values import name_problem
from . import ArchiveError
from .record import SHA256, Entry, RunRecord, checked_run_id

CHUNK = 1 << 20
PUT_PREFIX = "put-"
#: a run record is small; one far larger was not written by farm
MAX_RECORD_BYTES = 16 << 20
#: errors of os.link on a file system without hard links (then an object is renamed into place)
_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS, errno.EXDEV}


class SourceChanged(Exception):
    """A file to archive is not the one the run recorded (its bytes hash to another sha256)."""


def copy_hashing(src: IO[bytes], dst: IO[bytes], limit: int | None = None) -> tuple[str, int]:
    """Copy ``src`` to ``dst`` in chunks; the sha256 and size of what was copied. With ``limit``, at most
    ``limit + 1`` bytes are read: an object longer than it is told apart (its size is over ``limit``) without
    reading the rest (a server that sends 200 MB for a 4 kB object is not read to the end)."""
    digest, size = hashlib.sha256(), 0
    while True:
        want = CHUNK if limit is None else min(CHUNK, limit + 1 - size)
        block = src.read(want) if want > 0 else b""
        if not block:
            break
        digest.update(block)
        dst.write(block)
        size += len(block)
    return digest.hexdigest(), size


#: how objects are copied (a test replaces it to kill a writer half way)
_copy: Callable[[IO[bytes], IO[bytes]], tuple[str, int]] = copy_hashing


class _Discard:
    def write(self, block: bytes) -> int:
        return len(block)


@attrs.frozen
class DirArchive:
    root: Path
    writable: ClassVar[bool] = True

    @property
    def location(self) -> str:
        return str(self.root)

    def object_path(self, sha256: str) -> Path:
        if not SHA256.fullmatch(sha256):
            raise ValueError(f"not a sha256: {sha256!r}")
        return self.root / "objects" / sha256[:2] / sha256

    def record_path(self, run_id: str) -> Path:
        if (problem := name_problem(run_id, "run id")):
            raise JobError(problem)
        return self.root / "runs" / f"{run_id}.json"

    # --- the lock: shared by writers and readers, exclusive for gc ---
    @contextlib.contextmanager
    def locked(self, *, exclusive: bool = False, create: bool = True) -> Iterator[None]:
        """Hold the archive's lock for the block (shared, or ``exclusive``: ``gc``). A reader
        (``create=False``) of an archive it cannot write reads without it."""
        path = self.root / ".lock"
        try:
            if create:
                self.root.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
            else:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            if create:
                raise ArchiveError(f"archive {self.location}: cannot write it: {exc.strerror}") from None
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)  # closing drops the lock

    def reading(self) -> contextlib.AbstractContextManager[None]:
        """Hold the lock shared while reading a run (gc removes nothing meanwhile)."""
        return self.locked(create=False)

    def clean_abandoned(self) -> list[Path]:
        """Remove the writes whose writer died (their lock is free)."""
        return cachefs.clean_abandoned(self.root / "tmp", PUT_PREFIX)

    # --- objects ---
    def has(self, entry: Entry) -> bool:
        """Whether the object is there with its size (its bytes are checked when it is read)."""
        try:
            st = os.stat(self.object_path(entry.sha256), follow_symlinks=False)
        except OSError:
            return False
        return st.st_size == entry.size and (st.st_mode & 0o170000) == 0o100000

    def put_file(self, source: Path, entry: Entry) -> bool:
        """Archive ``source`` as ``entry``; False when the object is there already. SourceChanged when
        its bytes are not the sha256 and size the run recorded (nothing is written then)."""
        if self.has(entry):
            return False
        with open(source, "rb") as src:
            return self._put(src, entry)

    def put_bytes(self, data: bytes) -> tuple[Entry, bool]:
        """Archive ``data``: its entry, and whether it was new."""
        entry = Entry(hashlib.sha256(data).hexdigest(), len(data))
        return entry, (not self.has(entry) and self._put(io.BytesIO(data), entry))

    def _put(self, src: IO[bytes], entry: Entry) -> bool:
        final = self.object_path(entry.sha256)
        with cachefs.private_dir(self.root / "tmp", PUT_PREFIX) as tmp:
            part = tmp / "object"
            with open(part, "xb") as dst:
                sha, size = _copy(src, dst)
                dst.flush()
                os.fsync(dst.fileno())
            if (sha, size) != (entry.sha256, entry.size):
                raise SourceChanged(f"its bytes hash to {sha} ({size} bytes), the run recorded {entry.sha256} "
                                    f"({entry.size} bytes)")
            os.chmod(part, 0o444)
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(part, final)
            except FileExistsError:  # another writer was first (fine), or a damaged object of another size
                if not self.has(entry):
                    os.replace(part, final)
            except OSError as exc:
                if exc.errno not in _NO_LINKS:
                    raise
                os.replace(part, final)  # atomic too; a concurrent writer renames the same bytes
        return True

    def fetch(self, entry: Entry, dest: Path, what: str) -> None:
        """Copy the object to ``dest`` (replaced in one step), its bytes checked against ``entry``;
        an :class:`ArchiveError` naming ``what`` when it is missing or corrupt (``dest`` untouched)."""
        with open_atomic(dest, "wb") as dst:
            self._read_into(entry, dst, what)

    def read(self, entry: Entry, what: str) -> bytes:
        """The object's bytes, checked against ``entry`` (an :class:`ArchiveError` naming ``what``)."""
        out = io.BytesIO()
        self._read_into(entry, out, what)
        return out.getvalue()

    def _read_into(self, entry: Entry, dst: IO[bytes] | None, what: str) -> None:
        """Read the object (into ``dst``, or only hashing it), checking it against ``entry``."""
        path = self.object_path(entry.sha256)
        try:
            src = open(path, "rb")
        except FileNotFoundError:
            raise ArchiveError(f"{what}: missing from the archive {self.location} (no object {entry.sha256})") from None
        except OSError as exc:
            raise ArchiveError(f"{what}: cannot read {path}: {exc.strerror}") from None
        with src:
            sha, size = copy_hashing(src, dst if dst is not None else _Discard(), limit=entry.size)
        if (sha, size) != (entry.sha256, entry.size):
            raise ArchiveError(f"{what}: corrupt in the archive: {path} hashes to {sha} ({size} bytes), not to its "
                               f"name ({entry.size} bytes): refused")

    def check(self, entry: Entry, what: str) -> None:
        """Hash the object: an :class:`ArchiveError` naming ``what`` when it is missing or corrupt."""
        self._read_into(entry, None, what)

    def object_shas(self) -> set[str]:
        """The sha256 of every object on disk."""
        folder = self.root / "objects"
        if not folder.is_dir():
            return set()
        return {p.name for d in folder.iterdir() if d.is_dir() for p in d.iterdir() if SHA256.fullmatch(p.name)}

    def remove_object(self, sha256: str) -> int:
        """Remove an object (``gc``, holding the lock exclusively); the bytes it freed."""
        path = self.object_path(sha256)
        try:
            size = path.stat().st_size
            path.unlink()
        except FileNotFoundError:
            return 0
        return size

    # --- run records ---
    def record(self, run_id: str) -> RunRecord | None:
        """The record of ``run_id``, or None when it is not archived; a JobError when it is unreadable."""
        path = self.record_path(run_id)
        if not path.exists():
            return None
        return checked_run_id(RunRecord.from_json(load_json(path, "archived run record", limit=MAX_RECORD_BYTES),
                                                  str(path)), run_id, str(path))

    def write_record(self, record: RunRecord) -> None:
        """Put the record in place in one step (its objects are there already)."""
        path = self.record_path(record.run_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, to_json(record.as_json()) + "\n")

    def run_ids(self) -> list[str]:
        folder = self.root / "runs"
        if not folder.is_dir():
            return []
        return sorted(p.name[:-5] for p in folder.iterdir()
                      if p.name.endswith(".json") and not p.name.startswith(".") and not name_problem(p.name[:-5]))

    def records(self) -> tuple[list[RunRecord], list[str]]:
        """Every record, and a line for each that cannot be read."""
        found, broken = [], []
        for run_id in self.run_ids():
            try:
                record = self.record(run_id)
            except JobError as exc:
                broken.append(str(exc))
                continue
            if record is not None:
                found.append(record)
        return found, broken

    def remove_record(self, run_id: str) -> None:
        self.record_path(run_id).unlink(missing_ok=True)
