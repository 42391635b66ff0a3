"""Faults injected into the real farm stack (labgrid-coordinator, labgrid-exporter, pdudaemon, sshd and
QEMU boards of a virtual lab), and how a `farm run PIPELINE --farm board=maaxboard` job ends.

Numbers continue the list of tests/faults/test_boot_faults.py:

6. the board's serial endpoint closes mid-benchmark  -> infrastructure error (exit 3), board off, place free
7. the coordinator restarts during a run              -> the lost lock is found before the next benchmark,
                                                         which does not run; exit 3 naming the place; a job
                                                         waiting in the queue reserves again and runs (or,
                                                         the coordinator still away, ends at its timeout)
8. the exporter is frozen (SIGSTOP) past its keepalive -> a job that needs it waits for it within its
                                                         --farm-timeout (then exit 3); a job that does not
                                                         finishes and still releases its place; after SIGCONT
                                                         the lab's supervisor restarts it and the waiting job runs
9. a CI job killed while holding a place             -> tests/farm/test_janitor.py

Faults 7 and 8 break the lab itself, so each of those tests runs on a lab of its own (one board,
``farm lab up`` takes a few seconds); 6 uses the session's lab, which it leaves as it found it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable

import pytest

from farm.results.csvout import read_records
from farm.virtual.power import is_on
from farm.virtual.processes import children, port_open, wait_for

from ..conftest import ROOT, run_farm, wait_for_console_line
from .conftest import Job, VirtualLab

pytestmark = pytest.mark.boot

IMAGE = ROOT / "images" / "maaxboard-bench.yaml"
TWIN = ROOT / "env" / "qemu-maaxboard.yaml"  # farm run --farm board=maaxboard boots env/maaxboard.yaml beside it
PLACE = "maaxboard-1"  # the one place of a test's own lab


# --- helpers -------------------------------------------------------------------------------------

def say(text: str) -> None:
    print(f"\n{text}", file=sys.stderr)


def write_pipeline(tmp_path: Path, name: str, benchmarks: list[str]) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nimage: {IMAGE}\ntargets: [{{env: {TWIN}}}]\nboot_attempts: 1\n"
                    "benchmarks:\n" + "".join(f"  - {b}\n" for b in benchmarks))
    return path


SHORT = ["iperf3: {duration: 2}", "openssl-speed: {algorithms: [sha256], seconds: 1}"]


class FarmRun:
    """`farm run PIPELINE --farm board=maaxboard` in a subprocess, as a CI job runs it."""

    def __init__(self, pipeline: Path, out: Path, coordinator: str, timeout: float = 120):
        self.out = out
        self.log_path = out.with_name(out.name + ".log")
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "farm.cli", "run", str(pipeline), "--farm", "board=maaxboard",
                 "--farm-timeout", f"{timeout:g}", "--coordinator", coordinator, "--out", str(out)],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "LG_COORDINATOR": coordinator})

    def info(self) -> dict:
        try:
            return json.loads((self.out / "run.json").read_text())
        except (OSError, ValueError):  # not written yet
            return {}

    def stage(self) -> str:
        return str(self.info().get("current_stage") or "")

    def console_log(self) -> Path:
        """The board's serial log in the run directory (env/maaxboard.yaml's one target)."""
        return self.out / "console" / "maaxboard.log"

    def wait_for_stage(self, prefix: str, timeout: float = 240) -> None:
        if not wait_for(lambda: self.stage().startswith(prefix) or self.proc.poll() is not None, timeout, 0.1):
            raise AssertionError(f"no stage {prefix!r} within {timeout} s:\n{self.output()}")
        assert self.stage().startswith(prefix), f"the run ended ({self.proc.returncode}) before {prefix!r}:\n" \
                                                + self.output()

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"farm run still running after {timeout} s:\n{self.output()}") from None

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def cases(self) -> dict[str, ET.Element]:
        return {tc.get("name"): tc for tc in ET.parse(self.out / "junit.xml").getroot().iter("testcase")}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def farm_runs():
    started: list[FarmRun] = []

    def start(pipeline: Path, out: Path, coordinator: str, timeout: float = 120) -> FarmRun:
        run = FarmRun(pipeline, out, coordinator, timeout)
        started.append(run)
        return run

    yield start
    for run in started:
        run.stop()


def places(coordinator: str) -> dict[str, dict]:
    """`farm places --json`, by place name."""
    proc = run_farm("places", "--json", "--coordinator", coordinator, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return {p["name"]: p for p in json.loads(proc.stdout)}


def reservations(coordinator: str) -> list:
    from farm.coordinator import Coordinator

    with Coordinator(coordinator) as coord:
        return coord.reservations()


def assert_free(lab: VirtualLab, place: str) -> None:
    """Released, no lease record, no reservation left, and the board powered off."""
    status = places(lab.coordinator)[place]
    assert status["holder"] is None and status["reservation"] is None, status
    assert status["leases"] == [], status
    assert reservations(lab.coordinator) == []
    board = next(b for b in lab.state()["boards"] if b["place"] == place)
    assert not is_on(board["qmp_socket"])


def wait_until_healthy(lab: VirtualLab, place: str, timeout: float = 60) -> float:
    """Seconds until `farm places` says the place's resources are exported and available again."""
    t0 = time.monotonic()
    assert wait_for(lambda: places(lab.coordinator)[place]["health"] == "ok", timeout, 0.5), \
        places(lab.coordinator)[place]
    return time.monotonic() - t0


def lab_process(lab: VirtualLab, name: str) -> dict:
    return next(p for p in lab.state()["processes"] if p["name"] == name)


def exporter_pid(lab: VirtualLab, timeout: float = 30) -> int:
    """The labgrid-exporter itself: the child of the lab's exporter supervisor."""
    supervisor = lab_process(lab, "exporter")["pid"]
    assert wait_for(lambda: len(children(supervisor)) == 1, timeout, 0.1), "no exporter under its supervisor"
    return children(supervisor)[0]


def close_serial_endpoint(port: int) -> int:
    """Abort the board side of every TCP connection to its serial endpoint (127.0.0.1:``port``).

    The endpoint closes the connection under the console, as when ser2net on a lab host restarts or
    the USB-serial adapter goes away: the client gets a reset, the endpoint listens again. The
    socket is destroyed in the kernel (``ss -K``, sock_diag), QEMU and its board are not touched.
    Returns how many connections were closed.
    """
    def connections(*extra: str) -> list[str]:
        proc = subprocess.run(["ss", *extra, "-H", "-t", "-n", "state", "established", f"( sport = :{port} )"],
                              capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        return [line for line in proc.stdout.splitlines() if line.strip()]

    before = connections()
    assert before, "the console had no connection to the serial endpoint"
    connections("-K")
    if connections() == before:
        pytest.skip("ss -K cannot destroy sockets here (needs CONFIG_INET_DIAG_DESTROY and CAP_NET_ADMIN)")
    return len(before)


def restart_coordinator(lab: VirtualLab, down_for: float = 0.0) -> float:
    """Stop the lab's labgrid-coordinator and, ``down_for`` seconds later, start it again as `farm lab up`
    does (same port, same working directory and places.yaml); lab.json names the new process. Returns
    the seconds it took."""
    from farm.virtual.lab import Lab
    from farm.virtual.processes import spawn, stop

    state = Lab.load(lab.directory)
    old = next(p for p in state.processes if p.name == "coordinator")
    t0 = time.monotonic()
    assert stop(old) == "stopped"
    time.sleep(down_for)
    new = spawn("coordinator", list(old.argv), Path(old.log), cwd=lab.directory / "coordinator")
    state.processes[state.processes.index(old)] = new
    state.save()
    assert wait_for(lambda: port_open(int(lab.coordinator.rsplit(":", 1)[1])), 60, 0.1), "coordinator not back"
    return time.monotonic() - t0


def persisted(lab: VirtualLab, text: str) -> Callable[[], bool]:
    """Whether the coordinator wrote ``text`` to its places.yaml (it saves changes every 15 s)."""
    path = lab.directory / "coordinator" / "places.yaml"
    return lambda: path.exists() and text in path.read_text()


@pytest.fixture
def own_lab(tmp_path_factory, maaxboard_image):
    """A virtual lab with one board for this test alone; every process of it stopped afterwards."""
    from farm.proc import start_time

    directory = tmp_path_factory.mktemp("flab")  # short: QMP socket paths must stay under 108 bytes
    proc = run_farm("lab", "up", "--boards", "maaxboard=1", "--dir", str(directory), timeout=240)
    assert proc.returncode == 0, proc.stderr
    coordinator = proc.stdout.strip().splitlines()[-1].split("=", 1)[1]
    lab = VirtualLab(directory, coordinator, [PLACE])
    try:
        yield lab
    finally:
        started = []
        for p in lab.state()["processes"]:  # a frozen process would only die at SIGKILL
            for pid in [p["pid"], *children(p["pid"])]:
                started.append((pid, start_time(pid)))
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
        down = run_farm("lab", "down", "--dir", str(directory), timeout=120)
        assert down.returncode == 0, down.stderr
        still = [pid for pid, start in started if start is not None and start_time(pid) == start]
        assert not still, f"still running after farm lab down: {still}"


# --- 6. the serial endpoint closes mid-run ---------------------------------------------------------

@pytest.mark.skipif(not shutil.which("ss"), reason="needs ss (iproute2) to close the serial connection")
def test_6_serial_endpoint_closing_mid_benchmark_is_an_infrastructure_error(lab, maaxboard_image, tmp_path,
                                                                             farm_runs):
    pipeline = write_pipeline(tmp_path, "fault-6", ["iperf3: {duration: 2}",
                                                    "openssl-speed: {algorithms: [sha512], seconds: 20}"])
    run = farm_runs(pipeline, tmp_path / "run", lab.coordinator)
    run.wait_for_stage("crypto.openssl-speed")
    # openssl runs on the board (the line it prints as its first test starts), the console waits for its end
    wait_for_console_line(run.console_log(), r"\+DT:sha512:", 60, running=run.proc)
    place = run.info()["place"]["name"]
    board = next(b for b in lab.state()["boards"] if b["place"] == place)
    t0 = time.monotonic()
    assert close_serial_endpoint(board["serial_port"]) == 1  # the run's console, nobody else's
    assert run.wait(timeout=120) == 3, run.output()
    seconds = time.monotonic() - t0
    assert seconds < 60, f"the run took {seconds:.0f} s to end after its console was closed"
    say(f"fault 6: console connection aborted; the run ended (exit 3) {seconds:.1f} s later")

    cases = run.cases()
    broken = cases["crypto.openssl-speed maaxboard/default"]
    assert broken.find("error") is not None, ET.tostring(broken)
    message = broken.find("error").get("message")
    assert "SerialException" in message and ("reset" in message or "disconnected" in message), message
    assert cases["network.iperf3 maaxboard/default"].find("error") is None
    records = read_records(run.out / "results.csv")
    assert records and {r.benchmark for r in records} == {"iperf3"}, "iperf3's records are kept, openssl has none"
    info = run.info()
    assert info["status"] == "infrastructure-error"
    assert info["stopped_at"] == "crypto.openssl-speed maaxboard/default"
    assert_free(lab, place)
    assert port_open(board["serial_port"]), "the endpoint listens again for the next job's console"


# --- 7. the coordinator restarts during a run ---------------------------------------------------------

def restart_while_openssl_runs(lab: VirtualLab, run: FarmRun) -> str:
    """Once the run's lease is in the coordinator's places.yaml (the restarted coordinator reads its
    places back from there), restart the coordinator while openssl runs. Returns the lease's tag."""
    run.wait_for_stage("crypto.openssl-speed")
    (lease,) = places(lab.coordinator)[PLACE]["leases"]
    assert wait_for(persisted(lab, lease["key"]), 40, 0.5), "the coordinator never saved the run's lease"
    restart_coordinator(lab)
    assert run.stage().startswith("crypto.openssl-speed"), "openssl ended before the restart: the test cannot judge"
    return lease["key"]


def test_7_coordinator_restart_mid_run_is_a_lost_lock(own_lab, tmp_path, farm_runs):
    pipeline = write_pipeline(tmp_path, "fault-7", ["openssl-speed: {algorithms: [sha512], seconds: 4}",
                                                    "iperf3: {duration: 2}"])
    run = farm_runs(pipeline, tmp_path / "run", own_lab.coordinator)
    lease = restart_while_openssl_runs(own_lab, run)
    t_restart = time.monotonic()
    say(f"fault 7: coordinator restarted at {run.stage()}")
    assert run.wait(timeout=180) == 3, run.output()
    seconds = time.monotonic() - t_restart

    # openssl finishes (the coordinator is on no console's path); before iperf3 the lock is found gone
    cases = run.cases()
    assert cases["crypto.openssl-speed maaxboard/default"].find("error") is None
    lost = cases["network.iperf3 maaxboard/default"].find("error")
    assert lost is not None
    assert lost.get("message").startswith(f"lost the lock on place {PLACE}: held now by nobody (was the "
                                          f"coordinator at {own_lab.coordinator} restarted"), lost.get("message")
    assert {r.benchmark for r in read_records(run.out / "results.csv")} == {"openssl-speed"}, "iperf3 never ran"
    info = run.info()
    assert info["status"] == "infrastructure-error"
    assert info["stopped_at"] == "network.iperf3 maaxboard/default"
    assert seconds < 90, f"{seconds:.0f} s from the restart to the end of the run"
    say(f"fault 7: the run ended (exit 3) {seconds:.1f} s after the restart")

    # the restarted coordinator read the lease back from places.yaml; the run's clean-up dropped it
    back = wait_until_healthy(own_lab, PLACE)  # the supervised exporter came back by itself
    say(f"fault 7: place healthy again {back:.1f} s later")
    assert_free(own_lab, PLACE)
    assert lease not in places(own_lab.coordinator)[PLACE]["tags"]
    job = Job("hold", "board=maaxboard", "--job", "t-after-restart", "--timeout", "60",
              env={"LG_COORDINATOR": own_lab.coordinator})
    try:
        job.expect("LOCKED", timeout=90)  # the lab works again: the next job gets the place
        assert job.finish(timeout=90) == 0
    finally:
        job.kill()
    assert_free(own_lab, PLACE)


def test_7_no_other_job_takes_the_board_while_the_lost_lock_s_job_still_drives_it(own_lab, tmp_path, farm_runs):
    """After the restart the place is free for the coordinator, which gives it to another job of the
    same user (same runner: same labgrid owner host/user) at once. The run's lease is still on the
    place and its process alive: the other job waits (issue 31: it used to lock the board and boot it
    while openssl still ran there) and takes the board once the run found, before iperf3, that its
    lock was lost, stopped, and left its lease."""
    pipeline = write_pipeline(tmp_path, "fault-7b", ["openssl-speed: {algorithms: [sha512], seconds: 20}",
                                                     "iperf3: {duration: 2}"])
    run = farm_runs(pipeline, tmp_path / "run", own_lab.coordinator)
    restart_while_openssl_runs(own_lab, run)
    wait_until_healthy(own_lab, PLACE)
    other = Job("hold", "board=maaxboard", "--job", "t-takeover", "--timeout", "120",
                env={"LG_COORDINATOR": own_lab.coordinator})
    try:
        waiting = other.expect("WAITING", timeout=90)
        assert f"{PLACE} may still be driven by job {run.info()['run_id']}" in waiting, waiting
        assert run.stage().startswith("crypto.openssl-speed"), "openssl ended before the other job asked"
        say("fault 7b: another job of the same user was given the place while openssl ran, and waits")
        while run.proc.poll() is None and run.stage().startswith("crypto.openssl-speed"):
            if places(own_lab.coordinator)[PLACE]["holder"] is not None:
                # taken once the run found its lock lost (its check before iperf3) and left: openssl had ended,
                # its records written (run.json's stage still names openssl until the run ends; on a busy
                # machine the other job can lock in between)
                assert _measured(run) == {"openssl-speed"}, "another job locked the board under openssl"
                break
            time.sleep(0.5)
        assert run.wait(timeout=180) == 3, run.output()
        other.expect("LOCKED", timeout=90)
        lost = run.cases()["network.iperf3 maaxboard/default"].find("error")
        assert lost is not None
        message = lost.get("message")
        assert message.startswith(f"lost the lock on place {PLACE}: held now by nobody"), message
        assert {r.benchmark for r in read_records(run.out / "results.csv")} == {"openssl-speed"}
        status = places(own_lab.coordinator)[PLACE]
        assert status["holder"] is not None
        assert [lease["job"] for lease in status["leases"]] == ["t-takeover"], status["leases"]
        assert other.finish(timeout=90) == 0
    finally:
        other.kill()
    assert_free(own_lab, PLACE)


def _measured(run: FarmRun) -> set[str]:
    """The benchmarks whose records the run has written so far (each when it ends)."""
    path = run.out / "results.csv"
    return {r.benchmark for r in read_records(path)} if path.exists() else set()


def test_7_a_job_waiting_in_the_queue_survives_the_restart(own_lab):
    """The restarted coordinator forgets the queue; a job that waited in it held nothing, so it waits
    for the coordinator and reserves again within its own timeout (issue 31: it ended with exit 3,
    `poll reservation …: CANCELLED`, and at lab scale a job met that on every CI attempt). The lock
    the restart took from the holder still holds the board back by its lease until the holder leaves."""
    env = {"LG_COORDINATOR": own_lab.coordinator}
    holder = Job("hold", "board=maaxboard", "--job", "t-holder", "--timeout", "60", env=env)
    queued = None
    try:
        holder.expect("LOCKED", timeout=90)
        queued = Job("hold", "board=maaxboard", "--job", "t-queued", "--timeout", "180", env=env)
        queued.expect("WAITING waiting for a place with board=maaxboard", timeout=60)
        (lease,) = places(own_lab.coordinator)[PLACE]["leases"]
        assert wait_for(persisted(own_lab, lease["key"]), 40, 0.5), "the coordinator never saved the holder's lease"
        restart_coordinator(own_lab)
        lost = queued.expect("WAITING lost the coordinator", timeout=60)
        assert lost.startswith(f"WAITING lost the coordinator at {own_lab.coordinator} while waiting for a place ("), \
            lost
        assert lost.endswith("); reserving again once it is back"), lost
        say(f"fault 7c: {lost}")
        # (before it, maybe: the place cannot be used yet, its exporter not back with the new coordinator)
        held_back = queued.expect(f"WAITING waiting: {PLACE} may still be driven by job t-holder", timeout=90)
        assert "whose lock the coordinator lost" in held_back, held_back
        assert not [line for line in queued.output if line.startswith(("LOCKED", "ERROR"))], queued.output
        assert queued.proc.poll() is None
        assert holder.finish(timeout=90) == 0  # leaves: drops its lease (the lock was the restart's to lose)
        queued.expect("LOCKED", timeout=90)
        status = places(own_lab.coordinator)[PLACE]
        assert [held["job"] for held in status["leases"]] == ["t-queued"], status["leases"]
        assert len(reservations(own_lab.coordinator)) == 1, "the reservation lost with the old queue came back"
        assert queued.finish(timeout=90) == 0
    finally:
        holder.kill()
        if queued is not None:
            queued.kill()
    assert_free(own_lab, PLACE)


def test_7_a_queued_job_whose_coordinator_stays_away_ends_at_its_timeout(own_lab):
    """Waiting for the coordinator to come back is bounded by the job's own timeout: exit 3 naming both
    the lost connection and the wait, while the coordinator is still down (nothing held, so nothing to
    wait for when giving back)."""
    env = {"LG_COORDINATOR": own_lab.coordinator}
    holder = Job("hold", "board=maaxboard", "--job", "t-holder", "--timeout", "60", env=env)
    queued = None
    try:
        holder.expect("LOCKED", timeout=90)
        # the restarted coordinator must know the place (it saves places every 15 s; a new lab's not yet)
        (lease,) = places(own_lab.coordinator)[PLACE]["leases"]
        assert wait_for(persisted(own_lab, lease["key"]), 40, 0.5), "the coordinator never saved the place"
        queued = Job("hold", "board=maaxboard", "--job", "t-queued", "--timeout", "30", env=env)
        queued.expect("WAITING waiting for a place with board=maaxboard", timeout=20)
        restart_coordinator(own_lab, down_for=45)
        assert queued.proc.poll() == 3, "the queued job did not end within its timeout while the coordinator was down"
        queued.expect("WAITING lost the coordinator", timeout=5)
        error = queued.expect("ERROR", timeout=5)
        assert error.endswith(f"; the coordinator at {own_lab.coordinator} was not back within the timeout"), error
        assert holder.finish(timeout=90) == 0
    finally:
        holder.kill()
        if queued is not None:
            queued.kill()
    assert_free(own_lab, PLACE)


def test_7_a_job_started_while_the_coordinator_restarts_waits_for_it(own_lab):
    """A job that starts while the coordinator is down (a CI retry a second after the last attempt
    failed on the restart) says so at once and tries again, instead of spending CI's retries on the
    seconds of the restart (issue 31's multi-host run: 3 retries of a job within 5 s, all exit 3)."""
    import threading

    env = {"LG_COORDINATOR": own_lab.coordinator}
    restarting = threading.Thread(target=restart_coordinator, args=(own_lab,), kwargs={"down_for": 8})
    job = None
    # the restarted coordinator must know the place (it saves places every 15 s; a new lab's not yet)
    assert wait_for(persisted(own_lab, "board: maaxboard"), 40, 0.5), "the coordinator never saved the place"
    try:
        restarting.start()
        port = int(own_lab.coordinator.rsplit(":", 1)[1])
        assert wait_for(lambda: not port_open(port), 20, 0.1), "the coordinator did not stop"
        job = Job("hold", "board=maaxboard", "--job", "t-early", "--timeout", "120", env=env)
        waiting = job.expect("WAITING", timeout=30)
        assert waiting.startswith(f"WAITING cannot reach the labgrid coordinator at {own_lab.coordinator} ("), waiting
        assert waiting.endswith("; trying again for up to 30 s"), waiting
        restarting.join()
        job.expect("LOCKED", timeout=90)
        assert not [line for line in job.output if line.startswith("ERROR")], job.output
        assert job.finish(timeout=90) == 0
    finally:
        restarting.join()
        if job is not None:
            job.kill()
    assert_free(own_lab, PLACE)


def test_7_a_job_holding_its_board_and_waiting_for_a_load_client_takes_both_again(own_lab, tmp_path):
    """A job that has locked its board and waits for the load client wired to it has driven nothing
    yet: when the coordinator restarts (locks and queue forgotten) it drops its lease on the board,
    reserves both again and runs (issue 31's multi-host run: such sweep jobs ended with exit 3,
    `poll reservation …: failed to connect`). The load client is a place of a second exporter."""
    from farm.coordinator import Coordinator
    from farm.places.loadgens import GENERATOR_TAG, LOADGENS_TAG, RESOURCE_PREFIX
    from farm.places.tags import HEALTH_TAG, HEALTHY
    from farm.virtual.processes import spawn, stop

    config = tmp_path / "loadgen-exporter.yaml"
    config.write_text(json.dumps({"lgx": {f"{RESOURCE_PREFIX}lgx": {
        "cls": "NetworkService", "address": "127.0.0.1", "port": 22, "username": "root"}}}))
    exporter = spawn("loadgen exporter", [sys.executable, "-m", "farm.virtual.supervise", "--",
                                          str(Path(sys.executable).parent / "labgrid-exporter"), "-c",
                                          own_lab.coordinator, "-n", "t-loadgen", "--hostname", "127.0.0.1",
                                          str(config)], tmp_path / "exporter.log")
    env = {"LG_COORDINATOR": own_lab.coordinator}
    holder = queued = None
    try:
        with Coordinator(own_lab.coordinator) as coord:
            assert wait_for(lambda: (coord.sync(), "t-loadgen" in coord.resources())[1], 30, 0.2), \
                (tmp_path / "exporter.log").read_text()
            coord.add_place("lgx")
            coord.add_match("lgx", "t-loadgen/lgx/*")
            coord.set_tags("lgx", {GENERATOR_TAG: "lgx", HEALTH_TAG: HEALTHY})
            coord.set_tags(PLACE, {LOADGENS_TAG: "lgx"})
        holder = Job("hold", f"{GENERATOR_TAG}=lgx", "--job", "t-lg-holder", "--timeout", "60", env=env)
        holder.expect("LOCKED lgx", timeout=60)
        queued = Job("hold", "board=maaxboard", "--loadgens", "--job", "t-sweep", "--timeout", "240", env=env)
        queued.expect(f"WAITING waiting for a place with {GENERATOR_TAG}=lgx", timeout=60)
        board_lease = next(lease["key"] for lease in places(own_lab.coordinator)[PLACE]["leases"])
        assert wait_for(persisted(own_lab, board_lease), 40, 0.5), "the coordinator never saved the board's lease"
        restart_coordinator(own_lab)
        lost = queued.expect("WAITING lost the coordinator", timeout=60)
        assert lost.startswith(f"WAITING lost the coordinator at {own_lab.coordinator} before the job began ("), lost
        assert lost.endswith("); reserving again once it is back"), lost
        assert not [line for line in queued.output if line.startswith(("LOCKED", "ERROR"))], queued.output
        assert holder.finish(timeout=90) == 0
        queued.expect(f"LOCKED {PLACE}", timeout=120)
        assert json.loads(queued.expect("LOADGENS", timeout=10).split(" ", 1)[1]) == [["lgx", "lgx"]]
        status = places(own_lab.coordinator)
        assert [held["job"] for held in status[PLACE]["leases"]] == ["t-sweep"], status[PLACE]["leases"]
        assert [held["job"] for held in status["lgx"]["leases"]] == ["t-sweep"], status["lgx"]["leases"]
        assert queued.finish(timeout=90) == 0
        assert places(own_lab.coordinator)["lgx"]["holder"] is None
    finally:
        for job in (holder, queued):
            if job is not None:
                job.kill()
        stop(exporter)
    assert_free(own_lab, PLACE)


# --- 8. the exporter frozen past its keepalive ------------------------------------------------------

def test_8_exporter_frozen_past_its_keepalive_the_job_waits_then_runs(own_lab, tmp_path, farm_runs):
    """A place whose exporter is down is given out by the coordinator all the same: the job does not
    fail on it at once (a CI retry would fail as fast) but waits within --farm-timeout, keeping the
    reservation; at the timeout it is exit 3 naming why, and once the exporter is back it runs."""
    exporter = exporter_pid(own_lab)
    os.kill(exporter, signal.SIGSTOP)
    try:
        # the coordinator pings the exporter every 10 s and drops it after 10 s without an answer
        t0 = time.monotonic()
        assert wait_for(lambda: places(own_lab.coordinator)[PLACE]["health"] != "ok", 90, 1.0)
        dropped = time.monotonic() - t0
        say(f"fault 8: the coordinator dropped the frozen exporter after {dropped:.1f} s")
        assert dropped > 5, f"dropped after {dropped:.0f} s: not the keepalive"
        assert "exporter down?" in places(own_lab.coordinator)[PLACE]["health"]

        short = farm_runs(write_pipeline(tmp_path, "fault-8", SHORT), tmp_path / "short", own_lab.coordinator,
                          timeout=15)
        t1 = time.monotonic()
        assert short.wait(timeout=120) == 3, short.output()
        failed = time.monotonic() - t1
        assert 14 < failed < 90, f"{failed:.0f} s: it did not wait for its --farm-timeout of 15 s"
        say(f"fault 8: with --farm-timeout 15 a job needing the exporter ended (exit 3) after {failed:.1f} s")
        error = short.cases()["reserve board=maaxboard"].find("error")
        assert error is not None
        assert error.get("message").startswith(f"{PLACE} cannot be used now: nothing exported for "
                                               f"{exporter_name(own_lab)}/{PLACE}/* (exporter down?); no usable "
                                               "place with board=maaxboard within the timeout"), error.get("message")
        status = places(own_lab.coordinator)[PLACE]
        assert status["holder"] is None and status["leases"] == [] and reservations(own_lab.coordinator) == []

        waiting = farm_runs(write_pipeline(tmp_path, "fault-8-waits", SHORT), tmp_path / "waits",
                            own_lab.coordinator, timeout=240)
        assert wait_for(lambda: "waiting: " in waiting.output(), 60, 0.5), waiting.output()
        assert waiting.proc.poll() is None
    finally:
        os.kill(exporter, signal.SIGCONT)
    # woken up, the exporter finds its stream gone and exits; the lab's supervisor starts it again
    back = wait_until_healthy(own_lab, PLACE)
    say(f"fault 8: SIGCONT; place healthy again {back:.1f} s later")
    assert exporter_pid(own_lab) != exporter
    assert waiting.wait(timeout=300) == 0, waiting.output()  # the job that waited got the place and ran
    assert "waiting: maaxboard-1 cannot be used now: nothing exported" in waiting.output()
    assert_free(own_lab, PLACE)


def exporter_name(lab: VirtualLab) -> str:
    """The exporter's name (farm-vlab-<id>): the first part of every resource path of the lab."""
    return json.loads((lab.directory / "lab.json").read_text())["name"]


def test_8_exporter_frozen_mid_run_the_place_is_still_released(own_lab, tmp_path, farm_runs):
    """The exporter is on no console, power or TFTP path: the run measures to its end. Releasing the
    place waits for the coordinator, which waits 10 s per resource for the frozen exporter until it
    drops it; a release given up earlier would leave the place locked without its lease (for good:
    the janitor keeps lease-less locks)."""
    run = farm_runs(write_pipeline(tmp_path, "fault-8b", SHORT), tmp_path / "run", own_lab.coordinator)
    run.wait_for_stage("crypto.openssl-speed")
    exporter = exporter_pid(own_lab)
    os.kill(exporter, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        assert run.wait(timeout=180) == 0, run.output()
        seconds = time.monotonic() - t0
        assert {r.benchmark for r in read_records(run.out / "results.csv")} == {"iperf3", "openssl-speed"}
        status = places(own_lab.coordinator)[PLACE]
        assert status["holder"] is None and status["leases"] == [], status
        assert reservations(own_lab.coordinator) == []
        assert seconds < 100, f"{seconds:.0f} s from the freeze to the end of the run"
        say(f"fault 8b: the run passed and released its place {seconds:.1f} s after the freeze")
    finally:
        os.kill(exporter, signal.SIGCONT)
    assert wait_until_healthy(own_lab, PLACE) < 60
    job = Job("hold", "board=maaxboard", "--job", "t-after-freeze", "--timeout", "60",
              env={"LG_COORDINATOR": own_lab.coordinator})
    try:
        job.expect("LOCKED", timeout=90)
        assert job.finish(timeout=90) == 0
    finally:
        job.kill()
    assert_free(own_lab, PLACE)
