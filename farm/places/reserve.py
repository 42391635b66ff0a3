"""Reserve a place by tags, with a deadline: labgrid's own wait has none."""

from __future__ import annotations

import contextlib
import os
import time
from typing import Callable

import attrs
from labgrid.remote.common import ReservationState

from .. import signals
from ..coordinator import Coordinator, format_tags
from ..errors import FarmError, InfrastructureError, JobError
from .health import initialise_health
from .status import describe_holders, list_places
from .tags import HEALTH_TAG, health_filter


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
        return Reserved(reservation.token, allocated_place(reservation))
    try:
        place = wait_for_allocation(coord, reservation.token, tags, timeout, on_wait)
    except BaseException:
        with contextlib.suppress(FarmError):
            coord.cancel_reservation(reservation.token)
        raise
    return Reserved(reservation.token, place)


def allocated_place(reservation) -> str | None:
    places = reservation.allocations.get("main") or []
    return places[0] if places else None


def wait_for_allocation(coord: Coordinator, token: str, tags: dict[str, str], timeout: float | None,
                        on_wait: Callable[[str], None] | None = None, *, said: float | None = None) -> str:
    """The place allocated to ``token``; waits on the coordinator's place updates, polls to keep it alive.
    ``said``: the timeout the message names (the caller's whole one, of which ``timeout`` is what is left)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    told = False
    since = signals.arrivals()
    while True:
        signals.raise_if_lost(since)  # a Ctrl-C lost in a finalizer must not leave the job queued
        reservation = coord.poll_reservation(token)
        if reservation.state in (ReservationState.allocated, ReservationState.acquired):
            return allocated_place(reservation)
        if reservation.state is not ReservationState.waiting:
            raise InfrastructureError(f"reservation {token} for {format_tags(tags)} is {reservation.state.name}")
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            busy = describe_holders([s for s in list_places(coord) if s.matches(tags)])
            raise InfrastructureError(f"no place with {format_tags(tags)} became free within {said or timeout:g} s "
                                      f"({busy}); reservation {token} cancelled")
        if not told and on_wait:
            on_wait(f"waiting for a place with {format_tags(tags)}: "
                    + describe_holders([s for s in list_places(coord) if s.matches(tags)]))
            told = True
        # a release re-runs the coordinator's scheduler, which publishes the place: wake up on that;
        # poll at least every 5 s anyway (an unpolled reservation expires after 60 s)
        coord.wait_for_change(5.0 if left is None else min(5.0, left))



def resolve_place(coord: Coordinator, place: str | None) -> str:
    """A place name from NAME, +TOKEN, or else $LG_PLACE, else the place allocated to $LG_TOKEN."""
    token = os.environ.get("LG_TOKEN")
    place = place or os.environ.get("LG_PLACE") or (f"+{token}" if token else None)
    if not place:
        raise JobError("which place? name it, or set LG_PLACE (farm lock prints it) or LG_TOKEN (farm reserve)")
    if place.startswith("+"):
        token = place[1:]
        reservation = coord.poll_reservation(token)
        allocated = allocated_place(reservation)
        if not allocated:
            raise InfrastructureError(f"reservation {token} is {reservation.state.name}, no place allocated yet "
                                      "(farm reserve --wait waits for one)")
        return allocated
    coord.place(place)  # a clear error for an unknown name
    return place
