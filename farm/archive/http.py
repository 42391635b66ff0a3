"""The archive over HTTP, read-only: ``farm archive serve`` on a host that has the share, and a reader
for everyone else (``FARM_ARCHIVE=http://archive-host:8471/``).

    GET /runs/               the archived run ids (JSON)
    GET /runs/<run id>.json  a run's record (farm.archive.record)
    GET /objects/<sha256>    an object, only when its bytes still hash to its name

The server is read-only: GET and HEAD, every other method 405; a path is one of those three shapes
(a run id that can name a file, 64 hex digits) or 404, so no URL reaches a file outside the archive.
It hashes an object before it sends it and refuses (500, naming it) one whose bytes are not its
name; the reader hashes what it receives again, so a corrupt object is refused at both ends. It
binds to 127.0.0.1 unless told otherwise (a lab gives ``--host`` of its network), and answers only
requests whose ``Host`` names it (farm.hostnames, farm serve's check: an IP address, this machine's
names, ``--allow-host``; else 421), so a rebinding page cannot read it from a lab member's browser.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import tempfile
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, ClassVar, Iterable, Iterator
from urllib.parse import unquote, urlsplit

import attrs

from ..errors import JobError
from ..hostnames import allowed_names, host_ok
from ..values import name_problem
from . import ArchiveError
from .directory import CHUNK, DirArchive, _Discard, copy_hashing
from .record import SHA256, Entry, RunRecord, checked_run_id

DEFAULT_PORT = 8471
TIMEOUT_S = 60.0
MAX_RECORD_BYTES = 16 << 20
_RUN = re.compile(r"runs/([A-Za-z0-9][A-Za-z0-9._-]{0,63})\.json")
_OBJECT = re.compile(r"objects/([0-9a-f]{64})")


def make_handler(archive: DirArchive, allowed_hosts: Iterable[str] = ()) -> type[BaseHTTPRequestHandler]:
    allowed = allowed_names(allowed_hosts)

    class Handler(BaseHTTPRequestHandler):
        server_version = "farm-archive"

        def _answer(self, send_body: bool) -> None:
            if not host_ok(self, allowed, "farm archive serve"):
                return
            path = unquote(urlsplit(self.path).path).lstrip("/")
            if path in ("", "runs", "runs/"):
                return self._bytes(200, json.dumps(archive.run_ids()).encode() + b"\n", "application/json", send_body)
            if (run := _RUN.fullmatch(path)) and not name_problem(run.group(1)):
                try:
                    record = archive.record(run.group(1))
                except JobError as exc:
                    return self._bytes(500, f"unreadable record: {exc}\n".encode(), "text/plain", send_body)
                if record is None:
                    return self._bytes(404, b"no such run\n", "text/plain", send_body)
                return self._bytes(200, archive.record_path(record.run_id).read_bytes(), "application/json", send_body)
            if (obj := _OBJECT.fullmatch(path)):
                return self._object(obj.group(1), send_body)
            return self._bytes(404, b"nothing here: /runs/, /runs/<run id>.json, /objects/<sha256>\n", "text/plain",
                               send_body)

        def _object(self, sha256: str, send_body: bool) -> None:
            file = archive.object_path(sha256)
            try:
                size = file.stat().st_size
                archive.check(Entry(sha256, size), f"object {sha256}")
            except FileNotFoundError:
                return self._bytes(404, b"no such object\n", "text/plain", send_body)
            except ArchiveError as exc:
                return self._bytes(500, f"{exc}\n".encode(), "text/plain", send_body)
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.send_header("ETag", f'"{sha256}"')
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            if send_body:
                with open(file, "rb") as f:
                    for block in iter(lambda: f.read(CHUNK), b""):
                        self.wfile.write(block)

        def _bytes(self, status: int, body: bytes, kind: str, send_body: bool) -> None:
            self.send_response(status)
            self.send_header("Content-Type", f"{kind}; charset=utf-8" if kind.startswith("text/") else kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if send_body:
                self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server's names
            self._answer(True)

        def do_HEAD(self) -> None:  # noqa: N802
            self._answer(False)

        def _refuse(self) -> None:
            if not host_ok(self, allowed, "farm archive serve"):
                return
            self.send_response(405, "read-only")
            self.send_header("Allow", "GET, HEAD")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse  # noqa: N815

        def __getattr__(self, name: str):
            # any other method (TRACE, PROPFIND, MKCOL, ...) is refused as these are (405), not left to
            # http.server's 501 "unsupported method": the server is read-only, not incomplete
            if name.startswith("do_"):
                return self._refuse
            raise AttributeError(name)

        def log_message(self, format: str, *args) -> None:  # noqa: A002
            sys.stderr.write(f"farm archive serve: {self.address_string()} {format % args}\n")

    return Handler


def make_server(archive: DirArchive, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                allowed_hosts: Iterable[str] = ()) -> ThreadingHTTPServer:
    return ThreadingHTTPServer((host, port), make_handler(archive, allowed_hosts))


def serve(archive: DirArchive, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
          allowed_hosts: Iterable[str] = ()) -> None:
    """Serve ``archive`` until Ctrl-C; ``allowed_hosts``: names besides this machine's a request's
    ``Host`` may give (farm.hostnames: any other is refused, 421)."""
    server = make_server(archive, host, port, allowed_hosts)
    bound_host, bound_port = server.server_address[:2]
    print(f"farm: serving the archive {archive.location} on http://{bound_host}:{bound_port}/ (read-only; "
          "Ctrl-C stops)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


@attrs.frozen
class HttpArchive:
    """An archive served by ``farm archive serve``: read-only, every object hashed as it arrives."""

    base: str
    writable: ClassVar[bool] = False

    @property
    def location(self) -> str:
        return self.base

    def _url(self, path: str) -> str:
        return self.base.rstrip("/") + "/" + path

    @contextlib.contextmanager
    def _get(self, path: str, what: str) -> Iterator[IO[bytes] | None]:
        """The response to GET ``path`` (None for a 404); an ArchiveError naming ``what`` otherwise."""
        try:
            response = urllib.request.urlopen(self._url(path), timeout=TIMEOUT_S)  # noqa: S310 - http(s) only
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                yield None
                return
            detail = exc.read(500).decode("utf-8", "replace").strip()
            raise ArchiveError(f"{what}: the archive {self.base} answered {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise ArchiveError(f"{what}: cannot reach the archive {self.base}: {getattr(exc, 'reason', exc)}") from None
        with response:
            yield response

    def reading(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def record(self, run_id: str) -> RunRecord | None:
        if (problem := name_problem(run_id, "run id")):
            raise JobError(problem)
        with self._get(f"runs/{run_id}.json", f"run {run_id}") as response:
            if response is None:
                return None
            data = response.read(MAX_RECORD_BYTES + 1)
        if len(data) > MAX_RECORD_BYTES:
            raise ArchiveError(f"run {run_id}: the archive's record is larger than {MAX_RECORD_BYTES} bytes")
        try:
            parsed = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise ArchiveError(f"run {run_id}: the archive's record is not JSON ({exc})") from None
        where = self._url(f"runs/{run_id}.json")
        return checked_run_id(RunRecord.from_json(parsed, where), run_id, where)

    def run_ids(self) -> list[str]:
        with self._get("runs/", "the list of runs") as response:
            data = response.read(MAX_RECORD_BYTES + 1) if response is not None else b"[]"
        try:
            ids = json.loads(data.decode("utf-8")) if len(data) <= MAX_RECORD_BYTES else None
        except (ValueError, RecursionError):
            ids = None
        if not isinstance(ids, list):  # a web server, a proxy's page: not farm archive serve
            raise ArchiveError(f"the archive {self.base} answered /runs/ with no list of run ids (JSON): is it "
                               "`farm archive serve`?")
        return [i for i in ids if isinstance(i, str) and not name_problem(i)]

    def records(self) -> tuple[list[RunRecord], list[str]]:
        found, broken = [], []
        for run_id in self.run_ids():
            try:
                record = self.record(run_id)
            except (JobError, ArchiveError) as exc:
                broken.append(str(exc))
                continue
            if record is not None:
                found.append(record)
        return found, broken

    def _read_into(self, entry: Entry, dst: IO[bytes], what: str) -> None:
        if not SHA256.fullmatch(entry.sha256):
            raise ValueError(entry.sha256)
        with self._get(f"objects/{entry.sha256}", what) as response:
            if response is None:
                raise ArchiveError(f"{what}: missing from the archive {self.base} (no object {entry.sha256})")
            sha, size = copy_hashing(response, dst, limit=entry.size)
        if (sha, size) != (entry.sha256, entry.size):
            if size > entry.size:
                raise ArchiveError(f"{what}: corrupt from the archive {self.base}: object {entry.sha256} is larger "
                                   f"than its {entry.size} bytes: refused, the rest not read")
            raise ArchiveError(f"{what}: corrupt from the archive {self.base}: object {entry.sha256} arrived as {sha} "
                               f"({size} bytes, not {entry.size}): refused")

    def fetch(self, entry: Entry, dest: Path, what: str) -> None:
        with tempfile.NamedTemporaryFile(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp", delete=False) as tmp:
            try:
                self._read_into(entry, tmp, what)
                tmp.flush()
            except BaseException:
                Path(tmp.name).unlink(missing_ok=True)
                raise
        Path(tmp.name).replace(dest)

    def check(self, entry: Entry, what: str) -> None:
        """Fetch the object only to hash it (an ArchiveError naming ``what`` when missing or corrupt)."""
        self._read_into(entry, _Discard(), what)

    def read(self, entry: Entry, what: str) -> bytes:
        import io

        out = io.BytesIO()
        self._read_into(entry, out, what)
        return out.getvalue()

