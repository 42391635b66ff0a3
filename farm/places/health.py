"""Place health: a place that keeps failing is taken out of the reservations.

The record itself (tags, thresholds, the pure update) is :mod:`farm.places.tags`; here it is read
and written on the coordinator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..coordinator import Coordinator
from ..errors import JobError
from .locking import lock_stands
from .status import PlaceStatus
from .tags import DEFAULT_UNHEALTHY_AFTER, FAILURES_TAG, HEALTH_STATES, HEALTH_TAG, HEALTHY, health_update

if TYPE_CHECKING:
    from .job import PlaceLease


def record_boot_result(lease: PlaceLease, infrastructure_failure: bool, *, power_ons: int = 1,
                       threshold: int = DEFAULT_UNHEALTHY_AFTER) -> str | None:
    """Record a boot on ``lease``'s place: an infrastructure failure (power, console, bootloader,
    TFTP, no shell) of ``power_ons`` attempts, or a boot that reached the shell and answered a command.

    ``threshold`` failed power-ons in a row tag the place ``farm_health=unhealthy``, and
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
        update, state = health_update(dict(current.tags), infrastructure_failure, threshold, power_ons)
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
