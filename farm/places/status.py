"""What a place looks like: its tags, holder, reservation, leases and health, as ``farm places`` shows it."""

from __future__ import annotations

from datetime import datetime

import attrs
from labgrid.remote.common import Place

from ..coordinator import Coordinator
from ..lease import Lease, holder_state, leases_in
from .tags import FAILURES_TAG, HEALTH_TAG, HEALTHY, failure_count, own_tags


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


def who(coord: Coordinator) -> list[PlaceStatus]:
    return [s for s in list_places(coord) if s.holder]
