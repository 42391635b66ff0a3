"""farm janitor: a vanished job's lock is cleared; nobody else's lock is ever touched."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from farm.coordinator import Coordinator

from ..conftest import run_farm
from .test_reservations import assert_all_free


def holder_of(lab, place: str) -> str | None:
    with Coordinator(lab.coordinator) as coord:
        return coord.place(place).acquired


def test_janitor_releases_the_place_of_a_job_that_was_killed(lab, jobs):
    job = jobs("hold", "board=maaxboard", "--job", "t-vanished")
    place = job.expect("LOCKED").split()[1]
    job.kill()  # SIGKILL: no clean-up ran, the lock and its reservation stay
    assert holder_of(lab, place) is not None

    dry = run_farm("janitor", "--dry-run")
    assert dry.returncode == 0 and f"would release {place}: its holder is gone: job t-vanished" in dry.stdout
    assert holder_of(lab, place) is not None

    proc = run_farm("janitor")
    assert proc.returncode == 0, proc.stderr
    assert f"released {place}: its holder is gone: job t-vanished" in proc.stdout
    assert_all_free(lab)  # lock, lease and reservation are gone: the next job gets the place at once
    proc = run_farm("reserve", f"name={place}", "--timeout", "10")
    assert proc.returncode == 0 and f"export LG_PLACE={place}" in proc.stdout


def test_janitor_never_touches_another_users_place(lab, jobs):
    alice = {"LG_USERNAME": "alice"}
    job = jobs("hold", "board=maaxboard", "--job", "t-alice", env=alice)
    place = job.expect("LOCKED").split()[1]
    owner = holder_of(lab, place)
    assert owner.endswith("/alice")

    proc = run_farm("janitor")  # alice's job lives, and it is not ours anyway
    assert proc.returncode == 0 and f"kept {place}: locked by {owner}, not yours" in proc.stdout
    job.kill()
    proc = run_farm("janitor")  # alice's job is gone now: still not ours to release
    assert f"kept {place}: locked by {owner}, not yours" in proc.stdout
    assert holder_of(lab, place) == owner
    assert run_farm("release", place).returncode == 2  # nor does farm release take it
    assert run_farm("reserve", f"name={place}", "--timeout", "1").returncode == 3  # nor a reservation
    assert holder_of(lab, place) == owner

    proc = run_farm("janitor", env=alice)  # alice's own janitor does
    assert f"released {place}" in proc.stdout, proc.stdout
    assert_all_free(lab)


def test_janitor_leaves_manual_locks_and_live_jobs_alone(lab, jobs):
    live = jobs("hold", "board=maaxboard", "--job", "t-live")
    live_place = live.expect("LOCKED").split()[1]
    manual_place = next(p for p in lab.places if p != live_place)
    client = [str(Path(sys.executable).parent / "labgrid-client"), "-p", manual_place]
    subprocess.run([*client, "acquire"], check=True, capture_output=True, env=os.environ, timeout=60)
    try:
        proc = run_farm("janitor")
        assert f"kept {manual_place}: locked by you without a farm lease (a manual lock)" in proc.stdout
        assert f"kept {live_place}: held by a live job: t-live" in proc.stdout
        assert holder_of(lab, manual_place) and holder_of(lab, live_place)
    finally:
        subprocess.run([*client, "release"], check=True, capture_output=True, env=os.environ, timeout=60)
    assert live.finish() == 0
    assert_all_free(lab)
