"""What the runner tells its listeners, the way pytest calls its plugins' hooks.

The runner (farm.run.runner) walks the stages and calls these hooks on every listener, in order:
the run directory (run.json, junit.xml, results.csv), the progress lines, the place's lock guard and
health record, the results store. A listener implements only the hooks it needs. A hook that raises
stops what was about to start: the place's guard raises InfrastructureError when its lock is lost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from ..results.record import Record
    from .rundir import Stage


class Listener:
    """The hooks, all optional (a no-op here)."""

    def stage_started(self, name: str) -> None:
        """A stage (build, reserve, boot, benchmark, publish) starts."""

    def stage_ended(self, stage: "Stage") -> None:
        """A stage ended: its testcase (pass, failure, error) and what it was."""

    def say(self, text: str) -> None:
        """A line of progress (a sweep point, a retry, a place taken)."""

    def before_board(self) -> None:
        """Before every boot and benchmark: raise InfrastructureError when the run may not touch the board."""

    def image_built(self, name: str, entry: dict[str, Any]) -> None:
        """An image is built or given (``--image``): its directory and manifest."""

    def place_taken(self, place: dict[str, Any]) -> None:
        """With ``--farm``: the place the boots run on."""

    def place_health(self, state: str) -> None:
        """With ``--farm``: the place's health changed (healthy, unhealthy)."""

    def boot_recorded(self, target: str, env: str, arch: str, boot: dict[str, Any]) -> None:
        """What one boot was (facts, topology), or why it failed."""

    def boot_outcome(self, label: str, *, booted: bool, infrastructure_failure: bool) -> None:
        """A boot reached its shell (``booted``), or failed; ``infrastructure_failure``: the lab failed it
        after :meth:`before_board` let it start (the place's health counts these)."""

    def records(self, records: "Sequence[Record]") -> None:
        """A benchmark measured these (or a ``failed`` row)."""

    def benchmark_failed(self, failure: dict[str, Any]) -> None:
        """A benchmark failed: where, and the tool's words."""

    def run_ended(self, status: int, interrupted: bool) -> None:
        """The run is over (before publishing)."""


class Hooks:
    """Calls a hook on every listener in order; ``hooks.stage_started("boot x")``."""

    def __init__(self, listeners: Sequence[Listener]):
        self.listeners = list(listeners)

    def add(self, listener: Listener) -> None:
        self.listeners.append(listener)

    def remove(self, listener: Listener) -> None:
        self.listeners.remove(listener)

    def __getattr__(self, name: str):
        if not hasattr(Listener, name):
            raise AttributeError(name)

        def call(*args, **kwargs) -> None:
            for listener in list(self.listeners):
                getattr(listener, name)(*args, **kwargs)
        return call
