"""farm archive serve, tested like farm serve: the real command on 127.0.0.1, read-only, only its three
kinds of path, a corrupt object refused at the server and at the reader; and farm reproduce from it."""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest

from farm.archive import ArchiveError, open_archive
from farm.archive.http import HttpArchive
from farm.archive.reproduce import reproduce

from .archive_helpers import ROOT, archived_run, values
from ..fakes import FakeFlow


@contextlib.contextmanager
def served(env: dict, *args: str):
    proc = subprocess.Popen([sys.executable, "-m", "farm.cli", "archive", "serve", "--port", "0", *args], cwd=ROOT,
                            env={**os.environ, **env}, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        port = re.search(r"127\.0\.0\.1:(\d+)/", line)
        assert port, line + proc.stderr.read()
        yield f"http://127.0.0.1:{port.group(1)}/"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def request(url: str, method: str = "GET"):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method)) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


@pytest.fixture
def archived(tmp_path, monkeypatch):
    return archived_run(tmp_path, monkeypatch, 5.0)


def test_the_archive_served_read_only_answers_runs_and_whole_objects_only(archived, tmp_path, monkeypatch):
    local = open_archive()
    record = local.record(archived.run_id)
    kernel = record.images["fake"].artifacts["Image"]
    with served({"FARM_ARCHIVE": str(tmp_path / "archive")}) as base:
        status, _, body = request(base + "runs/")
        assert status == 200 and archived.run_id in body.decode()
        remote = HttpArchive(base)
        assert remote.record(archived.run_id) == record
        assert remote.record("20200101-000000-none") is None
        assert remote.read(kernel, "kernel") == local.object_path(kernel.sha256).read_bytes()
        status, headers, _ = request(f"{base}objects/{kernel.sha256}", "HEAD")
        assert status == 200 and headers["Content-Length"] == str(kernel.size)
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            status, headers, _ = request(f"{base}objects/{kernel.sha256}", method)
            assert status == 405 and headers["Allow"] == "GET, HEAD", method
        for path in ("../results.db", "objects/../runs/", f"objects/{kernel.sha256[:2]}/{kernel.sha256}",
                     "runs/../.lock", "runs/x/../../.lock", ".lock", "tmp/", f"objects/{kernel.sha256.upper()}",
                     "runs/%2e%2e%2f.lock.json", "etc/passwd"):
            assert request(base + path)[0] == 404, path
        # a corrupt object (the same size): the server refuses it, the reader names it
        path = local.object_path(kernel.sha256)
        os.chmod(path, 0o644)
        data = bytearray(path.read_bytes())
        data[7] ^= 1
        path.write_bytes(bytes(data))
        status, _, body = request(f"{base}objects/{kernel.sha256}")
        assert status == 500 and b"corrupt" in body
        with pytest.raises(ArchiveError, match="kernel: the archive .* answered 500: .*corrupt"):
            remote.read(kernel, "kernel")


def with_host(base: str, host: str, method: str = "GET", path: str = "/runs/"):
    """A request naming ``host`` in its Host header (a page whose name was rebound to the server)."""
    netloc = urlsplit(base)
    conn = http.client.HTTPConnection(netloc.hostname, netloc.port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True)
        conn.putheader("Host", host)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_a_request_naming_another_host_is_refused_421_as_farm_serve_does(archived, tmp_path):
    with served({"FARM_ARCHIVE": str(tmp_path / "archive")}, "--allow-host", "Archive.Lab.Example") as base:
        port = urlsplit(base).port
        status, body = with_host(base, f"evil.example:{port}")  # DNS rebinding: another site's name
        assert status == 421 and b"farm archive serve --allow-host" in body and archived.run_id.encode() not in body
        assert with_host(base, "evil.example", "HEAD") == (421, b"")
        assert with_host(base, "evil.example", "POST")[0] == 421  # refused before the method is
        assert with_host(base, "evil.example", path=f"/runs/{archived.run_id}.json")[0] == 421
        assert with_host(base, "a:b")[0] == 421  # not a Host header at all
        for host in (f"127.0.0.1:{port}", "localhost", f"archive.lab.example:{port}", f"[::1]:{port}"):
            status, body = with_host(base, host)
            assert status == 200 and archived.run_id.encode() in body, host
        assert with_host(base, f"archive.lab.example:{port}", "POST")[0] == 405


def test_farm_reproduce_fetches_over_http_into_an_empty_cache(archived, tmp_path, monkeypatch):
    with served({"FARM_ARCHIVE": str(tmp_path / "archive")}) as base:
        monkeypatch.setenv("FARM_ARCHIVE", base)
        done = reproduce(archived.run_id, out=tmp_path / "again", cache=tmp_path / "empty",
                         flow_for=lambda s: FakeFlow(), registry=values(5.0), min_boots=1)
        [figure] = done.reproduction.figures  # measured again (one boot: --min-boots 1); no interval to judge
        assert (figure.new_n, figure.verdict, done.reproduction.verdict) == (1, "inconclusive", "inconclusive")
        assert (tmp_path / "empty" / "archive" / "images").is_dir()
        # an archive over HTTP is read-only: the run's listener says so, the command refuses to write
        assert "read-only" in subprocess.run([sys.executable, "-m", "farm.cli", "archive", str(archived.path)],
                                             cwd=ROOT, capture_output=True, text=True,
                                             env={**os.environ, "FARM_ARCHIVE": base}).stderr
