"""``farm dashboard`` and ``farm serve``: the results store as web pages (see farm.dashboard)."""

from __future__ import annotations

import argparse
import sys

from ..errors import EXIT_OK


def cmd_dashboard(args: argparse.Namespace) -> int:
    from ..dashboard.site import write_site
    from .db import require_store, store_errors

    eng = require_store()
    with store_errors():
        written = write_site(eng, args.out)
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
            serve(eng, host=args.host, port=args.port)
    except OSError as exc:  # binding: the port is in use, or not ours to take
        raise JobError(f"serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    return EXIT_OK


def register(sub) -> None:
    p = sub.add_parser("dashboard", help="write the dashboard as a static site (CI artifact, GitLab Pages)",
                       description="Write the pages of the results store ($FARM_DB) into DIR: the run list "
                       "(index.html), a page per run, a trend page per metric and comparisons of each run with "
                       "the one before it of the same pipeline. Plain HTML and SVG: no JavaScript needed.")
    p.add_argument("--out", required=True, metavar="DIR", help="directory to write (its pages are replaced)")
    p.set_defaults(func=cmd_dashboard)

    p = sub.add_parser("serve", help="serve the dashboard live from the results store (read-only)",
                       description="Serve the dashboard's pages from the results store ($FARM_DB) as they are "
                       "now, read-only, on 127.0.0.1 unless --host says otherwise. /compare?a=RUN&b=RUN compares "
                       "any two runs. Ctrl-C stops it.")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8470, help="port (default 8470; 0 picks a free one)")
    p.set_defaults(func=cmd_serve)
