"""Health: three infrastructure failures in a row take a place out of the reservations; a passing health
check puts it back.

The fault is a dead power outlet: board 1's QMP socket, which its PDU outlet switches, is moved away,
so pdudaemon's power-on does nothing and U-Boot never talks. That is what a dead outlet or a board
that does not power up looks like from a job: `farm run` fails with an infrastructure error (exit 3)
when the bootloader does not answer (a short `login_timeout`, one boot attempt).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from farm.coordinator import Coordinator
from farm.errors import InfrastructureError
from farm.places import acquired_place, list_places, lock, release, set_health
from farm.virtual.power import switch

from ..conftest import ROOT, run_farm

pytestmark = pytest.mark.boot

SICK, OTHER = "maaxboard-1", "maaxboard-2"


def health(lab) -> dict[str, tuple[str | None, int]]:
    """place -> (farm_health tag, consecutive infrastructure failures)."""
    with Coordinator(lab.coordinator) as coord:
        return {s.name: (s.health_tag, s.infra_failures) for s in list_places(coord)}


@contextlib.contextmanager
def dead_outlet(lab, place: str) -> Iterator[None]:
    """The place's power outlet switches nothing until the block ends; then it is repaired."""
    board = next(b for b in lab.state()["boards"] if b["place"] == place)
    qmp = Path(board["qmp_socket"])
    unplugged = qmp.with_name(qmp.name + ".unplugged")
    qmp.rename(unplugged)
    try:
        yield
    finally:
        unplugged.rename(qmp)
        switch_on_once(board)


def switch_on_once(board: dict) -> None:
    """The repair's last step, as at the bench: switch the board on, watch its console talk, switch it off.

    In the virtual lab this is also needed: a job that wrote to the console of a board that never ran
    (U-Boot's driver sends newlines while it waits) leaves input QEMU's UART cannot take while the
    guest is stopped, so QEMU stops reading that socket, never sees the job hang up, and accepts no
    other console client until the guest runs and drains it.
    """
    switch(board["qmp_socket"], "on")
    try:
        with socket.create_connection(("127.0.0.1", board["serial_port"]), timeout=30) as console:
            console.settimeout(2)
            deadline = time.monotonic() + 90
            while True:  # U-Boot may sit at its prompt already (stale input stopped its autoboot)
                console.sendall(b"\n")
                with contextlib.suppress(TimeoutError):
                    if console.recv(100):
                        break
                assert time.monotonic() < deadline, "the repaired board's console says nothing"
    finally:
        switch(board["qmp_socket"], "off")


def quick_failing_env(tmp_path: Path) -> Path:
    """env/maaxboard.yaml, giving up on U-Boot after 5 s instead of 60."""
    text = (ROOT / "env" / "maaxboard.yaml").read_text()
    assert text.count("login_timeout: 60\n") == 1  # UBootDriver's (the shell's is 120)
    env = tmp_path / "maaxboard-quick.yaml"
    env.write_text(text.replace("login_timeout: 60\n", "login_timeout: 5\n"))
    return env


def test_three_infrastructure_failures_make_a_place_unhealthy_until_a_health_check_passes(lab, tmp_path):
    assert health(lab) == {SICK: ("ok", 0), OTHER: ("ok", 0)}  # farm lab up tags its places healthy
    env = quick_failing_env(tmp_path)
    try:
        with dead_outlet(lab, SICK):
            # three CI jobs on the place, each failing for the lab's reason
            for n in (1, 2, 3):
                out = tmp_path / f"failing-{n}"
                proc = run_farm("run", "pipelines/health.yaml", "--farm", f"name={SICK}", "--env", str(env),
                                "--farm-timeout", "120", "--out", str(out), timeout=300)
                assert proc.returncode == 3, proc.stderr
                run = json.loads((out / "run.json").read_text())
                assert run["place"]["name"] == SICK and run["stopped_at"] == "boot maaxboard/default", run
                assert run["targets"]["maaxboard"]["boots"][0]["failed"], run
                assert health(lab)[SICK] == (("ok", n) if n < 3 else ("unhealthy", 3)), proc.stderr
            assert f"place {SICK} is now unhealthy" in proc.stderr
            assert run["place"]["health"] == "unhealthy"
            assert health(lab)[OTHER] == ("ok", 0)

            listed = run_farm("places")
            assert "unhealthy (3 infrastructure failures in a row)" in \
                next(line for line in listed.stdout.splitlines() if line.startswith(SICK)), listed.stdout

            # a reservation for the board never gets the sick place: it gets the other one ...
            with acquired_place({"board": "maaxboard"}, timeout=60, coordinator=lab.coordinator, job="t-h1") as lease:
                assert lease.place == OTHER
            # ... and when the other one is busy, it waits and gives up at its deadline, saying why
            with Coordinator(lab.coordinator) as coord:
                lock(coord, OTHER, job="t-busy")
                try:
                    proc = run_farm("reserve", "board=maaxboard", "--timeout", "3")
                    assert proc.returncode == 3, proc.stderr
                    message = proc.stderr.strip().splitlines()[-1]
                    assert "no place with board=maaxboard became free within 3 s" in message
                    assert f"{SICK} unhealthy (3 infrastructure failures in a row): farm health check {SICK}" in message
                    assert f"{OTHER} locked by" in message
                    with pytest.raises(InfrastructureError, match="became free within 2 s"):
                        with acquired_place({"board": "maaxboard"}, timeout=2, coordinator=lab.coordinator):
                            pytest.fail("must not get the unhealthy place")
                    assert coord.reservations() == []
                finally:
                    release(coord, OTHER, power=False)

            # a health check takes the unhealthy place; while the outlet is dead it fails, and counts
            proc = run_farm("health", "check", SICK, "--env", str(env), "--out", str(tmp_path / "check-dead"),
                            timeout=300)
            assert proc.returncode == 3, proc.stderr
            assert health(lab)[SICK] == ("unhealthy", 4)
            assert f"{SICK} is unhealthy (4 infrastructure failures in a row)" in proc.stderr

        # the outlet repaired: the health check (the real env file, pipelines/health.yaml) passes
        t0 = time.monotonic()
        proc = run_farm("health", "check", SICK, "--out", str(tmp_path / "check-ok"), timeout=600)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip().splitlines()[-1] == str(tmp_path / "check-ok")
        run = json.loads((tmp_path / "check-ok" / "run.json").read_text())
        assert run["status"] == "passed" and run["place"]["name"] == SICK and run["place"]["health_check"]
        assert run["place"]["health"] == "ok"
        assert run["targets"]["maaxboard"]["boots"][0]["cpus"] == 4
        assert f"place {SICK} is healthy again" in proc.stderr and f"{SICK} is ok" in proc.stderr
        assert health(lab) == {SICK: ("ok", 0), OTHER: ("ok", 0)}
        from tests.unit.test_events import stored_runs  # the health check reached the store (its listener)

        assert run["run_id"] in stored_runs(os.environ["FARM_DB"])
        print(f"\nhealth check passed in {time.monotonic() - t0:.1f}s")

        # and reservations get it again
        with Coordinator(lab.coordinator) as coord:
            lock(coord, OTHER, job="t-busy")
            try:
                with acquired_place({"board": "maaxboard"}, timeout=60, coordinator=lab.coordinator,
                                    job="t-h2") as lease:
                    assert lease.place == SICK
            finally:
                release(coord, OTHER, power=False)
    finally:
        with Coordinator(lab.coordinator) as coord:  # leave the lab healthy for the next tests
            for place in (SICK, OTHER):
                set_health(coord, place, "ok")


def test_farm_health_set_takes_a_place_out_and_puts_it_back(lab):
    """By hand (a board on the bench for repair): `farm health set PLACE unhealthy|ok`."""
    try:
        proc = run_farm("health", "set", OTHER, "unhealthy")
        assert proc.returncode == 0, proc.stderr
        assert f"{OTHER} is unhealthy (was ok)" in proc.stderr
        for _ in range(2):
            with acquired_place({"board": "maaxboard"}, timeout=60, coordinator=lab.coordinator) as lease:
                assert lease.place == SICK
        # farm reserve --any-health (or a reservation naming farm_health itself) may still take it
        with Coordinator(lab.coordinator) as coord:
            lock(coord, SICK, job="t-busy")
            try:
                proc = run_farm("reserve", "board=maaxboard", "--any-health", "--timeout", "30")
                assert proc.returncode == 0, proc.stderr
                assert f"export LG_PLACE={OTHER}" in proc.stdout
                token = proc.stdout.split("LG_TOKEN=", 1)[1].split()[0]
                coord.cancel_reservation(token)
            finally:
                release(coord, SICK, power=False)
        proc = run_farm("health", "set", OTHER, "ok")
        assert proc.returncode == 0 and f"{OTHER} is ok (was unhealthy)" in proc.stderr
        assert health(lab)[OTHER] == ("ok", 0)
    finally:
        with Coordinator(lab.coordinator) as coord:
            set_health(coord, OTHER, "ok")


def test_places_without_a_health_tag_get_one_when_farm_first_reserves_among_them(lab):
    """A lab whose places were created with labgrid-client (no farm_health tag) works unchanged."""
    with Coordinator(lab.coordinator) as coord:
        for place in (SICK, OTHER):
            coord.set_tags(place, {"farm_health": ""})
    assert health(lab) == {SICK: (None, 0), OTHER: (None, 0)}
    with acquired_place({"board": "maaxboard"}, timeout=60, coordinator=lab.coordinator) as lease:
        assert lease.place in (SICK, OTHER)
    assert health(lab) == {SICK: ("ok", 0), OTHER: ("ok", 0)}
    # labgrid-client shows the tag like any other
    client = Path(sys.executable).parent / "labgrid-client"
    shown = subprocess.run([str(client), "-p", SICK, "show"], capture_output=True, text=True, timeout=60, env=os.environ)
    assert "farm_health=ok" in shown.stdout or "'farm_health': 'ok'" in shown.stdout, shown.stdout
