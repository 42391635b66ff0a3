#!/usr/bin/env python3
"""The results store at lab scale: ingest rate, a trend query and the dashboard's run list.

    .venv/bin/python benchmarks/store.py [--runs 10000] [--records 100] [--db sqlite|postgres|FARM_DB] [--out FILE]

Makes RUNS synthetic runs of RECORDS records each (10 metrics × 10 repeats of one benchmark on one
target/setup, a kernel per 1000 runs), ingests them through farm's own write path
(farm.store.ingest.write_run, one transaction per run as `farm run` does), then times, median of 15
(and the fastest, and the median CPU time of this process):
- the trend query of one metric (farm.store.history.history: the series `farm history` and a trend
  page draw; every run contributes a point of 10 values);
- the dashboard's run list page (farm.dashboard.site.render("index.html"): count, newest 100, HTML),
  a page half way down, filtered by place, by status and place, by a month, by a commit prefix (the live
  page, ``farm serve``'s), a place's page and the trends index (every series' row and sparkline).
Goals (issue 19): trend query < 100 ms, run list page < 300 ms. Prints a Markdown table; --out
writes it as JSON too. ``--db sqlite`` (default): a fresh SQLite file in a temporary directory;
``--db postgres``: a throwaway PostgreSQL cluster (Debian's postgresql, as tests/store starts it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import tempfile
import time
from pathlib import Path

METRICS = tuple(f"metric_{i}" for i in range(10))


def rows_for(i: int, records: int):
    from farm.store.ingest import RunRows

    run_id = f"2026{1 + i // 28 // 24 % 12:02d}{1 + i // 24 % 28:02d}-{i % 24:02d}0000-{i:06d}"
    started = f"2026-{1 + i // 28 // 24 % 12:02d}-{1 + i // 24 % 28:02d}T{i % 24:02d}:00:00.{i % 1000:03d}+00:00"
    kernel = f"6.1.0-{i // 1000}-arm64"
    place = f"maaxboard-{i % 10 + 1}"
    run = {"run_id": run_id, "kind": "live", "status": "failed" if i % 10 == 3 else "passed", "who": "bench",
           "started": started, "place": place,
           "finished": started, "duration_s": 60.0, "pipeline": "nightly", "targets": "maaxboard-1",
           "setups": "default", "images": "maaxboard-bench", "kernels": kernel, "git_sha": f"{i:040x}",
           "farm_version": "0.1.0", "ci_job": "", "stopped_at": "", "junit": "pass", "path": f"/results/{run_id}",
           "info": json.dumps({"place": {"name": place, "coordinator": "127.0.0.1:20408", "tags": {"board": "maaxboard"},
                                         **({"health": "ok"} if i % 50 == 0 else {})}}), "ingested": started}
    recs = tuple({"timestamp": started, "target": "maaxboard-1", "arch": "arm64", "setup": "default",
                  "image": "maaxboard-bench", "suite": "crypto", "benchmark": "openssl-speed",
                  "params": "algorithm=sha256;block=16384", "repeat": k // len(METRICS),
                  "metric": METRICS[k % len(METRICS)], "value": 1e8 + (i * 7919 + k * 104729) % 1000 * 1e4,
                  "unit": "bytes/s", "kernel": kernel, "image_key": f"{i // 100:064x}", "git_sha": f"{i:040x}",
                  "started": started} for k in range(records))
    stages = tuple({"position": p, "name": n, "classname": "farm." + n, "seconds": 1.0, "kind": "pass",
                    "message": ""} for p, n in enumerate(("build", "boot", "openssl-speed", "publish")))
    return RunRows(run, stages, recs, (), (), (), ())


@contextlib.contextmanager
def postgres_cluster(base: Path):
    """A throwaway cluster on a unix socket in ``base``; its FARM_DB URL (as tests/store/conftest.py)."""
    import pwd
    import subprocess

    pg = Path("/usr/lib/postgresql/15/bin")
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(base, user.pw_uid, user.pw_gid)
    subprocess.run([*as_pg, str(pg / "initdb"), "-D", str(base / "data"), "-A", "trust", "-U", "farm", "--no-sync"],
                   check=True, capture_output=True)
    subprocess.run([*as_pg, str(pg / "pg_ctl"), "-D", str(base / "data"), "-l", str(base / "log"), "-w", "-o",
                    f"-k {base} -c listen_addresses=''", "start"], check=True, capture_output=True)
    try:
        subprocess.run([*as_pg, str(pg / "createdb"), "-h", str(base), "-U", "farm", "bench"], check=True)
        yield f"postgresql://farm@/bench?host={base}"
    finally:
        subprocess.run([*as_pg, str(pg / "pg_ctl"), "-D", str(base / "data"), "-m", "fast", "stop"],
                       capture_output=True)


def timed(fn, repeat: int = 15) -> tuple[float, float, float]:
    """(median, fastest, median CPU time of this process) of ``repeat`` calls: on a shared machine the
    fastest is what the code costs, the median what a user waits; the CPU time is this process' work
    alone (all of it for SQLite; PostgreSQL's server works besides), whatever else runs."""
    times, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(times), min(times), statistics.median(cpu)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10000)
    ap.add_argument("--records", type=int, default=100)
    ap.add_argument("--db", default="sqlite", help="sqlite (a fresh temporary file) or a FARM_DB value")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--query-only", action="store_true", help="--db holds the runs already: only time the queries")
    args = ap.parse_args()

    from farm.store.db import database_url

    with tempfile.TemporaryDirectory(prefix="farm-store-bench-") as tmp, contextlib.ExitStack() as stack:
        if args.db == "sqlite":
            farm_db = str(Path(tmp) / "results.db")
        elif args.db == "postgres":
            farm_db = stack.enter_context(postgres_cluster(Path(tmp)))
        else:
            farm_db = args.db
        return measure(args, database_url({"FARM_DB": farm_db}))


def measure(args: argparse.Namespace, url: str) -> int:
    from farm.dashboard import site
    from farm.store.db import engine, upgrade
    from farm.store.history import Filters, history
    from farm.store.ingest import write_run

    eng = engine(url)
    upgrade(eng)
    t0 = time.perf_counter()
    for i in range(0 if args.query_only else args.runs):
        with eng.begin() as c:
            write_run(c, rows_for(i, args.records))
    ingest_s = math.nan if args.query_only else time.perf_counter() - t0
    results = {"database": eng.dialect.name, "runs": args.runs, "records_per_run": args.records,
               "ingest_s": ingest_s, "runs_per_s": args.runs / ingest_s,
               "records_per_s": args.runs * args.records / ingest_s}
    with eng.connect() as c:
        filters = Filters(metric="metric_3", benchmark="openssl-speed", target="maaxboard-1", setup="default")
        (series,) = history(c, filters)
        assert len(series.points) == args.runs
        results["trend_query_s"] = timed(lambda: history(c, filters))
        results["trend_query_by_kernel_s"] = timed(lambda: history(c, filters, by="kernel"))
        status, _ = site.render(c, "index.html")
        assert status == 200
        results["run_list_page_s"] = timed(lambda: site.render(c, "index.html"))
        results["run_page_s"] = timed(lambda: site.render(c, f"run/{rows_for(args.runs // 2, 1).run_id}.html"))
        deep = max(1, args.runs // 200)  # a page half way down the list
        pages = {"run_list_deep_page_s": ("index.html", {"page": [str(deep)]}),
                 "run_list_by_place_s": ("index.html", {"place": ["maaxboard-3"]}),
                 "run_list_by_status_and_place_s": ("index.html", {"status": ["failed"], "place": ["maaxboard-4"]}),
                 "run_list_by_dates_s": ("index.html", {"since": ["2026-03-01"], "until": ["2026-03-31"]}),
                 "run_list_by_commit_s": ("index.html", {"commit": [f"{args.runs // 3:040x}"[:12]]}),
                 "place_page_s": ("place/maaxboard-3.html", {}),
                 "trends_index_s": ("trends.html", {})}
        for key, (path, query) in pages.items():
            status, _ = site.render(c, path, query, live=True)
            assert status == 200, (path, query, status)
            results[key] = timed(lambda: site.render(c, path, query, live=True), repeat=7 if "trends" in key else 15)
    eng.dispose()
    results["loadavg"] = os.getloadavg()

    def ms(key: str) -> str:
        med, fastest, cpu = results[key]
        return f"{med * 1000:.1f} ms (fastest {fastest * 1000:.1f}, CPU {cpu * 1000:.1f})"

    rows = [("ingest, a transaction per run", f"{results['runs_per_s']:.0f} runs/s, {results['records_per_s']:.0f} "
             f"records/s ({ingest_s:.1f} s)", ""),
            (f"trend query, a point per run ({args.runs} points)", ms("trend_query_s"), "< 100 ms"),
            (f"trend query by kernel ({-(-args.runs // 1000)} points of up to 10,000 values)",
             ms("trend_query_by_kernel_s"), ""),
            ("run list page", ms("run_list_page_s"), "< 300 ms"),
            (f"run list page {max(1, args.runs // 200)} (newest first)", ms("run_list_deep_page_s"), "< 300 ms"),
            ("run list of one place (1 in 10 runs)", ms("run_list_by_place_s"), "< 300 ms"),
            ("run list of one place's failed runs", ms("run_list_by_status_and_place_s"), "< 300 ms"),
            ("run list of a month", ms("run_list_by_dates_s"), "< 300 ms"),
            ("run list of a commit prefix", ms("run_list_by_commit_s"), "< 300 ms"),
            ("a place's page (its runs over time, health)", ms("place_page_s"), "< 300 ms"),
            ("the trends index (a row, sparkline and baseline comparison per series)", ms("trends_index_s"), ""),
            ("a run's page", ms("run_page_s"), "")]
    print(f"{results['database']}: {args.runs} runs x {args.records} records; load average "
          f"{results['loadavg'][0]:.1f} on {os.cpu_count()} cpus\n")
    print("| what | measured | goal |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
