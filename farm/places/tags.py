"""farm's records in a place's tags: its health and consecutive infrastructure failures (pure).

Every boot of a ``farm run --farm`` records its outcome on the place, in two place tags (labgrid
keeps tags in the coordinator's places.yaml: they survive its restarts, unlike locks):

  farm_health=ok|unhealthy   "unhealthy" after DEFAULT_UNHEALTHY_AFTER infrastructure failures in a
                             row; back to "ok" after a boot that passes. Unset counts as healthy.
  farm_infra_failures=N      the consecutive infrastructure failures so far; removed on a pass.

labgrid's reservation filters compare tags for equality, with no "not": so a reservation asks
for farm_health=ok, and every place a reservation may get must carry that tag. farm sets it on
places that have none when it first reserves among them (and ``farm lab up`` on its places). A
health check (``farm health check PLACE``) reserves without that filter, so it can take an
unhealthy place; when its boot passes the place is healthy again.

Lease records are tags too: :mod:`farm.lease`.
"""

from __future__ import annotations

from ..lease import plain_tags

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


def health_update(tags: dict[str, str], infrastructure_failure: bool, threshold: int,
                  power_ons: int = 1) -> tuple[dict[str, str], str | None]:
    """The tags to set on a place whose tags are ``tags`` after a boot, and its new health state if
    that changes (pure). An empty value deletes a tag (labgrid's SetPlaceTags). A boot that failed
    counts each of its ``power_ons`` (its ``boot_attempts`` spent): a board that failed two attempts
    of one job has failed twice."""
    if threshold < 1:
        raise ValueError(f"threshold must be at least 1, not {threshold}")
    if power_ons < 1:
        raise ValueError(f"a failed boot has at least one power-on, not {power_ons}")
    current = tags.get(HEALTH_TAG) or None
    if infrastructure_failure:
        failures = failure_count(tags) + power_ons
        update = {FAILURES_TAG: str(failures)}
        if failures >= threshold and current != UNHEALTHY:
            update[HEALTH_TAG] = UNHEALTHY
            return update, UNHEALTHY
        return update, None
    update = {FAILURES_TAG: ""} if FAILURES_TAG in tags else {}
    if current != HEALTHY:
        update[HEALTH_TAG] = HEALTHY
    return update, (HEALTHY if current not in (None, HEALTHY) else None)
