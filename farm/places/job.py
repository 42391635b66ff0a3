"""The whole thing, for a job: reserve with a deadline, lock, hand the place over, give it back however the job ends."""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Callable, Iterator

import attrs

from .. import signals
from ..coordinator import Coordinator
from ..errors import FarmError, InfrastructureError
from ..lease import Lease
from ..place_target import power_off, refresh_remote_places
from .locking import lock, lock_stands, newer_leases
from .reserve import reserve, wait_for_allocation
from .tags import own_tags

_log = logging.getLogger(__name__)


@attrs.frozen
class PlaceLease:
    """A place reserved and locked for the duration of an :func:`acquired_place` block."""

    place: str          # the place name (also in $LG_PLACE)
    coordinator: str    # HOST:PORT (also in $LG_COORDINATOR)
    token: str          # the reservation token
    owner: str          # the lock owner, "host/user"
    tags: dict[str, str]  # the place's tags
    lease: Lease


def default_job_id() -> str:
    return os.environ.get("CI_JOB_ID") or os.environ.get("GITHUB_RUN_ID") or f"pid{os.getpid()}"


@contextlib.contextmanager
def acquired_place(tags: dict[str, str], *, timeout: float, coordinator: str | None,
                   prio: float = 0.0, job: str | None = None,
                   on_wait: Callable[[str], None] | None = None,
                   healthy_only: bool = True) -> Iterator[PlaceLease]:
    """Reserve a place with ``tags``, wait at most ``timeout`` s for it, lock it, set LG_PLACE/LG_COORDINATOR.

    Leaving the block, however it is left (normally, by an exception, Ctrl-C or SIGTERM), powers the
    board off, releases the place, drops the lease and cancels the reservation, then restores the
    two environment variables. See the contract in docs/farm.md.

    Places farm tagged unhealthy are not given out, unless ``healthy_only`` is False (a health
    check, which must be able to take one: see :func:`record_boot_result`).
    """
    saved_env = {key: os.environ.get(key) for key in ("LG_PLACE", "LG_COORDINATOR")}
    coord: Coordinator | None = None
    token = place = None
    locked: Lease | None = None
    ended = False
    with signals.interrupts():  # SIGTERM, SIGHUP unwind the block like Ctrl-C (the farm command's already do)
        try:
            coord = Coordinator(coordinator)
            reserved = reserve(coord, tags, prio=prio, wait=False, healthy_only=healthy_only)
            token = reserved.token
            place = wait_for_allocation(coord, token, tags, timeout, on_wait)
            locked = lock(coord, place, job=job or default_job_id())
            os.environ["LG_PLACE"], os.environ["LG_COORDINATOR"] = place, coord.address
            refresh_remote_places()  # an env file's RemotePlace must see the lock we just took
            yield PlaceLease(place=place, coordinator=coord.address, token=token, owner=coord.owner,
                             tags=own_tags(coord.place(place).tags), lease=locked)
            ended = True
        finally:
            # the clean-up runs to its end; a signal that came meanwhile is raised after it, unless
            # the block is already being left by an exception (which then keeps its message)
            with signals.deferred(deliver=ended):
                _give_back(coord, place, token, locked)
                for key, value in saved_env.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value


def _give_back(coord: Coordinator | None, place: str | None, token: str | None, locked: Lease | None) -> None:
    """Best effort, step by step: one failing step does not skip the next."""
    if coord is None:
        return
    coord = _reconnected(coord)
    try:
        ours = locked is not None and place is not None and _still_ours(coord, place, locked)
        if ours:
            with contextlib.suppress(Exception):
                power_off(place, coord.address)
        if token is not None:  # before the release: see locking.cancel_reservations
            with contextlib.suppress(FarmError):
                coord.cancel_reservation(token)
        if ours:
            try:
                coord.release(place, only_from=coord.owner)
            except FarmError as exc:
                if _still_ours(coord, place, locked):  # still locked: the lease stays, for farm janitor
                    _log.warning("farm: could not release %s (%s); it stays locked with this job's lease "
                                 "until `farm janitor` releases it", place, exc)
                    return
        if locked is not None and place is not None:
            with contextlib.suppress(FarmError):
                coord.set_tags(place, {locked.key: ""})
    finally:
        coord.close()


def _reconnected(coord: Coordinator) -> Coordinator:
    """``coord``, or a new connection if its update stream is gone (the coordinator restarted during
    the block): on the dead one every step would fail, and whether the lock stands could not be told."""
    if coord.connected():
        return coord
    try:
        fresh = Coordinator(coord.address, connect_timeout=10)
    except FarmError:
        return coord
    coord.close()
    return fresh


def _still_ours(coord: Coordinator, place: str, lease: Lease) -> bool:
    """Whether our lock stands (see :func:`lock_stands`)."""
    try:
        coord.sync()
        current = coord.place(place)
    except FarmError:
        return True  # cannot tell; the coordinator's release-from check still protects other owners
    return lock_stands(current, coord.owner, lease)



def check_still_held(lease: PlaceLease) -> None:
    """Raise InfrastructureError unless ``lease``'s place is still locked by us.

    labgrid's coordinator keeps locks in memory: after a restart every place is free, and another
    job may take ours. farm asks before each boot and benchmark and stops using the board at once.
    """
    with Coordinator(lease.coordinator, connect_timeout=10) as coord:
        coord.sync()
        current = coord.places().get(lease.place)
    if current is not None and lock_stands(current, lease.owner, lease.lease):
        return
    if current is None:
        now = "the coordinator no longer knows the place"
    elif current.acquired == lease.owner:
        others = [f"{other.job} (pid {other.pid})" for other in newer_leases(current, lease.lease)]
        now = f"held now by another job of {current.acquired}: {', '.join(others) or 'without a farm lease'}"
    else:
        now = f"held now by {current.acquired or 'nobody'}"
    raise InfrastructureError(
        f"lost the lock on place {lease.place}: {now} (was the coordinator at {lease.coordinator} restarted, "
        "or the place released by hand?); not using the board further")
