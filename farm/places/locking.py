"""Lock and release a place, with a lease record next to every lock farm takes (:mod:`farm.lease`).

labgrid knows a lock only by its owner's ``host/user`` and keeps it in the coordinator's memory;
the lease says which job (host, pid, job id, reservation) holds it, so that ``farm janitor`` can
release a lock whose job is gone, and a job can tell its lock from another job's of the same user.
"""

from __future__ import annotations

import contextlib

from labgrid.remote.common import Place

from .. import signals
from ..coordinator import EXPORTER_ANSWER_TIMEOUT, Coordinator, NoAnswer
from ..errors import FarmError, InfrastructureError, JobError
from ..lease import Lease, clean, leases_in, new_lease
from ..place_target import power_off
from .status import place_status


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
    return release_mine(coord, place, mine, power=power)


def release_mine(coord: Coordinator, place: str, leases: list[Lease], *, power: bool) -> list[str]:
    """Power off, cancel the leases' reservations, release, drop the leases: all of it, or (when the
    coordinator fails) up to the failing step; Ctrl-C or SIGTERM wait for its end."""
    with signals.deferred():
        return _release_mine(coord, place, leases, power=power)


def _release_mine(coord: Coordinator, place: str, leases: list[Lease], *, power: bool) -> list[str]:
    done = []
    if power:
        try:
            done.append(power_off(place, coord.address))
        except Exception as exc:  # the board may be unreachable; the place must be released anyway
            done.append(f"power off failed: {exc}")
    cancel_reservations(coord, leases)
    coord.release(place, only_from=coord.owner)
    done.append("released")
    drop_leases(coord, place, leases)
    return done


def cancel_reservations(coord: Coordinator, leases: list[Lease]) -> None:
    """Cancel the reservations of ``leases`` *before* their place is released.

    labgrid 26's scheduler reads a place's reservation from before the pass it runs in: cancelled
    after the release, the place would stay unavailable to waiting reservations until the
    coordinator's next pass (every 15 s). Cancelled first, the release hands it on at once.
    """
    for token in sorted({lease.token for lease in leases if lease.token}):
        coord.cancel_reservation(token)


def drop_leases(coord: Coordinator, place: str, leases: list[Lease]) -> None:
    if leases:
        coord.set_tags(place, {lease.key: "" for lease in leases})


def lock_stands(current: Place, owner: str, lease: Lease) -> bool:
    """Whether ``current`` is still locked under ``lease``: by ``owner``, with the lease on it, and no
    newer lease of the same owner (see :func:`newer_leases`)."""
    return current.acquired == owner and lease.key in current.tags and not newer_leases(current, lease)


def orphaned_leases(current: Place) -> list[Lease]:
    """Leases on ``current`` whose job may still drive its board although the coordinator no longer
    says it holds the place: not under the place's lock (the coordinator restarted and forgot the
    locks, or the place was released by hand) and held by a process that is alive, or on another
    host (where farm cannot tell). A lease whose process is gone is not one (``farm janitor`` drops it)."""
    from ..lease import holder_state

    return [lease for lease in leases_in(current.tags)
            if lease.owner != current.acquired and holder_state(lease) != "gone"]


def newer_leases(current: Place, lease: Lease) -> list[Lease]:
    """Leases of ``lease``'s owner on ``current`` written after it: the lock is theirs now.

    labgrid knows a lock only by its owner's ``host/user``. After a coordinator restart (which
    forgets locks but keeps tags, so our lease stays) or a kick, another job of the same user on the
    same runner may lock the place: the owner matches, our lease is still there; only that job's
    lease, written after ours, tells the lock is no longer ours (and that job's lock stands).
    """
    return [other for other in leases_in(current.tags)
            if other.key != lease.key and other.owner == lease.owner and other.since > lease.since]
