"""``farm janitor``: release this user's locks whose jobs are gone, forget stale lease records.

Only ever the caller's own (``release-from`` semantics: the coordinator itself checks the owner); a
lock without a farm lease is a person's and stays.
"""

from __future__ import annotations

from typing import Callable

import attrs

from ..coordinator import Coordinator
from ..lease import Lease, clean, holder_state, leases_in
from .locking import cancel_reservations, drop_leases, release_mine
from .status import PlaceStatus, list_places


@attrs.frozen
class JanitorAction:
    place: str
    action: str  # "release" (a lock of a vanished job), "forget" (stale lease records), "keep"
    reason: str
    leases: tuple[Lease, ...] = ()


def plan_janitor(statuses: list[PlaceStatus], me: str, state: Callable[[Lease], str]) -> list[JanitorAction]:
    """What the janitor does, decided from the places alone (pure; ``state`` says if a lease's holder lives).

    Only ``me``'s locks are released. A lock is released when it has leases of ``me`` and all their
    holders are gone; a lock without a lease is someone's manual lock and stays. Lease *records* of
    other owners are forgotten too when their holder is provably gone (a process of this host that
    exited: ``state`` says ``gone`` only for this host's) and they are not under their owner's lock
    (that owner's janitor needs them to release it): a coordinator restart brings back the records
    of the last 15 s before it (it saves its tags every 15 s), of jobs that had already left.
    """
    plan = []
    for s in statuses:
        before = len(plan)
        _plan_place(plan, s, me, state)
        others_gone = tuple(lease for lease in s.leases if lease.owner not in (clean(me), s.holder)
                            and state(lease) == "gone")
        if not others_gone:
            continue
        if len(plan) > before and plan[-1].action == "forget":
            plan[-1] = attrs.evolve(plan[-1], leases=plan[-1].leases + others_gone)
        elif len(plan) == before:
            plan.append(JanitorAction(s.name, "forget", "stale lease records of jobs gone from this host: " + ", ".join(
                f"{lease.job} (pid {lease.pid})" for lease in others_gone), others_gone))
    return plan


def _plan_place(plan: list[JanitorAction], s: PlaceStatus, me: str, state: Callable[[Lease], str]) -> None:
    """The action on one place for ``me``'s own lock and leases (appended to ``plan``, or none)."""
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
            release_mine(coord, action.place, list(action.leases), power=True)
        elif action.action == "forget":
            cancel_reservations(coord, [lease for lease in action.leases if lease.owner == clean(coord.owner)])
            drop_leases(coord, action.place, list(action.leases))
    return plan
