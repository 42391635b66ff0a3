"""``farm run --farm TAG=VAL...``: the farm place a run's boots take. It is reserved once the images are
built (a build never holds a board) and given back, powered off, however the run ends; its env file is the
board's beside the pipeline's, and its load generators are taken with it when a benchmark sends load from
one."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import attrs

from ..errors import JobError
from .listeners import PlaceGuard

if TYPE_CHECKING:
    from .model import Pipeline
    from .runner import Runner


@attrs.frozen
class FarmRequest:
    """``farm run --farm TAG=VAL...``: take a place of the farm for the run's boots."""

    tags: dict[str, str]
    timeout: float = 3600.0
    coordinator: str | None = None
    #: a health check: may take a place tagged unhealthy (farm_health), which a passing boot puts back
    health_check: bool = False
    #: the reservation's priority (higher goes first); the place's load generators are reserved with it
    prio: float = 0.0


def farm_env(pipeline: Pipeline, request: FarmRequest) -> Path:
    """The env file of a farm place: ``env/<board>.yaml`` beside the pipeline's own env files."""
    board = request.tags.get("board")
    if board is None:
        raise JobError("--farm: name the board (board=maaxboard) or give the place's env file with --env")
    path = pipeline.envs[0].parent / f"{board}.yaml"
    if not path.exists():
        raise JobError(f"--farm board={board}: no env file {path} (give one with --env)")
    return path


def drives_load_generators(pipeline: Pipeline) -> bool:
    """Whether a benchmark of ``pipeline`` sends its load from a load generator (a sweep whose
    ``generator`` is not the lab host): its farm place is then taken with its load clients."""
    from ..bench.loadgen import HOST

    return any(getattr(b.params, "generator", HOST) != HOST for b in pipeline.benchmarks)


@contextlib.contextmanager
def held_place(runner: Runner, farm: FarmRequest | None) -> Iterator[None]:
    """With ``--farm``: reserve, wait for, lock a place for the boots, and always give it back
    (powered off) however the run ends. Images are built before, so a build never holds a board."""
    if farm is None:
        yield
        return
    from ..places import acquired_place

    hooks = runner.hooks
    tags = " ".join(f"{k}={v}" for k, v in farm.tags.items())
    with contextlib.ExitStack() as stack:
        lease = runner.stage(f"reserve {tags}", "farm.place", lambda: stack.enter_context(acquired_place(
            farm.tags, timeout=farm.timeout, coordinator=farm.coordinator, job=runner.run.run_id,
            on_wait=lambda text: hooks.say(text=text), healthy_only=not farm.health_check, prio=farm.prio,
            loadgens=drives_load_generators(runner.pipeline))))
        hooks.place_taken(place={"name": lease.place, "coordinator": lease.coordinator, "owner": lease.owner,
                                 "tags": dict(lease.tags), "health_check": farm.health_check, "prio": farm.prio,
                                 "loadgens": {name: place for name, place, _ in getattr(lease, "loadgens", ())}})
        hooks.say(text=f"on place {lease.place} ({lease.coordinator})")
        guard = PlaceGuard(lease, hooks)
        hooks.add(guard)
        try:
            yield
        finally:
            hooks.remove(guard)
