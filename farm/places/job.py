"""The whole thing, for a job: reserve with a deadline, lock, hand the place over, give it back however the job ends."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from typing import Callable, Iterator

import attrs

from .. import signals
from ..coordinator import Coordinator, CoordinatorLost, CoordinatorUnreachable, format_tags
from ..errors import FarmError, InfrastructureError, JobError
from ..lease import Lease, own_leases
from ..place_target import power_off, refresh_remote_places
from .loadgens import LOADGENS_ENV, environment, generator_filter, login_of, order, wanted
from .locking import lock, lock_stands, newer_leases, orphaned_leases
from .reserve import reserve, wait_for_allocation
from .status import place_status
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
    #: the load clients taken with the board (farm.places.loadgens): (name, place, lease), in the order taken
    loadgens: tuple[tuple[str, str, Lease], ...] = ()


def default_job_id() -> str:
    return os.environ.get("CI_JOB_ID") or os.environ.get("GITHUB_RUN_ID") or f"pid{os.getpid()}"


@contextlib.contextmanager
def acquired_place(tags: dict[str, str], *, timeout: float, coordinator: str | None,
                   prio: float = 0.0, job: str | None = None,
                   on_wait: Callable[[str], None] | None = None,
                   healthy_only: bool = True, loadgens: bool = False) -> Iterator[PlaceLease]:
    """Reserve a place with ``tags``, wait at most ``timeout`` s for it, lock it, set LG_PLACE/LG_COORDINATOR.

    Leaving the block, however it is left (normally, by an exception, Ctrl-C or SIGTERM), powers the
    board off, releases the place, drops the lease and cancels the reservation, then restores the
    two environment variables. See the contract in docs/farm.md.

    Places farm tagged unhealthy are not given out, unless ``healthy_only`` is False (a health
    check, which must be able to take one: see :func:`record_boot_result`).

    With ``loadgens`` (the job drives load generators: ``farm run`` of a pipeline with a sweep whose
    ``generator`` is not the lab host), the board is given with the load clients its place names (tag
    ``farm_loadgens``): each is reserved and locked after the board, within the same ``timeout``, and
    given back before it (:mod:`farm.places.loadgens`); ``$FARM_LOADGENS`` says where they are
    inside the block. Without, they are left to the jobs that drive them.
    """
    saved_env = {key: os.environ.get(key) for key in ("LG_PLACE", "LG_COORDINATOR", LOADGENS_ENV)}
    coord: Coordinator | None = None
    board = _Taken("board")
    generators: list[_Taken] = []
    ended = False
    with signals.interrupts():  # SIGTERM, SIGHUP unwind the block like Ctrl-C (the farm command's already do)
        try:
            deadline = time.monotonic() + timeout
            coord = _first_connection(coordinator, deadline, on_wait)
            job = job or default_job_id()
            while True:
                try:
                    _take(coord, board, tags, prio=prio, job=job, healthy_only=healthy_only, deadline=deadline,
                          timeout=timeout, on_wait=on_wait)
                    place = board.place
                    logins = _take_generators(coord, place, generators, prio=prio, job=job,
                                              healthy_only=healthy_only, deadline=deadline, timeout=timeout,
                                              on_wait=on_wait) if loadgens else {}
                    break
                except CoordinatorLost as exc:
                    if time.monotonic() >= deadline:
                        raise
                    coord = _queue_again(coord, [board, *generators], exc, deadline, on_wait)
                    generators.clear()
            os.environ["LG_PLACE"], os.environ["LG_COORDINATOR"] = place, coord.address
            if logins:
                os.environ[LOADGENS_ENV] = environment(logins)
            else:
                os.environ.pop(LOADGENS_ENV, None)
            refresh_remote_places()  # an env file's RemotePlace must see the lock we just took
            yield PlaceLease(place=place, coordinator=coord.address, token=board.token, owner=coord.owner,
                             tags=own_tags(coord.place(place).tags), lease=board.lease,
                             loadgens=tuple((g.name, g.place, g.lease) for g in generators))
            ended = True
        finally:
            # the clean-up runs to its end; a signal that came meanwhile is raised after it, unless
            # the block is already being left by an exception (which then keeps its message)
            with signals.deferred(deliver=ended):
                _give_back(coord, board, generators)
                for key, value in saved_env.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value


def _take_generators(coord: Coordinator, place: str, generators: list[_Taken], **take) -> dict[str, dict]:
    """Take the load clients ``place`` names, after its board, each appended to ``generators`` as it
    is being taken (to be given back however far it got); their SSH logins by name."""
    logins = {}
    for name in order(wanted(coord.place(place).tags, place)):
        generators.append(taken := _Taken(name))
        try:
            _take(coord, taken, generator_filter(name), **take)
        except JobError as exc:  # the lab's wiring names a load client the coordinator does not have
            raise InfrastructureError(f"place {place} names load generator {name} (tag farm_loadgens), "
                                      f"but {exc}") from None
        logins[name] = login_of(coord, taken.place, name)
    return logins


#: how long a job that starts while the coordinator cannot be reached tries again (a coordinator
#: being restarted is back within seconds; a wrong address should not keep a job for its whole timeout)
FIRST_CONNECT_PATIENCE = 30.0


def _first_connection(address: str | None, deadline: float, on_wait: Callable[[str], None] | None) -> Coordinator:
    """The job's connection to the coordinator. One that cannot be reached is tried again every 2 s
    for up to :data:`FIRST_CONNECT_PATIENCE` s (within the job's deadline), saying so at once: a job
    started while the lab's coordinator restarts (a CI retry a second after the last attempt failed)
    must not fail, nor spend CI's retries, on those seconds."""
    t0 = time.monotonic()
    try:
        return Coordinator(address)
    except CoordinatorUnreachable as exc:
        first = exc
    until = min(deadline, time.monotonic() + FIRST_CONNECT_PATIENCE)
    if on_wait:
        on_wait(f"{first}; trying again for up to {max(0.0, until - time.monotonic()):.0f} s")
    fresh = _connect_until(first.address, until)
    if fresh is None:
        raise CoordinatorUnreachable(first.address, f"{first.reason}; tried for {time.monotonic() - t0:.0f} s") \
            from None
    return fresh


#: how long an allocated place may stay unusable (its exporter down or not answering) before the
#: reservation is made anew, so that the coordinator may give another place
REALLOCATE_AFTER = 20.0


@attrs.define
class _Taken:
    """A place being taken (the board, or a load client): filled in as it goes, given back however
    far it got."""

    name: str
    place: str | None = None
    token: str | None = None
    lease: Lease | None = None


def _take(coord: Coordinator, taken: _Taken, tags: dict[str, str], *, prio: float, job: str, healthy_only: bool,
          deadline: float, timeout: float, on_wait: Callable[[str], None] | None) -> None:
    """Reserve a place with ``tags``, wait for it, and lock it once it can be used; until ``deadline``.

    A place the coordinator allocates is not always one that can be locked now: its exporter is down
    (the coordinator gives it out all the same) or does not answer (a lab host's network cut), or
    another job may still drive it (:func:`orphaned_leases`: its lock was lost when the coordinator
    restarted). Such a place is waited for, the reservation kept alive; one unusable for
    :data:`REALLOCATE_AFTER` seconds is handed back for a new reservation (the coordinator may give
    another place). Only at ``deadline`` is it an InfrastructureError, naming why."""
    taken.token = reserve(coord, tags, prio=prio, wait=False, healthy_only=healthy_only).token
    unusable_since: float | None = None
    told: set[str] = set()
    since = signals.arrivals()
    while True:
        signals.raise_if_lost(since)
        taken.place = wait_for_allocation(coord, taken.token, tags, max(0.1, deadline - time.monotonic()), on_wait,
                                          said=timeout)
        reason = _why_unusable(coord, taken.place)
        if reason is None:
            try:
                taken.lease = lock(coord, taken.place, job=job)
            except InfrastructureError as exc:
                if not _transient(exc):
                    raise
                reason = str(exc)
            else:
                coord.sync()
                if coord.place(taken.place).acquired_resources or not _matches_anything(coord, taken.place):
                    return
                # the coordinator locked it with none of its resources (its exporter went between our
                # look and the lock): a board without console or power; give it back and wait
                reason = f"{taken.place} was locked without its resources (its exporter went away)"
                _give_back_one(coord, taken.place, None, taken.lease, power=False)
                taken.lease = None
        now = time.monotonic()
        if now >= deadline:
            raise InfrastructureError(f"{reason}; no usable place with {format_tags(tags)} within the timeout "
                                      f"(reservation {taken.token} cancelled)")
        if on_wait and reason not in told:
            on_wait(f"waiting: {reason}")
            told.add(reason)
        unusable_since = now if unusable_since is None else unusable_since
        if now - unusable_since >= REALLOCATE_AFTER:
            fresh = reserve(coord, tags, prio=prio, wait=False, healthy_only=healthy_only).token
            with contextlib.suppress(FarmError):
                coord.cancel_reservation(taken.token)
            taken.token, unusable_since = fresh, None
            continue
        coord.poll_reservation(taken.token)  # keeps the allocation alive (60 s without a poll drop it)
        coord.wait_for_change(min(5.0, max(0.1, deadline - now)))


def _queue_again(coord: Coordinator, takens: list[_Taken], lost: CoordinatorLost, deadline: float,
                 on_wait: Callable[[str], None] | None) -> Coordinator:
    """A new connection and a clean slate for a job that lost the coordinator before it had its places.

    labgrid's coordinator keeps reservations and locks in memory: restarted, it forgets the queue,
    and every job waiting in it would fail (CANCELLED). A job that has not begun (it waits for its
    board, or holds the board and waits for a load client) has driven nothing, so it waits for the
    coordinator to come back, within its own deadline, and takes its places again (at the back of
    the new queue, with its priority). A job that has begun never does this: its lock is gone with
    the restart, and another job may be on the board already (:func:`check_still_held`).

    What the broken connection left is cleared: the leases this job wrote on the places it locked or
    was locking (the coordinator keeps tags across a restart; a lease names its reservation), and its
    old reservations (the connection broke but the coordinator stayed: they are still queued, and
    its locks still stand, so they are released). Every one of ``takens`` is emptied (if the
    coordinator stays away, all but those with a lease: the block's give-back tries those once more)."""
    if on_wait:
        doing = "while waiting for a place" if takens[0].lease is None else "before the job began"
        on_wait(f"lost the coordinator at {coord.address} {doing} ({lost}); reserving again once it is back")
    stale = [(t.place, t.token, t.lease) for t in takens]
    for t in takens:
        if t.lease is None:  # a reservation is all it has: nothing to give back if the coordinator stays away
            t.place, t.token = None, None
    fresh = _connect_until(coord.address, deadline)
    if fresh is None:  # a place locked stays in its taken: the block's give-back tries it once more
        raise InfrastructureError(f"{lost}; the coordinator at {coord.address} was not back within the timeout") \
            from None
    coord.close()
    for t in takens:
        t.place, t.token, t.lease = None, None, None
    tokens = {token for _, token, _ in stale if token is not None}
    if not tokens:
        return fresh
    for place, token, lease in reversed(stale):
        if lease is not None and place is not None:
            with contextlib.suppress(FarmError):
                _give_back_one(fresh, place, token, lease, power=False)
        elif token is not None:
            with contextlib.suppress(FarmError):
                fresh.cancel_reservation(token)
    with contextlib.suppress(FarmError):
        fresh.sync()
        for name, place in fresh.places().items():
            # this process's leases for those reservations only: another block of the same process (two
            # boards taken at once through this API) may still drive its board, held back for it by its lease
            for lease in own_leases(place.tags):
                if lease.token in tokens:
                    fresh.set_tags(name, {lease.key: ""})
    return fresh


def _connect_until(address: str, deadline: float) -> Coordinator | None:
    """A connection to the coordinator at ``address``, tried every 2 s until ``deadline`` (the last try
    at it); None if none came."""
    while True:
        try:
            return Coordinator(address, connect_timeout=max(1.0, min(10.0, deadline - time.monotonic())))
        except FarmError:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(2.0, left))


def _why_unusable(coord: Coordinator, place: str) -> str | None:
    coord.sync()
    current = coord.place(place)
    status = place_status(current, coord.resources())
    if status.health != "ok":
        return f"{place} cannot be used now: {status.health}"
    if (orphans := orphaned_leases(current)):
        return (f"{place} may still be driven by " + ", ".join(f"job {o.job} (pid {o.pid} on {o.host})" for o in orphans)
                + ", whose lock the coordinator lost")
    return None


def _matches_anything(coord: Coordinator, place: str) -> bool:
    """Whether the place has matches at all (a place without any is a person's, locked as it is)."""
    return bool(getattr(coord.place(place), "matches", None))


def _transient(exc: InfrastructureError) -> bool:
    """A lock refused for a reason that passes: an exporter that did not answer, or is not there yet."""
    text = str(exc)
    return "Failed to acquire resources" in text or "did not answer" in text or "cannot be used" in text


def _give_back(coord: Coordinator | None, board: _Taken, generators: list[_Taken] = ()) -> None:
    """Best effort, step by step: one failing step does not skip the next. The load clients first,
    in the reverse order they were taken, then the board."""
    if coord is None:
        return
    if board.token is None and board.lease is None and not generators:  # nothing taken: nothing to wait for
        coord.close()
        return
    coord = _reconnected(coord)
    try:
        for g in reversed(list(generators)):
            _give_back_one(coord, g.place, g.token, g.lease, power=False)
        _give_back_one(coord, board.place, board.token, board.lease, power=True)
    finally:
        coord.close()


def _give_back_one(coord: Coordinator, place: str | None, token: str | None, locked: Lease | None, *,
                   power: bool) -> None:
    """One place: power off (a board), cancel its reservation, release it if still ours, drop the lease."""
    ours = locked is not None and place is not None and _still_ours(coord, place, locked)
    if ours and power:
        with contextlib.suppress(Exception):
            power_off(place, coord.address)
    if token is not None:  # before the release: see locking.cancel_reservations
        try:
            coord.cancel_reservation(token)
        except FarmError as exc:
            _log.warning("farm: could not cancel reservation %s (%s); the coordinator drops it once it is "
                         "not polled for 60 s", token, exc)
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


#: how long giving a place back waits for a coordinator that does not answer (it is being restarted)
GIVE_BACK_PATIENCE = 60.0


def _reconnected(coord: Coordinator) -> Coordinator:
    """``coord``, or a new connection if its update stream is gone (the coordinator restarted during
    the block): on the dead one every step would fail, and whether the lock stands could not be told.
    A coordinator being restarted is waited for, up to :data:`GIVE_BACK_PATIENCE` seconds: given up
    at once, the lease would stay behind on the place for ``farm janitor``."""
    if coord.connected():
        return coord
    fresh = _connect_until(coord.address, time.monotonic() + GIVE_BACK_PATIENCE)
    if fresh is None:
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
        places = coord.places()
    for name, place, held in lease.loadgens:  # a load client lost is another job's to drive now
        current = places.get(place)
        if current is None or not lock_stands(current, lease.owner, held):
            raise InfrastructureError(
                f"lost the lock on load generator {name} (place {place}): "
                + ("the coordinator no longer knows it" if current is None else
                   f"held now by {current.acquired or 'nobody'}")
                + f" (was the coordinator at {lease.coordinator} restarted?); not driving it further")
    current = places.get(lease.place)
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
