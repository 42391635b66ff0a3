"""The farm's places: see them, reserve one by tags with a deadline, lock, release, who, janitor.

A CI job (``farm run PIPELINE --farm board=maaxboard``) does all of it in one block::

    with acquired_place({"board": "maaxboard"}, timeout=600, coordinator=None) as lease:
        ...  # env/maaxboard.yaml now boots lease.place: LG_PLACE and LG_COORDINATOR are set

labgrid 26 gives reservations and locks, but a reservation waits forever and a lock never expires.
farm adds the deadline (the reservation is cancelled when it passes), a lease record next to every
lock it takes (:mod:`farm.lease`), and a janitor that releases locks whose holding process is gone,
only ever the caller's own (``release-from`` semantics: the coordinator itself checks the owner).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from datetime import datetime
from typing import Callable, Iterator

import attrs
from labgrid.remote.common import Place, ReservationState

from .coordinator import EXPORTER_ANSWER_TIMEOUT, Coordinator, NoAnswer, format_tags
from .errors import FarmError, InfrastructureError, JobError, Terminated
from .lease import Lease, clean, holder_state, leases_in, new_lease, plain_tags
from .place_target import power_off, refresh_remote_places

_log = logging.getLogger(__name__)


# --- what a place looks like -------------------------------------------------------------------

@attrs.frozen
class PlaceStatus:
    name: str
    tags: dict[str, str]          # the place's own tags (without lease records)
    comment: str
    holder: str | None            # the lock owner, "host/user"
    since: float | None           # when it was locked (epoch seconds)
    reservation: str | None       # token of the reservation it is allocated to
    leases: tuple[Lease, ...]
    health: str                   # "ok", or what is missing or unavailable
    # farm's health record of the place (see "health" below): the farm_health tag ("ok",
    # "unhealthy"; None when unset, which counts as healthy) and the consecutive infrastructure failures
    health_tag: str | None = None
    infra_failures: int = 0

    @property
    def healthy(self) -> bool:
        """Not tagged unhealthy by farm (a place without the tag counts as healthy)."""
        return self.health_tag in (None, HEALTHY)

    def matches(self, tags: dict[str, str]) -> bool:
        """Whether a reservation for ``tags`` may get this place (the coordinator adds name=<place>)."""
        own = {**self.tags, **self._health_tags(), "name": self.name}
        return all(own.get(k) == v for k, v in tags.items())

    def _health_tags(self) -> dict[str, str]:
        return {**({HEALTH_TAG: self.health_tag} if self.health_tag else {}),
                **({FAILURES_TAG: str(self.infra_failures)} if self.infra_failures else {})}

    def health_text(self) -> str:
        """The HEALTH column of ``farm places``: resources, then farm's health record."""
        parts = [] if self.health == "ok" else [self.health]
        failures = f"{self.infra_failures} infrastructure failure{'s' if self.infra_failures != 1 else ''} in a row"
        if not self.healthy:
            parts.append(f"{self.health_tag}" + (f" ({failures})" if self.infra_failures else ""))
        elif self.infra_failures:
            parts.append(failures)
        return "; ".join(parts) or "ok"

    def as_dict(self) -> dict:
        return {"name": self.name, "tags": self.tags, "comment": self.comment, "holder": self.holder,
                "since": self.since, "reservation": self.reservation, "health": self.health,
                "farm_health": self.health_tag, "infra_failures": self.infra_failures,
                "leases": [{**attrs.asdict(lease), "state": holder_state(lease)} for lease in self.leases]}


def place_health(place: Place, resources: dict) -> str:
    """Whether every match of the place finds exported, available resources (pure)."""
    if not place.matches:
        return "no resource matches configured"
    problems = []
    for match in place.matches:
        found = [(path, entry) for path, entry in _resource_entries(resources) if match.ismatch(path)]
        if not found:
            problems.append(f"nothing exported for {match!r} (exporter down?)")
            continue
        for path, entry in found:
            broken = (entry.params.get("extra") or {}).get("broken")
            if broken:
                problems.append(f"{path[3]} broken: {broken}")
            elif not entry.avail:
                problems.append(f"{path[3]} unavailable")
    return "; ".join(problems) or "ok"


def _resource_entries(resources: dict):
    for exporter, groups in resources.items():
        for group, entries in groups.items():
            for name, entry in entries.items():
                if "cls" in entry.data:  # a deleted resource keeps an empty entry
                    yield (exporter, group, entry.cls, name), entry


def place_status(place: Place, resources: dict) -> PlaceStatus:
    return PlaceStatus(name=place.name, tags=own_tags(place.tags), comment=place.comment, holder=place.acquired,
                       since=place.changed if place.acquired else None, reservation=place.reservation,
                       leases=tuple(leases_in(place.tags)), health=place_health(place, resources),
                       health_tag=place.tags.get(HEALTH_TAG) or None,
                       infra_failures=failure_count(place.tags))


def list_places(coord: Coordinator) -> list[PlaceStatus]:
    coord.sync()
    resources = coord.resources()
    return [place_status(place, resources) for _, place in sorted(coord.places().items())]


def describe_holders(statuses: list[PlaceStatus]) -> str:
    parts = []
    for s in statuses:
        if s.holder:
            when = datetime.fromtimestamp(s.since).strftime("%H:%M:%S") if s.since else "?"
            parts.append(f"{s.name} locked by {s.holder} since {when}")
        elif s.reservation:
            parts.append(f"{s.name} reserved ({s.reservation})")
        elif s.health != "ok":
            parts.append(f"{s.name}: {s.health}")
        elif not s.healthy:
            parts.append(f"{s.name} {s.health_text()}: farm health check {s.name} puts it back")
        else:
            parts.append(f"{s.name} free")
    return ", ".join(parts)


# --- reserve ---------------------------------------------------------------------------------

@attrs.frozen
class Reserved:
    token: str
    place: str | None  # None while it waits (only without --wait)


def reserve(coord: Coordinator, tags: dict[str, str], *, prio: float = 0.0, wait: bool = True,
            timeout: float | None = None, on_wait: Callable[[str], None] | None = None,
            healthy_only: bool = True) -> Reserved:
    """Reserve a place with ``tags``; with ``wait``, until it is allocated or ``timeout`` seconds pass.

    labgrid's own wait has no end; here, at the deadline (or on Ctrl-C) the reservation is cancelled
    and an :class:`InfrastructureError` says who holds the matching places. With ``healthy_only``
    (the default) the reservation also asks for ``farm_health=ok``: places farm tagged unhealthy
    are skipped (see :func:`health_filter`).
    """
    candidates = [s for s in list_places(coord) if s.matches(tags)]
    if not candidates:
        known = "; ".join(f"{s.name} [{format_tags(s.tags)}]" for s in list_places(coord)) or "none"
        raise JobError(f"no place has tags {format_tags(tags)} on {coord.address} (places: {known})")
    wanted = tags
    if healthy_only and HEALTH_TAG not in tags:
        initialise_health(coord, candidates)
        wanted = health_filter(tags)
    reservation = coord.create_reservation(wanted, prio)
    if not wait:
        return Reserved(reservation.token, _allocated(reservation))
    try:
        place = wait_for_allocation(coord, reservation.token, tags, timeout, on_wait)
    except BaseException:
        with contextlib.suppress(FarmError):
            coord.cancel_reservation(reservation.token)
        raise
    return Reserved(reservation.token, place)


def _allocated(reservation) -> str | None:
    places = reservation.allocations.get("main") or []
    return places[0] if places else None


def wait_for_allocation(coord: Coordinator, token: str, tags: dict[str, str], timeout: float | None,
                        on_wait: Callable[[str], None] | None = None) -> str:
    """The place allocated to ``token``; waits on the coordinator's place updates, polls to keep it alive."""
    deadline = None if timeout is None else time.monotonic() + timeout
    told = False
    while True:
        reservation = coord.poll_reservation(token)
        if reservation.state in (ReservationState.allocated, ReservationState.acquired):
            return _allocated(reservation)
        if reservation.state is not ReservationState.waiting:
            raise InfrastructureError(f"reservation {token} for {format_tags(tags)} is {reservation.state.name}")
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            busy = describe_holders([s for s in list_places(coord) if s.matches(tags)])
            raise InfrastructureError(f"no place with {format_tags(tags)} became free within {timeout:g} s "
                                      f"({busy}); reservation {token} cancelled")
        if not told and on_wait:
            on_wait(f"waiting for a place with {format_tags(tags)}: "
                    + describe_holders([s for s in list_places(coord) if s.matches(tags)]))
            told = True
        # a release re-runs the coordinator's scheduler, which publishes the place: wake up on that;
        # poll at least every 5 s anyway (an unpolled reservation expires after 60 s)
        coord.wait_for_change(5.0 if left is None else min(5.0, left))


# --- lock and release ------------------------------------------------------------------------

def resolve_place(coord: Coordinator, place: str | None) -> str:
    """A place name from NAME, +TOKEN, or else $LG_PLACE, else the place allocated to $LG_TOKEN."""
    token = os.environ.get("LG_TOKEN")
    place = place or os.environ.get("LG_PLACE") or (f"+{token}" if token else None)
    if not place:
        raise JobError("which place? name it, or set LG_PLACE (farm lock prints it) or LG_TOKEN (farm reserve)")
    if place.startswith("+"):
        token = place[1:]
        reservation = coord.poll_reservation(token)
        allocated = _allocated(reservation)
        if not allocated:
            raise InfrastructureError(f"reservation {token} is {reservation.state.name}, no place allocated yet "
                                      "(farm reserve --wait waits for one)")
        return allocated
    coord.place(place)  # a clear error for an unknown name
    return place


def lock(coord: Coordinator, place: str, *, job: str, holder_pid: int | None = None) -> Lease:
    """Lock ``place`` for this user, with a lease held by process ``holder_pid`` (default: this one).

    The lease is written *before* the lock, so that a farm lock never exists without one (the
    janitor leaves lease-less locks alone: those are people's). It names the reservation the place
    is allocated to, if any (the coordinator only lets its owner lock it): released, it is cancelled.
    """
    coord.sync()
    status = place_status(coord.place(place), coord.resources())
    if status.holder:
        raise InfrastructureError(f"{place} is already locked by {status.holder}"
                                  + (" (you)" if status.holder == coord.owner else ""))
    if status.health != "ok":
        raise InfrastructureError(f"{place} cannot be used: {status.health}")
    lease = new_lease(coord.owner, job, status.reservation or "", holder_pid)
    coord.set_tags(place, {lease.key: lease.encode()})
    try:
        coord.acquire(place)
    except BaseException as exc:
        # cut short (no answer in time, Ctrl-C): the lock may have been taken all the same
        _undo_lock(coord, place, lease, maybe_taken=isinstance(exc, NoAnswer) or not isinstance(exc, Exception))
        if isinstance(exc, InfrastructureError) and "Failed to acquire resources" in str(exc):
            raise InfrastructureError(
                f"{exc}: an exporter of the place did not answer within {EXPORTER_ANSWER_TIMEOUT:g} s (stopped, "
                "hung?) or refused a resource (see `farm places`)") from None
        raise
    return lease


def _undo_lock(coord: Coordinator, place: str, lease: Lease, *, maybe_taken: bool) -> None:
    """After a lock that failed or was cut short: drop the lease, unless the lock was taken after all.

    labgrid 26 marks the place locked before asking the exporters for its resources, and does not
    undo that when the call is cancelled (our timeout, Ctrl-C). Such a lock is released here; if
    that fails too, the lease stays with it, so that ``farm janitor`` releases it once this process
    is gone (a lock without a lease is a person's, which the janitor keeps forever). A lock refused
    outright (already locked, resources refused) is someone else's, or none: only the lease goes.
    """
    with contextlib.suppress(FarmError):
        if maybe_taken:
            coord.sync()
            if lock_stands(coord.place(place), coord.owner, lease):
                coord.release(place, only_from=coord.owner)
        coord.set_tags(place, {lease.key: ""})


def release(coord: Coordinator, place: str, *, power: bool = True) -> list[str]:
    """Power off and release a place this user holds, drop its leases and cancel their reservations."""
    coord.sync()
    current = coord.place(place)
    if not current.acquired:
        raise JobError(f"{place} is not locked")
    if current.acquired != coord.owner:
        raise JobError(f"{place} is locked by {current.acquired}, not by you ({coord.owner}): "
                       "farm never releases other people's places")
    mine = [lease for lease in leases_in(current.tags) if lease.owner == clean(coord.owner)]
    return _release_mine(coord, place, mine, power=power)


def _release_mine(coord: Coordinator, place: str, leases: list[Lease], *, power: bool) -> list[str]:
    done = []
    if power:
        try:
            done.append(power_off(place, coord.address))
        except Exception as exc:  # the board may be unreachable; the place must be released anyway
            done.append(f"power off failed: {exc}")
    _cancel_reservations(coord, leases)
    coord.release(place, only_from=coord.owner)
    done.append("released")
    _drop_leases(coord, place, leases)
    return done


def _cancel_reservations(coord: Coordinator, leases: list[Lease]) -> None:
    """Cancel the reservations of ``leases`` *before* their place is released.

    labgrid 26's scheduler reads a place's reservation from before the pass it runs in: cancelled
    after the release, the place would stay unavailable to waiting reservations until the
    coordinator's next pass (every 15 s). Cancelled first, the release hands it on at once.
    """
    for token in sorted({lease.token for lease in leases if lease.token}):
        coord.cancel_reservation(token)


def _drop_leases(coord: Coordinator, place: str, leases: list[Lease]) -> None:
    if leases:
        coord.set_tags(place, {lease.key: "" for lease in leases})


def who(coord: Coordinator) -> list[PlaceStatus]:
    return [s for s in list_places(coord) if s.holder]


# --- janitor ---------------------------------------------------------------------------------

@attrs.frozen
class JanitorAction:
    place: str
    action: str  # "release" (a lock of a vanished job), "forget" (stale lease records), "keep"
    reason: str
    leases: tuple[Lease, ...] = ()


def plan_janitor(statuses: list[PlaceStatus], me: str, state: Callable[[Lease], str]) -> list[JanitorAction]:
    """What the janitor does, decided from the places alone (pure; ``state`` says if a lease's holder lives).

    Only ``me``'s locks and leases are considered. A lock is released when it has leases of ``me``
    and all their holders are gone; a lock without a lease is someone's manual lock and stays.
    """
    plan = []
    for s in statuses:
        mine = [lease for lease in s.leases if lease.owner == clean(me)]
        states = {lease.key: state(lease) for lease in mine}
        gone = tuple(lease for lease in mine if states[lease.key] == "gone")
        if s.holder and s.holder != me:
            plan.append(JanitorAction(s.name, "forget" if gone else "keep", f"locked by {s.holder}, not yours", gone))
        elif s.holder == me and not mine:
            plan.append(JanitorAction(s.name, "keep", "locked by you without a farm lease (a manual lock)"))
        elif s.holder == me and len(gone) == len(mine):
            jobs = ", ".join(f"job {lease.job} (pid {lease.pid} on {lease.host})" for lease in gone)
            plan.append(JanitorAction(s.name, "release", f"its holder is gone: {jobs}", gone))
        elif s.holder == me:
            live = [lease for lease in mine if states[lease.key] != "gone"]
            plan.append(JanitorAction(s.name, "keep", "held by a live job: " + ", ".join(
                f"{lease.job} (pid {lease.pid}, {states[lease.key]})" for lease in live), gone))
        elif gone:
            plan.append(JanitorAction(s.name, "forget", "free, with stale lease records", gone))
    return plan


def janitor(coord: Coordinator, *, dry_run: bool = False) -> list[JanitorAction]:
    """Release this user's locks whose jobs vanished; forget stale lease records. Never touches others' locks."""
    plan = plan_janitor(list_places(coord), coord.owner, holder_state)
    if dry_run:
        return plan
    for action in plan:
        if action.action == "release":
            # look again right before acting: only a lock still ours, with the same dead leases and no new one
            current = coord.place(action.place)
            mine = {lease.key for lease in leases_in(current.tags) if lease.owner == clean(coord.owner)}
            if current.acquired != coord.owner or mine != {lease.key for lease in action.leases}:
                continue
            _release_mine(coord, action.place, list(action.leases), power=True)
        elif action.action == "forget":
            _cancel_reservations(coord, list(action.leases))
            _drop_leases(coord, action.place, list(action.leases))
    return plan


# --- the whole thing, for a job --------------------------------------------------------------

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
    signals = _SignalGuard()
    signals.interrupt_on_sigterm()
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
    finally:
        signals.hold()
        try:
            _give_back(coord, place, token, locked)
            for key, value in saved_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        finally:
            signals.restore()
    signals.deliver_pending()  # a signal came during the clean-up of a block that had ended normally


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
        if token is not None:  # before the release: see _cancel_reservations
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


def lock_stands(current: Place, owner: str, lease: Lease) -> bool:
    """Whether ``current`` is still locked under ``lease``: by ``owner``, with the lease on it, and no
    newer lease of the same owner (see :func:`newer_leases`)."""
    return current.acquired == owner and lease.key in current.tags and not newer_leases(current, lease)


def newer_leases(current: Place, lease: Lease) -> list[Lease]:
    """Leases of ``lease``'s owner on ``current`` written after it: the lock is theirs now.

    labgrid knows a lock only by its owner's ``host/user``. After a coordinator restart (which
    forgets locks but keeps tags, so our lease stays) or a kick, another job of the same user on the
    same runner may lock the place: the owner matches, our lease is still there; only that job's
    lease, written after ours, tells the lock is no longer ours (and that job's lock stands).
    """
    return [other for other in leases_in(current.tags)
            if other.key != lease.key and other.owner == lease.owner and other.since > lease.since]


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` (a KeyboardInterrupt) in the block, so clean-ups run.

    Only in the main thread, and only if SIGTERM has no Python handler already (the farm command
    installs its own, which stays)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        yield
        return

    def interrupt(signum, frame):
        raise Terminated(f"terminated by signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _SignalGuard:
    """Ctrl-C and SIGTERM around a job that holds a place (Python runs handlers in the main thread only).

    While the job runs, SIGTERM raises :class:`Terminated` like Ctrl-C raises KeyboardInterrupt
    (unless the caller already handles SIGTERM, e.g. the farm command: then its handler stays);
    while it gives the place back, both are held so the clean-up runs to its end, and delivered to
    the caller's handlers afterwards. Handlers are swapped with no moment on the default action.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.pending: list[int] = []
        self.active = threading.current_thread() is threading.main_thread()
        self.saved = {sig: signal.getsignal(sig) for sig in self.SIGNALS} if self.active else {}

    def interrupt_on_sigterm(self) -> None:
        if self.active and self.saved[signal.SIGTERM] in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, self._raise)

    def hold(self) -> None:
        if self.active:
            for sig in self.SIGNALS:
                signal.signal(sig, self._remember)

    def restore(self) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)

    def deliver_pending(self) -> None:
        """Raise what a signal held during the clean-up stands for, through the caller's handler if any."""
        if not self.pending:
            return
        signum = self.pending[0]
        handler = self.saved.get(signum)
        if callable(handler):
            handler(signum, None)  # Python's Ctrl-C handler, or the caller's SIGTERM one: they raise
        self._raise(signum, None)

    @staticmethod
    def _raise(signum, frame):
        if signum == signal.SIGINT:
            raise KeyboardInterrupt()
        raise Terminated(f"terminated by signal {signum}")

    def _remember(self, signum, frame) -> None:
        self.pending.append(signum)


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


# --- health: a place that keeps failing is taken out of the reservations -----------------------
#
# Every boot of a ``farm run --farm`` records its outcome on the place, in two place tags (labgrid
# keeps tags in the coordinator's places.yaml: they survive its restarts, unlike locks):
#
#   farm_health=ok|unhealthy   "unhealthy" after DEFAULT_UNHEALTHY_AFTER infrastructure failures in a
#                              row; back to "ok" after a boot that passes. Unset counts as healthy.
#   farm_infra_failures=N      the consecutive infrastructure failures so far; removed on a pass.
#
# labgrid's reservation filters compare tags for equality, with no "not": so a reservation asks
# for farm_health=ok, and every place a reservation may get must carry that tag. farm sets it on
# places that have none when it first reserves among them (and ``farm lab up`` on its places). A
# health check (``farm health check PLACE``) reserves without that filter, so it can take an
# unhealthy place; when its boot passes the place is healthy again.

HEALTH_TAG = "farm_health"
FAILURES_TAG = "farm_infra_failures"
HEALTHY, UNHEALTHY = "ok", "unhealthy"
HEALTH_STATES = (HEALTHY, UNHEALTHY)
DEFAULT_UNHEALTHY_AFTER = 3
FARM_STATE_TAGS = (HEALTH_TAG, FAILURES_TAG)


def own_tags(tags: dict[str, str]) -> dict[str, str]:
    """The place's own tags: without farm's lease records and health record."""
    return {k: v for k, v in plain_tags(tags).items() if k not in FARM_STATE_TAGS}


def failure_count(tags: dict[str, str]) -> int:
    """The place's consecutive infrastructure failures (a garbled tag counts as none)."""
    try:
        return max(0, int(tags.get(FAILURES_TAG) or 0))
    except ValueError:
        return 0


def health_filter(tags: dict[str, str]) -> dict[str, str]:
    """The reservation filter for ``tags`` that skips unhealthy places (``tags`` naming farm_health stay)."""
    return tags if HEALTH_TAG in tags else {**tags, HEALTH_TAG: HEALTHY}


def health_update(tags: dict[str, str], infrastructure_failure: bool, threshold: int) -> tuple[dict[str, str], str | None]:
    """The tags to set on a place whose tags are ``tags`` after a boot, and its new health state if
    that changes (pure). An empty value deletes a tag (labgrid's SetPlaceTags)."""
    if threshold < 1:
        raise ValueError(f"threshold must be at least 1, not {threshold}")
    current = tags.get(HEALTH_TAG) or None
    if infrastructure_failure:
        failures = failure_count(tags) + 1
        update = {FAILURES_TAG: str(failures)}
        if failures >= threshold and current != UNHEALTHY:
            update[HEALTH_TAG] = UNHEALTHY
            return update, UNHEALTHY
        return update, None
    update = {FAILURES_TAG: ""} if FAILURES_TAG in tags else {}
    if current != HEALTHY:
        update[HEALTH_TAG] = HEALTHY
    return update, (HEALTHY if current not in (None, HEALTHY) else None)


def record_boot_result(lease: PlaceLease, infrastructure_failure: bool, *,
                       threshold: int = DEFAULT_UNHEALTHY_AFTER) -> str | None:
    """Record a boot on ``lease``'s place: an infrastructure failure (power, console, bootloader,
    TFTP, no shell) or a boot that reached the shell and answered a command.

    ``threshold`` infrastructure failures in a row tag the place ``farm_health=unhealthy``, and
    reservations skip it; a passing boot resets the count and tags it ``farm_health=ok``. Returns
    the new state ("ok" or "unhealthy") when it changed, else None. Nothing is written unless the
    place is still locked by ``lease`` (after a lost lock the board is not ours to judge).
    Raises :class:`InfrastructureError` if the coordinator cannot be reached.
    """
    with Coordinator(lease.coordinator, connect_timeout=10) as coord:
        coord.sync()
        current = coord.place(lease.place)
        if not lock_stands(current, lease.owner, lease.lease):
            return None
        update, state = health_update(dict(current.tags), infrastructure_failure, threshold)
        if update:
            coord.set_tags(lease.place, update)
    return state


def set_health(coord: Coordinator, place: str, state: str) -> str | None:
    """Tag ``place`` healthy or unhealthy by hand (``farm health set``); "ok" also clears the failure
    count. Returns the previous state (None: unset)."""
    if state not in HEALTH_STATES:
        raise JobError(f"health state {state!r}: expected one of {', '.join(HEALTH_STATES)}")
    coord.sync()
    tags = coord.place(place).tags
    update = {HEALTH_TAG: state}
    if state == HEALTHY and FAILURES_TAG in tags:
        update[FAILURES_TAG] = ""
    coord.set_tags(place, update)
    return tags.get(HEALTH_TAG) or None


def initialise_health(coord: Coordinator, statuses: list[PlaceStatus]) -> list[str]:
    """Tag ``farm_health=ok`` on those of ``statuses`` that have no health tag yet (a place created
    with labgrid-client, or before farm kept health), so a reservation asking for it can get them.
    Looks again right before: a place tagged meanwhile (by another job) is left as it is."""
    missing = [s.name for s in statuses if s.health_tag is None]
    done = []
    if missing:
        coord.sync()
    for name in missing:
        place = coord.places().get(name)
        if place is not None and not place.tags.get(HEALTH_TAG):
            coord.set_tags(name, {HEALTH_TAG: HEALTHY})
            done.append(name)
    return done
