"""``farm places|reserve|lock|release|who|console|janitor``: the farm's boards, through its coordinator."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from datetime import datetime

from . import add_coordinator
from ..values import number_arg, shown


def _coordinator(args: argparse.Namespace):
    from ..coordinator import Coordinator

    return Coordinator(args.coordinator)


def _when(epoch: float | None) -> str:
    return datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M:%S") if epoch else "-"


def _note(text: str) -> None:
    print(f"farm: {text}", file=sys.stderr, flush=True)


def cmd_places(args: argparse.Namespace) -> int:
    from ..coordinator import format_tags
    from ..places import list_places

    with _coordinator(args) as coord:
        places = list_places(coord)
    if args.json:
        print(json.dumps([p.as_dict() for p in places], indent=2))
        return 0
    rows = [("PLACE", "TAGS", "HELD BY", "HEALTH")]
    rows += [(p.name, format_tags(p.tags), p.holder or ("reserved" if p.reservation else "free"), p.health_text())
             for p in places]
    _table(rows)
    return 0


def cmd_reserve(args: argparse.Namespace) -> int:
    from ..coordinator import parse_tags
    from ..places import reserve

    tags = parse_tags(args.tags)
    wait = args.wait or args.timeout is not None
    # a killed wait cancels its reservation: SIGTERM unwinds it like Ctrl-C (farm.signals, set up by farm.cli)
    with _coordinator(args) as coord:
        reserved = reserve(coord, tags, prio=args.prio, wait=wait, timeout=args.timeout, on_wait=_note,
                           healthy_only=not args.any_health)
    print(f"export LG_TOKEN={shlex.quote(reserved.token)}")
    if reserved.place:
        print(f"export LG_PLACE={shlex.quote(reserved.place)}")
        _note(f"{reserved.place} is reserved for you: lock it within a minute (farm lock), or it goes back")
    else:
        _note(f"reservation {reserved.token} is waiting; labgrid drops it unless polled (farm reserve --wait)")
    return 0


def cmd_lock(args: argparse.Namespace) -> int:
    import os

    from ..places import default_job_id, lock, resolve_place

    with _coordinator(args) as coord:
        place = resolve_place(coord, args.place)
        holder = args.holder_pid or os.getppid()  # the shell (or CI job script) that asked for the lock
        lease = lock(coord, place, job=args.job or default_job_id(), holder_pid=holder)
        print(f"export LG_PLACE={shlex.quote(place)}")
        print(f"export LG_COORDINATOR={shlex.quote(coord.address)}")
        _note(f"{place} locked by {coord.owner} (lease {lease.key}: while process {lease.pid} lives; "
              "farm release gives it back)")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    from ..places import release, resolve_place

    with _coordinator(args) as coord:
        place = resolve_place(coord, args.place)
        done = release(coord, place, power=not args.no_power_off)
    _note(f"{place}: {', '.join(done)}")
    return 0


def cmd_who(args: argparse.Namespace) -> int:
    from ..lease import holder_state
    from ..places import who

    with _coordinator(args) as coord:
        held = who(coord)
    if args.json:
        print(json.dumps([p.as_dict() for p in held], indent=2))
        return 0
    rows = [("PLACE", "USER", "HOST", "SINCE", "JOB", "HOLDER")]
    for p in held:
        host, _, user = (p.holder or "").partition("/")
        leases = [lease for lease in p.leases if lease.owner == p.holder]
        job = ", ".join(lease.job for lease in leases) or "-"
        holder = ", ".join(f"pid {lease.pid} {holder_state(lease)}" for lease in leases) or "manual lock"
        rows.append((p.name, user, host, _when(p.since), job, holder))
    _table(rows)
    return 0


def cmd_console(args: argparse.Namespace) -> int:
    from ..boot.terminal import interact
    from ..place_target import place_target, serial_console
    from ..places import resolve_place

    with _coordinator(args) as coord:
        place = resolve_place(coord, args.place)
        holder = coord.place(place).acquired
        if holder != coord.owner:
            from ..errors import JobError

            raise JobError(f"{place} is {'locked by ' + holder if holder else 'not locked'}: "
                           f"lock it first (farm lock {place})")
        address = coord.address
    with place_target(place, address) as target:
        console = serial_console(target)
        _note(f"console of {place} attached, Ctrl-] to leave (the board keeps its power)")
        interact(console)
    return 0


def cmd_janitor(args: argparse.Namespace) -> int:
    from ..places import janitor

    with _coordinator(args) as coord:
        plan = janitor(coord, dry_run=args.dry_run)
        owner = coord.owner
    verbs = {"release": "would release" if args.dry_run else "released",
             "forget": "would forget stale leases of" if args.dry_run else "forgot stale leases of", "keep": "kept"}
    for action in plan:
        print(shown(f"{verbs[action.action]} {action.place}: {action.reason}"))
    if not plan:
        print(f"nothing to do: no place is locked by {owner} or carries its leases")
    return 0


def _table(rows: list[tuple[str, ...]]) -> None:
    """A table on stdout; the coordinator's names, tags and owners are anyone's to set (it has no
    authentication): their control characters are shown escaped, never sent to the terminal."""
    rows = [tuple(shown(cell) for cell in row) for row in rows]
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())


def register(sub) -> None:
    def add(name: str, func, help: str, description: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=description)
        add_coordinator(p)
        p.set_defaults(func=func)
        return p

    p = add("places", cmd_places, "list the farm's places: tags, who holds each, health",
            "List every place of the coordinator with its tags, its holder (or free/reserved) and its "
            "health: are all its resources exported and available, and is it tagged unhealthy by farm "
            "(infrastructure failures in a row; see farm health)?")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = add("reserve", cmd_reserve, "reserve a place by tags; prints `export LG_TOKEN=...`",
            "Reserve a place whose tags match TAG=VAL... in the coordinator's queue (by priority, then "
            "age). With --wait (or --timeout) wait until one is allocated and print `export LG_TOKEN=...` "
            "and `export LG_PLACE=...`; at the deadline the reservation is cancelled and farm exits 3.")
    p.add_argument("tags", nargs="+", metavar="TAG=VAL", help="e.g. board=maaxboard arch=aarch64")
    p.add_argument("--wait", action="store_true", help="wait until a place is allocated")
    p.add_argument("--timeout", type=number_arg(0, 7 * 86400, low_open=True, unit="s"), metavar="S",
                   help="give up after S seconds (implies --wait)")
    p.add_argument("--prio", type=number_arg(-1e6, 1e6), default=0.0, metavar="N", help="priority in the queue (default 0)")
    p.add_argument("--any-health", action="store_true",
                   help="also places farm tagged unhealthy (by default the reservation asks for farm_health=ok)")

    p = add("lock", cmd_lock, "lock a place for you; prints `export LG_PLACE=...`",
            "Lock PLACE (a name, +TOKEN, or $LG_PLACE / the place of $LG_TOKEN) for this user and host. "
            "farm records a lease held by the calling shell: if that process is gone, farm janitor may "
            "release the lock.")
    p.add_argument("place", nargs="?", metavar="PLACE")
    p.add_argument("--job", help="a job id recorded in the lease (default $CI_JOB_ID)")
    p.add_argument("--holder-pid", type=int, metavar="PID",
                   help="the process whose life the lock lasts (default: the calling shell)")

    p = add("release", cmd_release, "power a place's board off and release it",
            "Power off the board of PLACE (default $LG_PLACE), release your lock, drop its lease and "
            "cancel its reservation. Never releases a place someone else holds.")
    p.add_argument("place", nargs="?", metavar="PLACE")
    p.add_argument("--no-power-off", action="store_true", help="leave the board powered")

    p = add("who", cmd_who, "who holds which place, since when, for which job",
            "List locked places: user, host, since when, the job of farm's lease and whether its "
            "process still lives ('manual lock' when taken without farm).")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = add("console", cmd_console, "the serial console of a place you locked (Ctrl-] leaves)",
            "Attach this terminal to the serial console of PLACE (default $LG_PLACE), which you must "
            "have locked. Ctrl-] leaves; the board keeps its power.")
    p.add_argument("place", nargs="?", metavar="PLACE")

    p = add("janitor", cmd_janitor, "release your places held by jobs that no longer exist",
            "Release the places locked by you (this host/user) whose farm lease names a process that "
            "no longer exists, power their boards off and cancel their reservations. Places held by "
            "anyone else, places whose holder lives, and manual locks are never touched.")
    p.add_argument("--dry-run", action="store_true", help="only say what would be done")
