"""``farm serve`` as an adversary meets it (issue 31): DNS rebinding, every HTTP method, slow
clients, binding beyond this machine. A real `farm serve` process, raw HTTP requests."""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT, run_farm
from tests.store.rundirs import make_run

RUN = "20261201-100000-0123456789ab"
SECRET_CONSOLE = "root login ok"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`farm serve --port 0 --allow-host dashboard.lab.example` on a store holding one run."""
    tmp = tmp_path_factory.mktemp("serve")
    run = make_run(tmp / RUN, RUN, started="2026-12-01T10:00:00.000+00:00",
                   console=f"U-Boot 2023.01\n{SECRET_CONSOLE}\n")
    env = {"FARM_DB": str(tmp / "results.db")}
    assert run_farm("db", "ingest", str(run), env=env).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "farm.cli", "serve", "--port", "0",
                             "--allow-host", "dashboard.lab.example"], cwd=ROOT,
                            env={**os.environ, **env}, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        port = int(re.search(r":(\d+)/", line).group(1))
        yield port, line
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _request(port: int, method: str = "GET", path: str = f"/run/{RUN}.html", host: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {} if host is None else {"Host": host}
    conn.putrequest(method, path, skip_host=host is not None)
    for k, v in headers.items():
        conn.putheader(k, v)
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read().decode(errors="replace")
    conn.close()
    return resp.status, dict(resp.getheaders()), body


def test_a_page_for_this_machine_is_served(served):
    port, _ = served
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "127.0.0.1", f"dashboard.lab.example:{port}",
                 f"{socket.gethostname()}:{port}", f"[::1]:{port}"):
        status, _, body = _request(port, host=host)
        assert status == 200 and SECRET_CONSOLE in body, host


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8470", "127.0.0.1.attacker.example",
                                  "localhost.attacker.example:80", "x:y", ""])
def test_a_rebound_host_name_gets_no_page(served, host):
    """A page of attacker.example whose name now resolves to 127.0.0.1 asks with Host: attacker.example."""
    port, _ = served
    status, _, body = _request(port, host=host)
    assert status in (400, 421), (host, status)
    assert SECRET_CONSOLE not in body and RUN not in body
    status, _, body = _request(port, "POST", host=host)  # nor an answer that says more to other methods
    assert status in (400, 421) and RUN not in body


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND", "CONNECT",
                                    "FROBNICATE"])
def test_every_method_but_get_and_head_is_405(served, method):
    port, _ = served
    status, headers, body = _request(port, method, host=f"127.0.0.1:{port}")
    assert status == 405, (method, status, body[:200])
    assert headers.get("Allow") == "GET, HEAD" and SECRET_CONSOLE not in body


def test_head_is_a_get_without_the_body(served):
    port, _ = served
    status, headers, body = _request(port, "HEAD", host=f"localhost:{port}")
    assert status == 200 and body == "" and int(headers["Content-Length"]) > 0


def test_a_silent_connection_is_dropped(tmp_path, monkeypatch):
    """A client that connects and sends nothing no longer holds a server thread forever (the real
    server's timeout is REQUEST_TIMEOUT; 2 s here)."""
    import threading

    from farm.dashboard import server
    from farm.store.db import open_store

    assert server.REQUEST_TIMEOUT <= 60
    monkeypatch.setattr(server, "REQUEST_TIMEOUT", 2)
    httpd = server.make_server(open_store({"FARM_DB": str(tmp_path / "r.db")}), "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        port = httpd.server_address[1]
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        t0 = time.monotonic()
        assert sock.recv(100) == b""  # the server closes it
        assert 1.5 <= time.monotonic() - t0 < 20
        sock.close()
        status, _, _ = _request(port, "GET", "/", host=f"127.0.0.1:{port}")
        assert status == 200
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_serving_beyond_this_machine_is_said_loudly(tmp_path):
    env = {**os.environ, "FARM_DB": str(tmp_path / "results.db")}
    assert run_farm("db", "upgrade", env=env).returncode == 0
    for host, warned in (("0.0.0.0", True), ("127.0.0.1", False)):
        proc = subprocess.Popen([sys.executable, "-m", "farm.cli", "serve", "--host", host, "--port", "0"],
                                cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
        try:
            lines = [proc.stderr.readline() for _ in range(2 if warned else 1)]
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        text = "".join(lines)
        assert ("farm: warning: serving on 0.0.0.0, not this machine only" in text) is warned, text
        assert "without authentication" in text if warned else "warning" not in text
        assert "serving the dashboard on http://" in lines[-1]


def test_host_header_parsing():
    from farm.hostnames import host_allowed, host_of

    assert host_of("Example.COM.:8470") == "example.com" and host_of("[::1]:80") == "::1"
    assert host_of("a:b") is None and host_of("[::1]x") is None
    allowed = {"localhost", "dash.lab"}
    assert host_allowed("10.1.2.3:80", allowed) and host_allowed("dash.lab", allowed)
    assert host_allowed(None, allowed)  # HTTP/1.0 without Host: not a browser
    assert not host_allowed("evil.example", allowed) and not host_allowed("", allowed)
