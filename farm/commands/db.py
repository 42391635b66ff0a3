"""``farm db ingest|upgrade``: the results store (see farm.store)."""

from __future__ import annotations

import argparse
import sys

from ..errors import EXIT_OK, JobError
from ..values import shown


def require_store():
    """The store's engine, or a JobError when ``FARM_DB`` turns it off."""
    from ..store.db import DB_ENV, database_url, open_store, store_errors

    with store_errors(database_url()):
        eng = open_store()
    if eng is None:
        raise JobError(f"the results store is off ({DB_ENV}=none): set {DB_ENV} to a database to use it")
    return eng


def store_errors():
    """Database errors of a command as one line naming the store (exit 3, no traceback)."""
    from ..store.db import database_url, store_errors as errors

    return errors(database_url())


def cmd_ingest(args: argparse.Namespace) -> int:
    from ..store.db import database_url, describe
    from ..store.ingest import ingest

    eng = require_store()
    with store_errors():
        done = ingest(eng, args.run_dirs)
    for d in done:
        r = d.rows
        what = {"kept": f"kept: a baseline's copy of the stored run ({len(r.records)} records, the same)"}.get(
            d.outcome, f"{len(r.records)} records, {len(r.stages)} stages" + (", replacing the stored copy"
                                                                              if d.outcome == "replaced" else ""))
        print(f"farm: ingested {shown(r.run_id)} ({shown(r.run['kind'])}, {shown(r.run['status'])}): {what}",
              file=sys.stderr)
    print(describe(database_url() or ""))
    return EXIT_OK


def cmd_upgrade(args: argparse.Namespace) -> int:
    from ..store.db import current_revision, database_url, describe

    eng = require_store()
    with store_errors(), eng.connect() as connection:
        print(f"farm: schema at revision {current_revision(connection)}", file=sys.stderr)
    print(describe(database_url() or ""))
    return EXIT_OK


def register(sub) -> None:
    p = sub.add_parser("db", help="the results store: ingest run directories, migrate the schema",
                       description="The results store keeps every run's records, stages, boots, image sha256s, "
                       "artifact paths and console log for farm history and the dashboard. $FARM_DB chooses it: "
                       "unset = SQLite at ~/.local/share/farm/results.db, a postgresql://user@host/db URL = a lab "
                       "server, a file path = that SQLite file, none = off. farm run, import and qualify ingest "
                       "their run when they end (a failure to is a warning; the run directory is kept).")
    verbs = p.add_subparsers(dest="db_command", metavar="VERB", required=True)
    s = verbs.add_parser("ingest", help="ingest run directories (again: the same run twice is one run)",
                         description="Read each RUN_DIR (results.csv, run.json, junit.xml, console/, the files) "
                         "and store them all in one transaction, replacing earlier copies of the same runs. A "
                         "baseline's copy of a stored run keeps the stored run; another run under a stored "
                         "run's id is refused (exit 2), never replaces it. Prints the database.")
    s.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    s.set_defaults(func=cmd_ingest)
    s = verbs.add_parser("upgrade", help="create or migrate the store's schema to the newest revision",
                         description="Every command does this when it opens the store; this only does that.")
    s.set_defaults(func=cmd_upgrade)
