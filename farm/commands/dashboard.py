"""``farm dashboard`` and ``farm serve``: the results store as web pages (see farm.dashboard)."""

from __future__ import annotations

import argparse
import sys

from . import add_coordinator
from ..errors import EXIT_OK
from ..values import number_arg


def _places(args: argparse.Namespace):
    """The places page's view of the coordinator: --coordinator, else $LG_COORDINATOR, else none."""
    import os

    address = args.coordinator or os.environ.get("LG_COORDINATOR")
    if not address:
        return None
    from ..dashboard.data import coordinator_places

    return lambda: coordinator_places(address)


def cmd_dashboard(args: argparse.Namespace) -> int:
    from ..dashboard.site import write_site
    from .db import require_store, store_errors

    eng = require_store()
    with store_errors():
        written = write_site(eng, args.out, places=_places(args), files_mode=args.files)
    print(f"farm: dashboard: {len(written)} pages in {args.out}", file=sys.stderr)
    print(args.out)
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from ..dashboard.server import serve
    from .db import require_store, store_errors

    from ..errors import JobError

    eng = require_store()
    try:
        with store_errors():
            serve(eng, host=args.host, port=args.port, places=_places(args),
                  allowed_hosts=[*args.allow_host, args.host])
    except OSError as exc:  # binding: the port is in use, or not ours to take
        raise JobError(f"serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    return EXIT_OK


def register(sub) -> None:
    p = sub.add_parser("dashboard", help="write the dashboard as a static site (CI artifact, GitLab Pages)",
                       description="Write the pages of the results store ($FARM_DB) into DIR: the run list "
                       "(index.html, and a page per board, place, pipeline, setup and status), a page per run with its "
                       "files, a page per place, the trends (a row and sparkline per series), a trend page per "
                       "metric and comparisons of each run with "
                       "the one before it of the same pipeline, and the places (places.html: who holds each "
                       "and its health from the coordinator, when one is given, as it is when the site is written; "
                       "each one's last run and failure from the store). Plain HTML and SVG: no JavaScript needed.")
    p.add_argument("--out", required=True, metavar="DIR", help="directory to write (its pages are replaced)")
    p.add_argument("--files", choices=("copy", "link", "none"), default="copy",
                   help="each run's files (console logs, junit.xml, results.csv, plots) under run/<run>/files/: "
                   "copied (default: the site stands alone, a CI artifact), symbolic links to the run "
                   "directories (a web server on the lab host), or none (not linked)")
    add_coordinator(p, "for the places page", "default $LG_COORDINATOR; neither: the page shows the store's side only")
    p.set_defaults(func=cmd_dashboard)

    p = sub.add_parser("serve", help="serve the dashboard live from the results store (read-only)",
                       description="Serve the dashboard's pages from the results store ($FARM_DB) as they are "
                       "now, read-only (GET and HEAD; any other method 405), on 127.0.0.1 unless --host says "
                       "otherwise, answering only requests that name it (an IP address, localhost, this machine or "
                       "--allow-host). The run list filters by board, place, pipeline, setup, status, commit and "
                       "dates (index.html?place=P&status=failed&since=2026-12-01); a run's files are answered from "
                       "its run directory; /compare?a=RUN&b=RUN compares any two runs. Ctrl-C stops it.")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only; "
                   "another one is served with a warning: the pages have no authentication)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a host name browsers may reach the server by, besides IP addresses, localhost and this "
                   "machine's own names (repeatable, e.g. dashboard.lab.example behind a proxy); requests naming "
                   "any other host are refused (421), which stops DNS rebinding")
    p.add_argument("--port", type=number_arg(0, 65535, whole=True), default=8470,
                   help="port (default 8470; 0 picks a free one)")
    add_coordinator(p, "the places page asks each time it is loaded", "default $LG_COORDINATOR")
    p.set_defaults(func=cmd_serve)
