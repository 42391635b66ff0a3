"""``farm serve``: the dashboard's pages answered live from the store (stdlib http.server).

Read-only: GET and HEAD only, every other method is refused (405, whatever the method: OPTIONS,
TRACE, PROPFIND, made-up ones too); no page writes to the store. ``run/<run>/files/<path>`` answers
a file of a run directory (farm.dashboard.files: only those the store lists for the run, through no
symbolic link, text masked). It binds to 127.0.0.1 unless told otherwise. Pages carry a
Content-Security-Policy that allows no script at all, so even a name that slipped past escaping
could not run.

**Host names** (farm.hostnames, as ``farm archive serve``'s): a request must name this server in
its ``Host`` header: an IP address, ``localhost``, this machine's own names, or a name given with
``--allow-host``. Anything else is refused (421) before a page is made: through DNS rebinding, a
page of another site whose name was made to point at 127.0.0.1 would otherwise read every run's
console from the browser of someone who opened it.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterable
from urllib.parse import parse_qs, unquote, urlsplit

import sqlalchemy as sa

from farm.hostnames import allowed_names, host_ok
from farm.secrets import mask

from . import pages, render, site


#: seconds a connection may take to send its request (a slow or idle one no longer holds a thread)
REQUEST_TIMEOUT = 30
ALLOWED_METHODS = ("GET", "HEAD")


def make_handler(eng: sa.Engine, places: site.PlacesNow | None = None,
                 allowed_hosts: Iterable[str] = ()) -> type[BaseHTTPRequestHandler]:
    allowed = allowed_names(allowed_hosts)

    class Handler(BaseHTTPRequestHandler):
        server_version = "farm-dashboard"
        timeout = REQUEST_TIMEOUT

        def __getattr__(self, name: str):
            # http.server answers a method it has no do_<METHOD> for with 501; every one but GET and
            # HEAD is refused alike, as a read-only server's should be: 405 with Allow
            if name.startswith("do_"):
                return self._refuse
            raise AttributeError(name)

        def _host_ok(self) -> bool:
            return host_ok(self, allowed, "farm serve")

        def _page(self, send_body: bool) -> None:
            if not self._host_ok():
                return
            url = urlsplit(self.path)
            path = unquote(url.path).lstrip("/")
            if site.is_file_path(path):
                return self._file(path, send_body)
            try:
                with eng.connect() as c:
                    status, html = site.render(c, path, parse_qs(url.query), live=True, places=places)
            except Exception as exc:  # noqa: BLE001 - a broken page is a 500, not a dead server
                status, html = 500, pages.error_page(f"{type(exc).__name__}: {exc}")
            body = mask(html).encode("utf-8")  # FARM_SECRET_* values, as every output of farm
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", render.CSP)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if send_body:
                self.wfile.write(body)

        def _file(self, path: str, send_body: bool) -> None:
            """A file of a run directory (farm.dashboard.files: only those the store lists, masked)."""
            try:
                with eng.connect() as c:
                    found = site.run_file(c, path)
            except Exception as exc:  # noqa: BLE001 - as a page: a 500, not a dead server
                found, error = None, f"{type(exc).__name__}: {exc}"
            else:
                error = ""
            if found is None:
                body = mask(pages.not_found_page(error or f"no file at {path}")).encode("utf-8")
                status, kind, attachment = (500 if error else 404), "text/html; charset=utf-8", False
            else:
                body, status, kind, attachment = found.data, 200, found.content_type, found.attachment
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", render.CSP)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Cache-Control", "no-store")
            if attachment:
                name = path.rsplit("/", 1)[-1].encode("ascii", "replace").decode().replace('"', "_")
                self.send_header("Content-Disposition", f'attachment; filename="{name}"')
            self.end_headers()
            if send_body:
                self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server's names
            self._page(True)

        def do_HEAD(self) -> None:  # noqa: N802
            self._page(False)

        def _refuse(self) -> None:
            if not self._host_ok():
                return
            self.send_response(405, "read-only")
            self.send_header("Allow", ", ".join(ALLOWED_METHODS))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args) -> None:  # noqa: A002
            sys.stderr.write(f"farm serve: {self.address_string()} {format % args}\n")

    return Handler


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` serves this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def make_server(eng: sa.Engine, host: str = "127.0.0.1", port: int = 8470, *,
                places: site.PlacesNow | None = None, allowed_hosts: Iterable[str] = ()) -> ThreadingHTTPServer:
    server_class = ThreadingHTTPServer
    if ":" in host:  # an IPv6 address
        server_class = type("ThreadingHTTPServer6", (ThreadingHTTPServer,), {"address_family": socket.AF_INET6})
    return server_class((host, port), make_handler(eng, places, allowed_hosts))


def serve(eng: sa.Engine, host: str = "127.0.0.1", port: int = 8470, *, places: site.PlacesNow | None = None,
          allowed_hosts: Iterable[str] = ()) -> None:
    server = make_server(eng, host, port, places=places, allowed_hosts=allowed_hosts)
    bound_host, bound_port = server.server_address[:2]
    if not is_loopback(host):
        print(f"farm: warning: serving on {host}, not this machine only: whoever reaches port {bound_port} of it "
              "reads every run's console log, stages and records, without authentication (the pages are "
              "read-only and masked; put it behind a proxy with authentication, or use --host 127.0.0.1)",
              file=sys.stderr, flush=True)
    print(f"farm: serving the dashboard on http://{bound_host}:{bound_port}/ (read-only; Ctrl-C stops)",
          file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
