"""Listeners of a run besides its directory: progress lines, the place's lock guard and health record."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

from ..errors import FarmError
from ..secrets import mask
from .events import Hooks, hookimpl
from .rundir import Stage


class Progress:
    """One line per stage on stderr: what runs, where, and how long it took. A stage that runs long
    without a word says so every ``heartbeat`` seconds, so a CI log never looks hung."""

    def __init__(self, stream: TextIO | None = None, heartbeat: float = 60.0):
        self.stream, self.t0, self.heartbeat = stream or sys.stderr, time.monotonic(), heartbeat
        self._stage: str | None = None
        self._stage_t0 = self._last = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @hookimpl
    def say(self, text: str) -> None:
        with self._lock:
            self._last = time.monotonic()
            print(f"[{self._last - self.t0:7.1f}s] {mask(text)}", file=self.stream, flush=True)

    @hookimpl
    def stage_started(self, name: str) -> None:
        self._stage, self._stage_t0 = name, time.monotonic()
        if self._thread is None and self.heartbeat > 0:
            self._thread = threading.Thread(target=self._beat, name="farm-progress", daemon=True)
            self._thread.start()

    @hookimpl
    def stage_ended(self, stage: Stage) -> None:
        self._stage = None

    @hookimpl
    def run_ended(self, status: int, interrupted: bool) -> None:
        self._stop.set()

    def _beat(self) -> None:
        while not self._stop.wait(min(self.heartbeat, 5.0)):
            stage = self._stage
            if stage and time.monotonic() - self._last >= self.heartbeat:
                self.say(f"{stage}: still running ({time.monotonic() - self._stage_t0:.0f}s)")


class PlaceGuard:
    """With ``--farm``: before every boot and benchmark, check that the place's lock is still ours
    (the coordinator may have restarted: a veto); after every boot, the outcome on the place's health
    record."""

    def __init__(self, lease: Any, hooks: Hooks):
        self.lease, self.hooks = lease, hooks

    @hookimpl
    def before_board(self) -> str | None:
        from ..places import check_still_held

        try:
            check_still_held(self.lease)
        except FarmError as exc:
            return str(exc)
        return None

    @hookimpl
    def boot_outcome(self, infrastructure_failure: bool, power_ons: int) -> None:
        """Best effort: a coordinator that cannot be reached here does not fail the run. Every failed
        power-on of a failed boot counts (a board that failed both attempts of a job failed twice: with
        labgrid's scheduler giving a retried job the same free place again, counting the job once let a
        never-booting board take all of a CI job's retries)."""
        from ..places import DEFAULT_UNHEALTHY_AFTER, UNHEALTHY, record_boot_result

        try:
            state = record_boot_result(self.lease, infrastructure_failure, power_ons=power_ons)
        except FarmError as exc:
            self.hooks.say(text=f"place {self.lease.place}: health not recorded: {exc}")
            return
        if state is None:
            return
        self.hooks.place_health(state=state)
        if state == UNHEALTHY:
            self.hooks.say(text=f"place {self.lease.place} is now unhealthy ({DEFAULT_UNHEALTHY_AFTER} or more infrastructure "
                           f"failures in a row): reservations skip it until `farm health check {self.lease.place}` "
                           "passes")
        else:
            self.hooks.say(text=f"place {self.lease.place} is healthy again")
