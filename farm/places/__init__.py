"""The farm's places: see them, reserve one by tags with a deadline, lock, release, who, janitor.

A CI job (``farm run PIPELINE --farm board=maaxboard``) does all of it in one block::

    with acquired_place({"board": "maaxboard"}, timeout=600, coordinator=None) as lease:
        ...  # env/maaxboard.yaml now boots lease.place: LG_PLACE and LG_COORDINATOR are set

labgrid 26 gives reservations and locks, but a reservation waits forever and a lock never expires.
farm adds the deadline (the reservation is cancelled when it passes), a lease record next to every
lock it takes (:mod:`farm.lease`), and a janitor that releases locks whose holding process is gone,
only ever the caller's own (``release-from`` semantics: the coordinator itself checks the owner).

One concept per module:

    status    what a place looks like (``farm places``, ``farm who``)
    reserve   reserve by tags with a deadline; which place a NAME or +TOKEN means
    locking   lock and release with a lease; whether a lock is still ours
    janitor   release the locks of vanished jobs
    job       :func:`acquired_place`, the block a job runs in; :func:`check_still_held`
    tags      farm's health record in a place's tags (pure)
    health    that record read and written on the coordinator

Signals (SIGTERM, SIGHUP like Ctrl-C; clean-ups not cut short) are :mod:`farm.signals`.
"""

from __future__ import annotations

from ..errors import Terminated
from .health import initialise_health, record_boot_result, set_health
from .janitor import JanitorAction, janitor, plan_janitor
from .job import PlaceLease, acquired_place, check_still_held, default_job_id
from .locking import lock, lock_stands, newer_leases, release
from .reserve import Reserved, reserve, resolve_place, wait_for_allocation
from .status import PlaceStatus, describe_holders, list_places, place_health, place_status, who
from .tags import (DEFAULT_UNHEALTHY_AFTER, FAILURES_TAG, FARM_STATE_TAGS, HEALTH_STATES, HEALTH_TAG, HEALTHY,
                   UNHEALTHY, failure_count, health_filter, health_update, own_tags)

__all__ = [
    "DEFAULT_UNHEALTHY_AFTER", "FAILURES_TAG", "FARM_STATE_TAGS", "HEALTH_STATES", "HEALTH_TAG", "HEALTHY",
    "JanitorAction", "PlaceLease", "PlaceStatus", "Reserved", "Terminated", "UNHEALTHY", "acquired_place",
    "check_still_held", "default_job_id", "describe_holders", "failure_count", "health_filter", "health_update",
    "initialise_health", "janitor", "list_places", "lock", "lock_stands", "newer_leases", "own_tags",
    "place_health", "place_status", "plan_janitor", "record_boot_result", "release", "reserve", "resolve_place",
    "set_health", "wait_for_allocation", "who",
]
