"""``farm history``: a metric over time, image, kernel or commit, from the results store."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import EXIT_OK, JobError
from ..measure.units import human


def cmd_history(args: argparse.Namespace) -> int:
    from ..store.history import BY, Filters, history, parse_param_filters
    from .db import require_store, store_errors

    filters = Filters(metric=args.metric, suite=args.suite, benchmark=args.benchmark, target=args.target,
                      setup=args.setup, params=parse_param_filters(args.param), unit=args.unit)
    assert args.by in BY
    eng = require_store()
    with store_errors(), eng.connect() as connection:
        series = history(connection, filters, by=args.by)
    if not series:
        raise JobError(f"history: no records of metric {args.metric!r} match (farm db ingest RUN_DIR to add runs)")
    if args.plot:
        from ..store.plot import plot_history

        plot_history(series, args.plot, by=args.by)
        print(f"farm: wrote {args.plot}", file=sys.stderr)
    links = {}
    if args.by == "time":  # a point is a run: say which reproduce which (farm reproduce)
        from ..store.reproductions import links as reproduction_links

        with store_errors(), eng.connect() as connection:
            links = reproduction_links(connection)
    elif args.reproductions:
        raise JobError("history --reproductions: with --by time (a point is a run)")
    if args.json:
        print(json.dumps({"metric": args.metric, "by": args.by, "series": [s.as_json() for s in series],
                          "reproductions": {run: {"original": o, "verdict": v} for run, (o, v) in links.items()}},
                         indent=2))
        return EXIT_OK
    from ..store.reproductions import beside

    for s in series:
        shown = beside(s.points, links, only=args.reproductions) if links else [(p, "") for p in s.points]
        if not shown:
            continue
        print(s.label())
        for p, note in shown:
            indent = "    " if note.startswith("reproduces ") and args.reproductions else "  "
            print(f"{indent}{p.first[:19]}  {p.x[:40]:40}  n={p.n:<3} median={human(p.median, s.unit)}  "
                  f"[{human(p.lo, s.unit)}, {human(p.hi, s.unit)}] ({p.interval})" + (f"  {note}" if note else ""))
    return EXIT_OK


def register(sub) -> None:
    p = sub.add_parser("history", help="a metric over time, image, kernel or commit, from the results store",
                       description="Query the results store ($FARM_DB, see farm db --help) for METRIC, one series "
                       "per target, setup, benchmark, params and unit, one point per run (--by time), image key, "
                       "kernel or git commit, with n, the median and an interval (the 95 % confidence interval "
                       "of the median when n >= 6, else the min-max range).")
    p.add_argument("metric", help="e.g. received_throughput, throughput, cycles_per_byte, rtt_median")
    p.add_argument("--suite")
    p.add_argument("--benchmark")
    p.add_argument("--target")
    p.add_argument("--setup")
    p.add_argument("--unit")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="only records whose params include KEY=VALUE (repeatable), e.g. algorithm=sha256")
    p.add_argument("--by", choices=("time", "image", "kernel", "commit"), default="time",
                   help="what a point is: a run (time, default), an image key, a kernel version, a git commit")
    p.add_argument("--reproductions", action="store_true",
                   help="only the runs that were reproduced (farm reproduce), each with its reproductions right "
                   "after it, marked with their verdicts (every point of a reproduction is marked anyway)")
    p.add_argument("--json", action="store_true", help="print the series as JSON (with which runs reproduce which)")
    p.add_argument("--plot", metavar="PNG", help="also draw the series into PNG")
    p.set_defaults(func=cmd_history)
