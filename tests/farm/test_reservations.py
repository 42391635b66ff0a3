"""Reservations queue, deadlines end them cleanly, and a job's place always comes back."""

from __future__ import annotations

import signal
import time

import pytest

from farm.coordinator import Coordinator
from farm.errors import InfrastructureError
from farm.places import acquired_place, lock, release

from ..conftest import run_farm


def assert_all_free(lab) -> None:
    with Coordinator(lab.coordinator) as coord:
        for name, place in coord.places().items():
            assert place.acquired is None, f"{name} still locked by {place.acquired}"
            assert place.reservation is None, f"{name} still reserved ({place.reservation})"
            assert not [k for k in place.tags if k.startswith("farm_lease_")], f"{name} keeps a lease"
        assert coord.reservations() == []


def test_third_job_waits_in_the_queue_and_gets_the_first_freed_place(lab, jobs):
    first, second = jobs("hold", "board=maaxboard", "--job", "q1"), jobs("hold", "board=maaxboard", "--job", "q2")
    places = {first.expect("LOCKED").split()[1], second.expect("LOCKED").split()[1]}
    assert places == set(lab.places)
    third = jobs("hold", "board=maaxboard", "--job", "q3", "--timeout", "120")
    waiting = third.expect("WAITING")
    assert "maaxboard-1 locked by" in waiting and "maaxboard-2 locked by" in waiting
    assert first.finish() == 0  # leaves its block normally: powers off, releases, cancels its reservation
    t0 = time.monotonic()
    got = third.expect("LOCKED", timeout=60).split()[1]
    assert got == [line for line in first.output if line.startswith("LOCKED")][0].split()[1]
    # at once, not at the coordinator's next 15-second scheduling pass
    assert time.monotonic() - t0 < 10, "the queue moves when a place is released, not on a timer"
    assert second.finish() == 0 and third.finish() == 0
    assert_all_free(lab)


def test_reserve_gives_up_at_its_deadline(lab):
    with Coordinator(lab.coordinator) as coord:
        for place in lab.places:
            lock(coord, place, job="t-busy")
        try:
            t0 = time.monotonic()
            proc = run_farm("reserve", "board=maaxboard", "--timeout", "2")
            elapsed = time.monotonic() - t0
            assert proc.returncode == 3, proc.stderr
            assert proc.stdout == ""  # nothing to eval
            message = proc.stderr.strip().splitlines()[-1]
            assert message.startswith("farm: infrastructure error: no place with board=maaxboard became free "
                                      "within 2 s (maaxboard-1 locked by"), message
            assert message.endswith("cancelled"), message
            assert "Traceback" not in proc.stderr
            assert elapsed < 20
            assert coord.reservations() == [], "the reservation is cancelled, not left in the queue"
        finally:
            for place in lab.places:
                release(coord, place, power=False)
    assert_all_free(lab)


def test_reserve_for_tags_no_place_has_is_a_job_error(lab):
    proc = run_farm("reserve", "board=rpi4", "--wait")
    assert proc.returncode == 2
    assert "no place has tags board=rpi4" in proc.stderr and "maaxboard-1 [" in proc.stderr


def test_acquired_place_deadline_raises_and_leaves_nothing(lab):
    with Coordinator(lab.coordinator) as coord:
        for place in lab.places:
            lock(coord, place, job="t-busy")
        try:
            with pytest.raises(InfrastructureError, match="became free within 1 s"):
                with acquired_place({"board": "maaxboard"}, timeout=1, coordinator=lab.coordinator):
                    pytest.fail("must not get a place")
            assert coord.reservations() == []
        finally:
            for place in lab.places:
                release(coord, place, power=False)


def test_acquired_place_releases_after_an_exception(lab):
    import os

    with pytest.raises(RuntimeError, match="boom"):
        with acquired_place({"board": "maaxboard"}, timeout=30, coordinator=lab.coordinator) as lease:
            assert os.environ["LG_PLACE"] == lease.place
            assert os.environ["LG_COORDINATOR"] == lab.coordinator
            raise RuntimeError("boom")
    assert "LG_PLACE" not in os.environ
    assert_all_free(lab)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_job_gives_its_place_back(lab, jobs, sig):
    job = jobs("hold", "board=maaxboard", "--job", f"t-{sig.name}")
    job.expect("LOCKED")
    job.proc.send_signal(sig)
    job.expect("INTERRUPTED", timeout=120)  # after giving everything back, on a possibly busy machine
    assert job.proc.wait(timeout=60) == 130
    assert_all_free(lab)


def test_a_job_interrupted_while_queued_cancels_its_reservation(lab, jobs):
    with Coordinator(lab.coordinator) as coord:
        for place in lab.places:
            lock(coord, place, job="t-busy")
        try:
            queued = jobs("hold", "board=maaxboard", "--job", "t-queued")
            queued.expect("WAITING")
            assert len(coord.reservations()) == 1
            queued.proc.send_signal(signal.SIGINT)
            queued.expect("INTERRUPTED", timeout=120)
            assert queued.proc.wait(timeout=60) == 130
            assert coord.reservations() == []
        finally:
            for place in lab.places:
                release(coord, place, power=False)
    assert_all_free(lab)


def test_a_killed_farm_reserve_cancels_its_reservation(lab):
    """A CI job cancelled while `farm reserve --wait` queues (SIGTERM) leaves no reservation behind."""
    import os
    import subprocess
    import sys

    from ..conftest import ROOT

    with Coordinator(lab.coordinator) as coord:
        for place in lab.places:
            lock(coord, place, job="t-busy")
        try:
            proc = subprocess.Popen([sys.executable, "-m", "farm.cli", "reserve", "board=maaxboard", "--wait"],
                                    cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ)
            assert "waiting for a place" in proc.stderr.readline()
            proc.terminate()
            assert proc.wait(timeout=60) == 143
            assert "farm: terminated" in proc.stderr.read()
            assert coord.reservations() == []
        finally:
            for place in lab.places:
                release(coord, place, power=False)
