"""``farm archive`` (runs' images into the lab's archive; gc, list, verify, serve) and ``farm reproduce``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import add_coordinator
from ..errors import EXIT_INFRA_ERROR, EXIT_OK, JobError
from ..values import min_boots_arg, number_arg, out_dir_arg

VERBS = ("gc", "list", "verify", "serve")


def _archive(writable: bool = False):
    from ..archive import ARCHIVE_ENV, open_archive

    archive = open_archive()
    if archive is None:
        raise JobError(f"the archive is off ({ARCHIVE_ENV}=none): set {ARCHIVE_ENV} to the lab's archive")
    if writable and not archive.writable:
        raise JobError(f"{ARCHIVE_ENV}={archive.location}: an archive served over HTTP is read-only; give the "
                       "directory of the share")
    return archive


def _only(args: argparse.Namespace, verb: str | None) -> None:
    """Options of one verb given to another are refused, naming them."""
    owners = {"keep": "gc", "dry_run": "gc", "json": "list", "host": "serve", "port": "serve"}
    for dest, owner in owners.items():
        value = getattr(args, dest)
        if owner != verb and value not in (None, False, []):
            raise JobError(f"farm archive: --{dest.replace('_', '-')} belongs to `farm archive {owner}`")


def cmd_archive(args: argparse.Namespace) -> int:
    what = list(args.what)
    verb = what[0] if what and what[0] in VERBS else None
    _only(args, verb)
    if verb is None:
        if not what:
            raise JobError("farm archive: give RUN_DIR... to archive, or one of " + ", ".join(VERBS))
        return _add(what)
    return {"gc": _gc, "list": _list, "verify": _verify, "serve": _serve}[verb](args, what[1:])


def _add(run_dirs: list[str]) -> int:
    from ..archive.archiving import archive_run

    archive = _archive(writable=True)
    worst = EXIT_OK
    for run_dir in run_dirs:
        if not Path(run_dir).is_dir():
            raise JobError(f"{run_dir}: not a run directory")
        done = archive_run(Path(run_dir), archive)
        if done is None:
            print(f"farm: {run_dir}: booted no image (an import?): nothing to archive", file=sys.stderr)
            continue
        r = done.record
        state = "already archived, unchanged" if done.unchanged else (
            f"{done.new_objects} new object(s), {done.new_bytes / 1e6:.1f} MB new")
        print(f"farm: archived run {r.run_id}: {len(r.images)} image(s), {len(r.recipes)} recipe(s)"
              f"{', the pipeline file' if r.pipeline else ''}: {state}", file=sys.stderr)
        for line in r.missing:
            print(f"farm: NOT ARCHIVED: run {r.run_id}: {line}", file=sys.stderr)
            worst = EXIT_INFRA_ERROR
        print(r.run_id)
    print(archive.location)
    return worst


def _gc(args: argparse.Namespace, rest: list[str]) -> int:
    from ..archive.retention import Keep, collect, protected

    if rest:
        raise JobError(f"farm archive gc: unexpected {' '.join(rest)} (it takes --keep and --dry-run)")
    if not args.keep:
        raise JobError("farm archive gc: say what to keep: --keep 20 (the newest 20 runs) and/or --keep 90d")
    archive = _archive(writable=True)
    rules = [Keep.parse(k) for k in args.keep]
    done = collect(archive, rules, protected(), dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    for run_id in done.runs:
        print(f"farm: {verb} run {run_id}", file=sys.stderr)
    for run_id, why in sorted(done.protected.items()):
        print(f"farm: kept run {run_id}: {why}", file=sys.stderr)
    for line in done.unreadable:
        print(f"farm: warning: {line}: kept, and every object with it (gc removes no object while a record "
              "cannot be read)", file=sys.stderr)
    print(f"farm: archive gc: {verb} {len(done.runs)} run(s), {done.objects} object(s), {done.bytes / 1e6:.1f} MB; "
          f"{len(done.kept)} run(s) kept" + (f"; {done.abandoned} abandoned write(s) cleaned" if done.abandoned else ""),
          file=sys.stderr)
    print(archive.location)
    return EXIT_OK


def _list(args: argparse.Namespace, rest: list[str]) -> int:
    archive = _archive()
    records, broken = archive.records()
    if rest:
        records = [r for r in records if r.run_id in rest]
    records.sort(key=lambda r: r.started)
    if args.json:
        print(json.dumps([r.as_json() | {"size": r.size} for r in records], indent=2))
    else:
        for r in records:
            images = ", ".join(f"{n} {i.key[:12] or i.manifest.sha256[:12]}" for n, i in sorted(r.images.items()))
            lost = f"  ({len(r.missing)} not archived)" if r.missing else ""
            print(f"{r.run_id}  {r.started[:19]}  {r.pipeline_name or '-':12} {r.status or '-':20} "
                  f"{r.size / 1e6:8.1f} MB  {images}{lost}")
    for line in broken:
        print(f"farm: warning: unreadable record: {line}", file=sys.stderr)
    return EXIT_OK


def _verify(args: argparse.Namespace, rest: list[str]) -> int:
    from ..archive import ArchiveError

    archive = _archive()
    records, broken = archive.records()
    if rest:
        unknown = set(rest) - {r.run_id for r in records}
        if unknown:
            raise JobError(f"farm archive verify: not archived: {', '.join(sorted(unknown))}")
        records = [r for r in records if r.run_id in rest]
    problems = list(broken)
    checked: set[str] = set()
    for r in records:
        for sha, entry in r.objects().items():
            if sha in checked:
                continue
            checked.add(sha)
            try:
                archive.check(entry, f"run {r.run_id}: object {sha}")
            except ArchiveError as exc:
                problems.append(str(exc))
    for line in problems:
        print(f"farm: CORRUPT: {line}", file=sys.stderr)
    print(f"farm: archive verify: {len(checked)} object(s) of {len(records)} run(s) hashed: "
          + (f"{len(problems)} problem(s)" if problems else "all intact"), file=sys.stderr)
    return EXIT_INFRA_ERROR if problems else EXIT_OK


def _serve(args: argparse.Namespace, rest: list[str]) -> int:
    from ..archive.http import DEFAULT_PORT, serve

    if rest:
        raise JobError(f"farm archive serve: unexpected {' '.join(rest)}")
    archive = _archive(writable=True)
    try:
        host = args.host or "127.0.0.1"
        serve(archive, host=host, port=DEFAULT_PORT if args.port is None else args.port,
              allowed_hosts=[*args.allow_host, host])
    except OSError as exc:
        raise JobError(f"farm archive serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    return EXIT_OK


def cmd_reproduce(args: argparse.Namespace) -> int:
    from ..archive.reproduce import reproduce
    from ..results.qualify import parse_threshold
    from ..results.reproduction import line
    from ..run import FarmRequest

    farm = None
    if args.farm is not None:
        from ..coordinator import parse_tags

        farm = FarmRequest(parse_tags(args.farm) if args.farm else {}, timeout=args.farm_timeout,
                           coordinator=args.coordinator)
    done = reproduce(args.run, envs=[Path(e) for e in args.env] if args.env else None, farm=farm,
                     out=Path(args.out) if args.out else None, threshold=parse_threshold(args.threshold),
                     min_boots=args.min_boots, pipeline=Path(args.pipeline) if args.pipeline else None, force=args.force,
                     allow_other_board=args.allow_other_board)
    rep = done.reproduction
    if rep is not None:
        for figure in rep.figures:
            print(line(figure))
        print(f"farm: reproduce {done.original.run_id} as {done.run.run_id} ({done.run.info.status}): "
              f"{rep.headline()}", file=sys.stderr)
    else:
        print(f"farm: reproduce {done.original.run_id}: no verdict ({done.error})", file=sys.stderr)
    print(done.run.path)
    return done.exit_code


def register(sub) -> None:
    p = sub.add_parser("archive", help="archive runs' images (by sha256) where the lab can reproduce them; gc, "
                       "list, verify, serve",
                       description="farm archive RUN_DIR...: put what each run booted (kernel, initrd, DTBs, "
                       "system and guest images, their manifests), its pipeline file and recipes as run, its "
                       "run.json and results.csv into the archive ($FARM_ARCHIVE: a directory the lab shares, an "
                       "http:// URL of `farm archive serve` to read from, none = off; unset: archive/ beside the "
                       "results store, ~/.local/share/farm/archive). farm run does this itself when a run ends. "
                       "Objects are content-addressed (sha256), written atomically, deduplicated and sha256-checked "
                       "on every read; text files are archived with secrets masked. "
                       "farm archive gc --keep N|AGE [--keep ...] [--dry-run]: remove the runs no rule keeps "
                       "(never one a saved baseline or a stored qualification names) and the objects no other run "
                       "uses. farm archive list [RUN_ID...] [--json]: what it holds. farm archive verify "
                       "[RUN_ID...]: hash every object (exit 3 when one is missing or corrupt). farm archive serve "
                       "[--host H] [--port P] [--allow-host NAME]: serve it read-only over HTTP (only to requests naming "
                       "it). See docs/archive.md.")
    p.add_argument("what", nargs="*", metavar="RUN_DIR|gc|list|verify|serve",
                   help="run directories to archive, or a verb (gc, list, verify, serve) and its run ids")
    p.add_argument("--keep", action="append", default=[], metavar="N|AGE",
                   help="gc: keep the newest N runs, or those younger than AGE (36h, 90d, 12w); repeatable")
    p.add_argument("--dry-run", action="store_true", help="gc: say what would go, remove nothing")
    p.add_argument("--json", action="store_true", help="list: the records as JSON")
    p.add_argument("--host", help="serve: address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=number_arg(0, 65535, whole=True), help="serve: port (default 8471; 0 picks a free one)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="serve: a host name readers may reach it by, besides IP addresses, localhost and this "
                   "machine's own names (repeatable, e.g. archive.lab.example); a request naming any other host "
                   "is refused (421), which stops DNS rebinding")
    p.set_defaults(func=cmd_archive)

    p = sub.add_parser("reproduce", help="re-run an archived run with its exact images and say, per figure, "
                       "whether it reproduced",
                       description="Fetch the images RUN booted from the archive ($FARM_ARCHIVE; each sha256-"
                       "checked: a missing or corrupt one is an error naming it, before anything boots), run its "
                       "pipeline file as run again with the same setups, parameters and extra kernel arguments "
                       "on the same board type (its env files, --env, or a place of the farm with --farm; another "
                       "architecture is refused, another board type too unless --allow-other-board), "
                       "nothing built, then judge each of its figures on one value per boot a side, by farm "
                       "compare's rule: reproduced when the interval of new/original lies within 1 +-THRESHOLD, "
                       "not reproduced when it lies wholly outside (both values given), inconclusive when it "
                       "straddles an edge or the new run has fewer than --min-boots boots. Each setup boots at least "
                       "--min-boots times: an original of fewer boots (a 1-boot smoke run) is judged by whether its "
                       "value lies within the new run's 95 %% prediction interval (+-THRESHOLD). Writes "
                       "reproduction.json, reproduction.md and reproduction.xml (junit) into the "
                       "new run directory, which is stored as a reproduction of RUN (farm history --reproductions, "
                       "the dashboard). Prints a line per figure and the run directory last; exit 0 when every "
                       "figure reproduced, 1 when one did not (or was not measured), 4 when none failed but one was "
                       "inconclusive, else the run's own code (2, 3). See docs/archive.md.")
    p.add_argument("run", metavar="RUN_ID|RUN_DIR", help="the run to reproduce (its run directory names its id)")
    p.add_argument("--env", action="append", metavar="ENV",
                   help="run on this env file (a target of the same board type) instead of the original's (repeatable)")
    p.add_argument("--farm", nargs="*", metavar="TAG=VAL",
                   help="run on a place of the farm with these tags; the board tag defaults to the original's "
                   "(its place's board, else its env file's name); env/<board>.yaml unless --env is given")
    p.add_argument("--allow-other-board", action="store_true",
                   help="run on a target whose board type (its env file's options.board) is not the original's "
                   "(its place's board tag, else its env file's); without it that is refused, naming both")
    p.add_argument("--farm-timeout", type=number_arg(0, 7 * 86400, low_open=True, unit="s"), default=3600, metavar="S",
                   help="give up waiting for a place after S seconds (default 3600)")
    add_coordinator(p, "of --farm")
    p.add_argument("--threshold", default="5%",
                   help="the band of 'the same': the interval of new/original must lie within 1 +-THRESHOLD "
                   "(default 5%%)")
    p.add_argument("--min-boots", type=min_boots_arg, metavar="N",
                   help="each setup boots at least N times; fewer new boots is inconclusive (default: the "
                   "original pipeline's compare.min_boots, else 5)")
    p.add_argument("--pipeline", metavar="FILE",
                   help="the pipeline file as run (checked against its sha256), when the archive has it masked "
                   "or not at all")
    p.add_argument("--out", metavar="DIR", type=out_dir_arg, help="the new run's directory (default results/<run-id>)")
    p.add_argument("--force", action="store_true", help="--out DIR holds something: start it anew (moved aside)")
    p.set_defaults(func=cmd_reproduce)
