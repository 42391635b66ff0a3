"""Load generators reserved like boards: a load client is a place of its own, taken with the board.

The lab's machine queue reserves a board's load clients with the board: two jobs sweeping two
boards through one load client at once would each measure the other's load. In the farm a load
client is a place tagged ``loadgen=<name>`` whose exporter exports its SSH login as a
``NetworkService`` named ``loadgen-<name>`` (address, port, username: farm.bench.loadgen); a board's
place names the load clients wired to it in its tag ``farm_loadgens=<name>[,<name>...]``.

:func:`farm.places.acquired_place` takes the board first, then each of its load clients in name
order (reserved with the board's priority, waited for, locked with a lease as a board is), and
gives them back before the board however the block ends. Taking boards before load clients, and
load clients in one order, no two jobs can each hold what the other waits for. Inside the block
``$FARM_LOADGENS`` (JSON: name -> address, port, username) says where they are; a sweep's
``generator: place`` is the board's one load client (farm.bench.loadgen).
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable

from ..coordinator import Coordinator
from ..errors import InfrastructureError, JobError
from ..values import name_problem

#: a board place's tag: the load clients wired to it, comma-separated
LOADGENS_TAG = "farm_loadgens"
#: a load client place's tag: its name
GENERATOR_TAG = "loadgen"
#: the environment of an acquired_place block: the load clients taken with the board (JSON)
LOADGENS_ENV = "FARM_LOADGENS"
#: the exported resource of a load client: a NetworkService of this name prefix (farm.bench.loadgen.PREFIX)
RESOURCE_PREFIX = "loadgen-"


def wanted(tags: dict[str, str], place: str) -> list[str]:
    """The load clients a board's tags name, in the order they are taken (pure)."""
    names = sorted({n.strip() for n in (tags.get(LOADGENS_TAG) or "").split(",") if n.strip()})
    for name in names:
        if (problem := name_problem(name, "load generator name")):
            raise JobError(f"place {place}: tag {LOADGENS_TAG}: {problem}")
    return names


def generator_filter(name: str) -> dict[str, str]:
    return {GENERATOR_TAG: name}


def login_of(coord: Coordinator, place: str, name: str) -> dict[str, Any]:
    """The SSH login the load client's place exports (its ``loadgen-<name>`` NetworkService)."""
    coord.sync()
    current = coord.place(place)
    for exporter, groups in coord.resources().items():
        for group, entries in groups.items():
            for resource, entry in entries.items():
                if resource != RESOURCE_PREFIX + name or "cls" not in entry.data:
                    continue
                if not current.hasmatch((exporter, group, entry.cls, resource)):
                    continue
                params = entry.params or {}
                if not params.get("address"):
                    break
                return {"address": str(params["address"]), "port": int(params.get("port") or 22),
                        "username": str(params.get("username") or "root")}
    raise InfrastructureError(f"load generator {name} (place {place}) exports no {RESOURCE_PREFIX}{name} "
                              "NetworkService (address, port, username): its exporter down?")


def environment(logins: dict[str, dict[str, Any]]) -> str:
    return json.dumps(logins, sort_keys=True)


def held(environ: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """The load clients taken with this process' place (``$FARM_LOADGENS``), name -> login."""
    text = (os.environ if environ is None else environ).get(LOADGENS_ENV) or "{}"
    try:
        data = json.loads(text)
    except ValueError:
        raise JobError(f"${LOADGENS_ENV}: not JSON: {text[:80]!r}") from None
    return data if isinstance(data, dict) else {}


def order(names: Iterable[str]) -> list[str]:
    """The one order every job takes load clients in (deadlock-free: no cycle of waits)."""
    return sorted(set(names))
