"""``farm health check|set``: a place's health record (the ``farm_health`` tag) and its health check."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import add_coordinator
from ..values import number_arg, out_dir_arg

DEFAULT_PIPELINE = "pipelines/health.yaml"


def _note(text: str) -> None:
    print(f"farm: {text}", file=sys.stderr, flush=True)


def _state(coord, place: str) -> str:
    from ..places import place_status

    coord.sync()
    return place_status(coord.place(place), coord.resources()).health_text()


def cmd_check(args: argparse.Namespace) -> int:
    from ..coordinator import Coordinator
    from ..errors import JobError
    from ..run import FarmRequest, run_pipeline

    pipeline = Path(args.pipeline)
    if not pipeline.exists():
        raise JobError(f"{pipeline}: pipeline file not found (run from the farm repository, or give --pipeline)")
    with Coordinator(args.coordinator) as coord:
        place = coord.place(args.place)  # a clear error for an unknown name
        board = place.tags.get("board")
        address = coord.address
        before = _state(coord, args.place)
    if board is None and not args.env:
        raise JobError(f"{args.place} has no board tag: give its env file with --env")
    tags = {"name": args.place, **({"board": board} if board else {})}
    _note(f"health check of {args.place} ({before}) with {pipeline}")
    run = run_pipeline(pipeline, out=Path(args.out) if args.out else None,
                       env_override=[Path(args.env)] if args.env else None,
                       farm=FarmRequest(tags, timeout=args.timeout, coordinator=address, health_check=True))
    with Coordinator(address) as coord:
        after = _state(coord, args.place)
    _note(f"health check of {args.place} {run.info.status}: {args.place} is {after}")
    print(run.path)
    return run.status


def cmd_set(args: argparse.Namespace) -> int:
    from ..coordinator import Coordinator
    from ..places import set_health

    with Coordinator(args.coordinator) as coord:
        previous = set_health(coord, args.place, args.state)
        now = _state(coord, args.place)
    _note(f"{args.place} is {now} (was {previous or 'untagged'})")
    return 0


def register(sub) -> None:
    p = sub.add_parser("health", help="a place's health: check it (boot + a command) or set it by hand",
                       description="farm records every boot of `farm run --farm` on its place: after 3 "
                       "infrastructure failures in a row (power, console, bootloader, TFTP; every failed attempt of "
                       "a boot counts) the place is tagged "
                       "farm_health=unhealthy and reservations skip it; a passing health check tags it "
                       "farm_health=ok again. `farm places` shows the state.")
    verbs = p.add_subparsers(dest="health_command", metavar="VERB", required=True)

    def add(name: str, func, help: str, description: str) -> argparse.ArgumentParser:
        v = verbs.add_parser(name, help=help, description=description)
        add_coordinator(v)
        v.set_defaults(func=func)
        return v

    v = add("check", cmd_check, "run the health pipeline on exactly PLACE, healthy or not",
            "Reserve and lock PLACE even if it is tagged unhealthy, run the health pipeline on it (boot the "
            "image, run a command on its shell) and give it back. A passing boot tags it farm_health=ok and "
            "resets its failure count; a failing one counts as another infrastructure failure. Exit codes "
            "as farm run; prints the run directory last.")
    v.add_argument("place", metavar="PLACE")
    v.add_argument("--pipeline", default=DEFAULT_PIPELINE, help=f"the health pipeline (default {DEFAULT_PIPELINE})")
    v.add_argument("--env", metavar="ENV", help="the place's env file (default env/<board>.yaml)")
    v.add_argument("--out", metavar="DIR", type=out_dir_arg, help="run directory (default results/<run-id>)")
    v.add_argument("--timeout", type=number_arg(0, 7 * 86400, low_open=True, unit="s"), default=3600, metavar="S",
                   help="give up waiting for the place after S seconds (default 3600)")

    v = add("set", cmd_set, "tag PLACE healthy (ok) or unhealthy by hand",
            "Set PLACE's farm_health tag: `unhealthy` takes it out of farm's reservations (e.g. for repair), "
            "`ok` puts it back and resets its infrastructure failure count. A waiting reservation sees the "
            "change at the coordinator's next scheduling pass (within 15 s).")
    v.add_argument("place", metavar="PLACE")
    v.add_argument("state", choices=("ok", "unhealthy"))
