"""The virtual lab the farm tests run against: ``farm lab up`` once per session, ``down`` at the end.

Real labgrid-coordinator, labgrid-exporter, pdudaemon, sshd and two QEMU MaaXBoard twins on free
ports of 127.0.0.1, in a temporary directory. Each test gets the lab with every place free, and
whatever a test leaves behind (jobs, locks, reservations, leases) is cleaned up after it.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import attrs
import pytest

from ..conftest import ROOT, run_farm

BOARDS = 2


@attrs.define
class VirtualLab:
    directory: Path
    coordinator: str
    places: list[str]

    def state(self) -> dict:
        import json

        return json.loads((self.directory / "lab.json").read_text())


@pytest.fixture(scope="session")
def virtual_lab(tmp_path_factory):
    directory = tmp_path_factory.mktemp("lab")
    t0 = time.monotonic()
    proc = run_farm("lab", "up", "--boards", f"maaxboard={BOARDS}", "--dir", str(directory), timeout=240)
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith("export LG_COORDINATOR=127.0.0.1:"), proc.stdout
    coordinator = line.split("=", 1)[1]
    saved = os.environ.get("LG_COORDINATOR")
    os.environ["LG_COORDINATOR"] = coordinator
    print(f"\nvirtual lab up in {time.monotonic() - t0:.1f}s: {coordinator}", file=sys.stderr)
    lab = VirtualLab(directory, coordinator, [f"maaxboard-{i}" for i in range(1, BOARDS + 1)])
    try:
        yield lab
    finally:
        _close_labgrid_connections()
        started = lab.state()["processes"]
        down = run_farm("lab", "down", "--dir", str(directory), timeout=120)
        if saved is None:
            os.environ.pop("LG_COORDINATOR", None)
        else:
            os.environ["LG_COORDINATOR"] = saved
        assert down.returncode == 0, down.stderr
        still = [p["name"] for p in started if _alive(p["pid"], p["start"])]
        assert not still, f"still running after farm lab down: {still}"


def _alive(pid: int, start: int) -> bool:
    from farm.proc import start_time

    return start_time(pid) == start


def _close_labgrid_connections() -> None:
    """This process' SSH master (labgrid staging) and RemotePlaceManager session, before the lab goes."""
    from labgrid.resource.remote import RemotePlaceManager
    from labgrid.util.ssh import sshmanager

    sshmanager.close_all()
    manager = RemotePlaceManager.get()
    if manager.session is not None:
        try:
            manager.loop.run_until_complete(manager.session.stop())
            manager.loop.run_until_complete(manager.session.close())
        except Exception:
            pass
        manager.session = None


class Job:
    """A job process (tests/farm/job.py); its output lines arrive on a queue."""

    def __init__(self, *args: str, env: dict | None = None):
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.farm.job", *args], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env={**os.environ, **(env or {})})
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def expect(self, prefix: str, timeout: float = 120) -> str:
        """The first (further) output line starting with ``prefix``."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                line = self.lines.get(timeout=max(left, 0.01))
            except queue.Empty:
                raise AssertionError(f"no '{prefix}' line within {timeout} s; output so far:\n"
                                     + "\n".join(self.output) + self._stacks()) from None
            if line is None:
                raise AssertionError(f"job exited ({self.proc.wait()}) before '{prefix}'; output:\n"
                                     + "\n".join(self.output))
            self.output.append(line)
            if line.startswith(prefix):
                return line

    def _stacks(self) -> str:
        """Where a stuck job is: its threads' stacks (job.py dumps them on SIGUSR1)."""
        if self.proc.poll() is not None:
            return ""
        self.proc.send_signal(signal.SIGUSR1)
        lines, deadline = [], time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if lines:
                    break
                continue
            if line is None:
                break
            lines.append(line)
        return "\n--- stacks of the job ---\n" + "\n".join(lines)

    def finish(self, timeout: float = 60) -> int:
        """Close its stdin (a hold job then leaves its block normally) and wait for it."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def lab(virtual_lab):
    """The virtual lab with every place free; jobs started through ``lab_jobs`` are stopped afterwards."""
    _free_everything(virtual_lab)
    yield virtual_lab
    _free_everything(virtual_lab)


@pytest.fixture
def jobs(lab):
    started: list[Job] = []

    def start(*args: str, env: dict | None = None) -> Job:
        job = Job(*args, env=env)
        started.append(job)
        return job

    yield start
    for job in started:
        job.kill()


def _free_everything(lab: VirtualLab) -> None:
    """Test hygiene (not farm behaviour): release every lock, cancel every reservation, drop leases,
    and make every place healthy again (a test's infrastructure faults count against its place)."""
    from farm.coordinator import Coordinator
    from farm.lease import LEASE_TAG_PREFIX
    from farm.places import FAILURES_TAG, HEALTH_TAG, HEALTHY

    with Coordinator(lab.coordinator) as coord:
        for reservation in coord.reservations():
            coord.cancel_reservation(reservation.token)
        for name, place in coord.places().items():
            if place.acquired:
                coord.release(name, only_from=place.acquired)
            stale = {k: "" for k in place.tags if k.startswith(LEASE_TAG_PREFIX)}
            if stale:
                coord.set_tags(name, stale)
            if place.tags.get(HEALTH_TAG) != HEALTHY or FAILURES_TAG in place.tags:
                coord.set_tags(name, {HEALTH_TAG: HEALTHY, FAILURES_TAG: ""})
