"""``farm serve``: the dashboard's pages answered live from the store (stdlib http.server).

Read-only: GET and HEAD only, every other method is refused (405); no page writes to the store.
``run/<run>/files/<path>`` answers a file of a run directory (farm.dashboard.files: only those the
store lists for the run, through no symbolic link, text masked).
It binds to 127.0.0.1 unless told otherwise. Pages carry a Content-Security-Policy that allows no
script at all, so even a name that slipped past escaping could not run.
"""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import sqlalchemy as sa

from farm.secrets import mask

from . import pages, site


def make_handler(eng: sa.Engine, places: site.PlacesNow | None = None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "farm-dashboard"

        def _page(self, send_body: bool) -> None:
            url = urlsplit(self.path)
            path = unquote(url.path).lstrip("/")
            if site.is_file_path(path):
                return self._file(path, send_body)
            try:
                with eng.connect() as c:
                    status, html = site.render(c, path, parse_qs(url.query), live=True, places=places)
            except Exception as exc:  # noqa: BLE001 - a broken page is a 500, not a dead server
                status, html = 500, pages.layout("Error", f"<p>{pages.e(type(exc).__name__)}: {pages.e(exc)}</p>")
            body = mask(html).encode("utf-8")  # FARM_SECRET_* values, as every output of farm
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", pages.CSP)
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
            self.send_header("Content-Security-Policy", pages.CSP)
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
            self.send_response(405, "read-only")
            self.send_header("Allow", "GET, HEAD")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_PUT = do_DELETE = do_PATCH = _refuse  # noqa: N815

        def log_message(self, format: str, *args) -> None:  # noqa: A002
            sys.stderr.write(f"farm serve: {self.address_string()} {format % args}\n")

    return Handler


def make_server(eng: sa.Engine, host: str = "127.0.0.1", port: int = 8470, *,
                places: site.PlacesNow | None = None) -> ThreadingHTTPServer:
    return ThreadingHTTPServer((host, port), make_handler(eng, places))


def serve(eng: sa.Engine, host: str = "127.0.0.1", port: int = 8470, *, places: site.PlacesNow | None = None) -> None:
    server = make_server(eng, host, port, places=places)
    bound_host, bound_port = server.server_address[:2]
    print(f"farm: serving the dashboard on http://{bound_host}:{bound_port}/ (read-only; Ctrl-C stops)",
          file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
