"""Who really holds a place: a lease record next to labgrid's lock, so stale locks can be found.

labgrid 26 knows only the lock's owner ("host/user") and never expires a lock. When farm locks a
place it first writes a *lease* into a place tag of its own (``farm_lease_<id>``): the owner, the
holding process (host, pid and its start time, so a reused pid is not mistaken for it), the job,
the reservation token and when it was written. A lease whose process is gone marks a lock the
janitor may release; of two leases of one owner on a place, the newer one is the lock's (the older
one's lock was lost: the coordinator restarted, or it was kicked).

Everything here is pure except :func:`new_lease` and :func:`holder_state`, which look at /proc.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import time

import attrs

from .proc import boot_id, start_time

LEASE_TAG_PREFIX = "farm_lease_"
_FIELD = re.compile(r"^[A-Za-z0-9._+@/:-]*$")
_ENCODED = ("owner", "host", "pid", "start", "boot", "job", "token", "since")


@attrs.frozen
class Lease:
    key: str      # the place tag that holds it: farm_lease_<id>
    owner: str    # the labgrid lock owner it belongs to, "host/user"
    host: str     # where the holding process runs
    pid: int
    start: int    # the process' start time (clock ticks after boot)
    boot: str     # the host's boot id (first 8 characters): pids restart at boot
    job: str
    token: str = ""  # the reservation token, cancelled with the lock
    since: float = 0.0  # when it was written (epoch seconds; 0: a lease of an older farm)

    def encode(self) -> str:
        return ",".join(f"{name}={getattr(self, name)}" for name in _ENCODED)

    @classmethod
    def decode(cls, key: str, value: str) -> "Lease | None":
        """The lease stored in tag ``key``, or None if it is not one of farm's (never raises)."""
        if not key.startswith(LEASE_TAG_PREFIX):
            return None
        try:
            fields = dict(item.split("=", 1) for item in value.split(","))
            return cls(key=key, owner=fields["owner"], host=fields["host"], pid=int(fields["pid"]),
                       start=int(fields["start"]), boot=fields["boot"], job=fields["job"],
                       token=fields.get("token", ""), since=float(fields.get("since", 0)))
        except (KeyError, ValueError):
            return None


def clean(value: str) -> str:
    """A value safe inside a lease (no ',' or '='): other characters become '_'."""
    return "".join(c if _FIELD.match(c) else "_" for c in value)[:120]


def new_lease(owner: str, job: str, token: str = "", pid: int | None = None) -> Lease:
    """A lease held by process ``pid`` (default: this one) on this host."""
    pid = os.getpid() if pid is None else pid
    start = start_time(pid)
    if start is None:
        raise ValueError(f"no process {pid} to hold a lease")
    return Lease(key=LEASE_TAG_PREFIX + secrets.token_hex(4), owner=clean(owner), host=clean(socket.gethostname()),
                 pid=pid, start=start, boot=boot_id(), job=clean(job), token=clean(token),
                 since=round(time.time(), 3))


def holder_state(lease: Lease) -> str:
    """``"alive"``, ``"gone"``, or ``"unknown"`` (held on another host: farm cannot tell from here)."""
    if lease.host != clean(socket.gethostname()):
        return "unknown"
    if lease.boot != boot_id():
        return "gone"  # the host rebooted since
    return "alive" if start_time(lease.pid) == lease.start else "gone"


def leases_in(tags: dict[str, str]) -> list[Lease]:
    return [lease for key, value in sorted(tags.items()) if (lease := Lease.decode(key, value))]


def own_leases(tags: dict[str, str]) -> list[Lease]:
    """The leases in ``tags`` that this very process holds (same host, pid and process start)."""
    return [lease for lease in leases_in(tags) if lease.pid == os.getpid() and holder_state(lease) == "alive"]


def plain_tags(tags: dict[str, str]) -> dict[str, str]:
    """The place's own tags, without farm's lease records."""
    return {k: v for k, v in tags.items() if not k.startswith(LEASE_TAG_PREFIX)}
