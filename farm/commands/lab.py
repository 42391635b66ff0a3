"""``farm lab up|status|down``: a whole virtual farm on this machine."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _dir(args: argparse.Namespace) -> Path:
    from ..virtual.lab import default_lab_dir

    return Path(args.dir) if args.dir else default_lab_dir()


def _say(text: str) -> None:
    print(f"farm lab: {text}", file=sys.stderr, flush=True)


def cmd_up(args: argparse.Namespace) -> int:
    from ..virtual.boards import check_cpus, parse_board_counts
    from ..virtual.lab import up

    # interrupted half-way (Ctrl-C, or SIGTERM through farm.signals), up stops what it started
    lab = up(_dir(args), parse_board_counts(args.boards or []), cpus=check_cpus(args.cpus), say=_say)
    _say(f"up in {lab.directory}: {', '.join(b.place for b in lab.boards)}; `farm lab down"
         + (f" --dir {lab.directory}" if args.dir else "") + "` stops it")
    print(f"export LG_COORDINATOR={lab.coordinator}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from ..coordinator import Coordinator
    from ..errors import FarmError
    from ..places import list_places
    from ..virtual.lab import status

    lab, components = status(_dir(args))
    if args.json:
        return _status_json(lab, components)
    print(f"lab {lab.name} in {lab.directory}, coordinator {lab.coordinator}")
    for c in components:
        print(f"  {c.name:<22} pid {c.pid:<8} {'running' if c.running else 'NOT RUNNING':<12} {c.log}")
    if not components:
        print("  (nothing running: farm lab up)")
        return 0
    try:
        with Coordinator(lab.coordinator) as coord:
            for place in list_places(coord):
                print(f"  place {place.name:<16} {place.holder or 'free':<24} {place.health_text()}")
    except FarmError as exc:
        print(f"  places: {exc}")
    return 0 if all(c.running for c in components) else 3


def _status_json(lab, components) -> int:
    """``farm lab status --json``: the lab, its components and (when the coordinator answers) its places."""
    import json

    from ..coordinator import Coordinator
    from ..errors import FarmError
    from ..places import list_places

    doc = {"name": lab.name, "directory": str(lab.directory), "coordinator": lab.coordinator,
           "components": [{"name": c.name, "pid": c.pid, "running": c.running, "log": str(c.log)} for c in components],
           "places": None}
    if components:
        try:
            with Coordinator(lab.coordinator) as coord:
                doc["places"] = [p.as_dict() for p in list_places(coord)]
        except FarmError as exc:
            doc["places_error"] = str(exc)
    print(json.dumps(doc, indent=2))
    return 0 if all(c.running for c in components) else 3


def cmd_down(args: argparse.Namespace) -> int:
    from ..virtual.lab import down

    lab = down(_dir(args), say=_say)
    _say(f"down: {lab.directory}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("lab", help="a virtual farm on this machine: coordinator, exporter, PDU, QEMU boards",
                       description="Run a complete labgrid farm on 127.0.0.1 made of the real components: "
                       "labgrid-coordinator, labgrid-exporter (serial, power, TFTP and port forwards per "
                       "board), pdudaemon, sshd for staging, and QEMU twins as boards. Places are created and "
                       "tagged, so env/maaxboard.yaml and every farm places command work on it unchanged.")
    verbs = p.add_subparsers(dest="lab_command", metavar="VERB", required=True)
    dir_help = "the lab's directory (default ~/.cache/farm/lab)"

    up = verbs.add_parser("up", help="start a virtual lab; prints `export LG_COORDINATOR=...`",
                          description="Start a virtual lab and print `export LG_COORDINATOR=HOST:PORT` "
                          "(eval it, then farm places, farm reserve, ...). Fails if one is up in DIR.")
    up.add_argument("--boards", action="append", metavar="MODEL=N",
                    help="boards to create (default maaxboard=1; repeatable or comma-separated)")
    up.add_argument("--cpus", type=int, metavar="N",
                    help="vCPUs of every twin (default: the board's, 4 for a MaaXBoard); tagged cores=N")
    up.add_argument("--dir", metavar="DIR", help=dir_help)
    up.set_defaults(func=cmd_up)

    st = verbs.add_parser("status", help="show each component and place of a virtual lab")
    st.add_argument("--dir", metavar="DIR", help=dir_help)
    st.add_argument("--json", action="store_true", help="machine-readable output (one JSON object)")
    st.set_defaults(func=cmd_status)

    dn = verbs.add_parser("down", help="stop everything the lab started (and nothing else)")
    dn.add_argument("--dir", metavar="DIR", help=dir_help)
    dn.set_defaults(func=cmd_down)
