"""The pure parts of the farm client and the virtual lab: tags, leases, the janitor's plan, configs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import attrs
import pytest

from farm.coordinator import parse_tags
from farm.errors import JobError
from farm.lease import LEASE_TAG_PREFIX, Lease, holder_state, leases_in, new_lease, own_leases, plain_tags
from farm.places import PlaceStatus, plan_janitor
from farm.virtual.boards import VirtualBoard, parse_board_counts, qemu_argv
from farm.virtual.configs import exporter_config, pdudaemon_config


def test_parse_tags():
    assert parse_tags(["board=maaxboard", "arch=aarch64"]) == {"board": "maaxboard", "arch": "aarch64"}
    for bad in ("board", "Board=x", "b=x", "board=", "board=Max Board"):
        with pytest.raises(JobError, match="expected KEY=VALUE"):
            parse_tags([bad])


def test_parse_board_counts():
    assert parse_board_counts(["maaxboard=2"]) == {"maaxboard": 2}
    assert parse_board_counts([]) == {"maaxboard": 1}
    with pytest.raises(JobError, match="unknown board model 'rpi'"):
        parse_board_counts(["rpi=1"])
    with pytest.raises(JobError, match="MODEL=COUNT"):
        parse_board_counts(["maaxboard"])


def test_lease_round_trip_and_holder_state():
    lease = new_lease("vm/root", "job 42,x=y", token="ABC")
    assert lease.key.startswith(LEASE_TAG_PREFIX)
    assert "," not in lease.job and "=" not in lease.job
    tags = {"board": "maaxboard", lease.key: lease.encode()}
    assert leases_in(tags) == [lease]
    assert plain_tags(tags) == {"board": "maaxboard"}
    assert holder_state(lease) == "alive"
    assert Lease.decode(LEASE_TAG_PREFIX + "x", "garbage") is None
    # a process that exited: its lease is gone, even if the pid came back with another start time
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    dead = new_lease("vm/root", "j", pid=child.pid)
    child.wait()
    assert holder_state(dead) == "gone"
    assert holder_state(Lease(dead.key, dead.owner, "elsewhere", 1, 1, dead.boot, "j")) == "unknown"


def test_own_leases_are_this_process_s_only():
    """What a job that lost the coordinator while locking may have left: its own lease, not a
    sibling's of the same owner, job name and host (another pid) nor one of a process gone."""
    mine = new_lease("vm/root", "j", token="T")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        sibling = new_lease("vm/root", "j", pid=child.pid)
        tags = {"board": "maaxboard", mine.key: mine.encode(), sibling.key: sibling.encode()}
        assert own_leases(tags) == [mine]
        assert own_leases({sibling.key: sibling.encode()}) == []
    finally:
        child.kill()
        child.wait()


def _status(name, holder=None, leases=()):
    return PlaceStatus(name=name, tags={}, comment="", holder=holder, since=None, reservation=None,
                       leases=tuple(leases), health="ok")


def _lease(owner, pid, job="j"):
    return Lease(key=f"{LEASE_TAG_PREFIX}{pid}", owner=owner, host="h", pid=pid, start=1, boot="b", job=job)


def test_janitor_plan_releases_only_my_locks_whose_holders_are_all_gone():
    me, other = "h/ci", "h/alice"
    dead, live = _lease(me, 1, "dead-job"), _lease(me, 2, "live-job")
    state = {1: "gone", 2: "alive", 3: "gone", 4: "unknown"}
    places = [
        _status("a", me, [dead]),                      # my vanished job: release
        _status("b", me, [live]),                      # my live job: keep
        _status("c", me, []),                          # my manual lock: keep
        _status("d", other, [_lease(other, 3)]),       # alice's dead job: not mine, keep
        _status("e", None, [_lease(me, 3)]),           # a stale record on a free place: forget
        _status("f", other, [_lease(me, 3)]),          # my stale record on alice's place: forget, never release
        _status("g", me, [_lease(me, 4)]),             # held from elsewhere, cannot tell: keep
        _status("h", me, [dead, live]),                # a dead and a live lease: keep
        # issue 31: a coordinator restart brings back lease records of jobs that had left; this host's
        # janitor forgets the dead ones of any owner, unless they are under their owner's lock
        _status("i", None, [_lease(other, 5, "alice-left")]),    # alice's dead job, free place: forget
        _status("j", None, [_lease(other, 4)]),                  # alice's, from elsewhere: nothing
        _status("k", None, [_lease(me, 3), _lease(other, 5)]),   # mine and alice's dead: forget both
    ]
    state[5] = "gone"
    plan = {a.place: a for a in plan_janitor(places, me, lambda lease: state[lease.pid])}
    assert {p: a.action for p, a in plan.items()} == {
        "a": "release", "b": "keep", "c": "keep", "d": "keep", "e": "forget", "f": "forget", "g": "keep", "h": "keep",
        "i": "forget", "k": "forget"}
    assert "dead-job" in plan["a"].reason and "manual" in plan["c"].reason and "alice" in plan["d"].reason
    assert "alice-left (pid 5)" in plan["i"].reason and len(plan["k"].leases) == 2


def _board(outlet=1):
    return VirtualBoard(place=f"maaxboard-{outlet}", model="maaxboard", outlet=outlet, serial_port=40000 + outlet,
                        qmp_socket=f"/lab/boards/{outlet}/qmp.sock", forwards={5201: 41000 + outlet})


def test_exporter_config_is_what_labgrid_exporter_reads(tmp_path):
    from labgrid.remote.config import ResourceConfig

    path = tmp_path / "exporter.yaml"
    path.write_text(exporter_config([_board(1), _board(2)], pdu_port=16421, tftp_root=tmp_path / "tftp"))
    data = ResourceConfig(str(path)).data  # rendered with Jinja2 like the exporter does
    group = data["maaxboard-2"]
    assert group["NetworkSerialPort"] == {"host": "127.0.0.1", "port": 40002, "speed": 115200, "protocol": "raw"}
    assert group["PDUDaemonPort"] == {"host": "127.0.0.1:16421", "pdu": "farm-vpdu", "index": 2}
    assert group["TFTPProvider"]["internal"] == f"{tmp_path}/tftp/"
    assert group["port-5201"] == {"cls": "NetworkService", "address": "127.0.0.1", "port": 41002, "username": "root"}


def test_pdudaemon_runs_the_qmp_power_command_of_the_outlet(tmp_path):
    config = json.loads(pdudaemon_config(boards_dir=tmp_path / "boards", port=16421, python=sys.executable))
    pdu = config["pdus"]["farm-vpdu"]
    assert pdu["driver"] == "localcmdline"
    assert pdu["cmd_on"] % 2 == f"{sys.executable} -m farm.virtual.power on {tmp_path}/boards/2/qmp.sock"
    assert pdu["cmd_off"] % 1 == f"{sys.executable} -m farm.virtual.power off {tmp_path}/boards/1/qmp.sock"
    assert config["daemon"] == {"hostname": "127.0.0.1", "port": 16421, "listener": "http", "logging_level": "INFO"}


def test_qemu_board_starts_paused_with_sockets_and_forwards(tmp_path):
    argv = qemu_argv(_board(1), tmp_path / "tftp")
    line = " ".join(argv)
    assert argv[0] == "qemu-system-aarch64" and argv[-1] == "-S"
    assert "-cpu cortex-a53 -m 1G -bios /usr/lib/u-boot/qemu_arm64/u-boot.bin -smp 4 " in line
    assert f"tftp={tmp_path}/tftp,hostfwd=tcp:127.0.0.1:41001-:5201,hostfwd=udp:127.0.0.1:41001-:5201" in line
    assert "-serial tcp:127.0.0.1:40001,server=on,wait=off" in line
    assert "-qmp unix:/lab/boards/1/qmp.sock,server=on,wait=off" in line


def test_a_lab_of_one_vcpu_twins_says_so_in_qemu_its_tags_and_its_state(tmp_path):
    from farm.virtual.boards import MODELS, check_cpus
    from farm.schema.read import structure
    from farm.virtual.lab import plan_lab

    lab = plan_lab(tmp_path, {"maaxboard": 2}, cpus=1)
    for board in lab.boards:
        assert " -smp 1 " in " ".join(qemu_argv(board, tmp_path / "tftp"))
        assert board.tags == {"board": "maaxboard", "arch": "aarch64", "cores": "1", "lab": "virtual"}
        assert structure(json.loads(json.dumps(board.as_dict())), VirtualBoard) == board
    default = plan_lab(tmp_path, {"maaxboard": 1}).boards[0]
    assert default.cpus == MODELS["maaxboard"].cpus == 4 and default.tags["cores"] == "4"
    old_state = {k: v for k, v in default.as_dict().items() if k != "cpus"}  # lab.json of an older farm
    assert structure(old_state, VirtualBoard).cpus == 4
    assert check_cpus(None) is None and check_cpus(1) == 1
    for bad in (0, -1, 9):
        with pytest.raises(JobError, match=rf"--cpus {bad}: expected 1\.\.8"):
            check_cpus(bad)


def test_lab_up_refuses_a_bad_cpu_count_before_starting_anything(tmp_path):
    from ..conftest import run_farm

    proc = run_farm("lab", "up", "--cpus", "0", "--dir", str(tmp_path / "lab"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == "farm: job error: --cpus 0: expected 1..8 vCPUs per board"
    assert not (tmp_path / "lab").exists()


def test_exporter_example_for_a_real_lab_host_is_valid(project_root):
    from labgrid.remote.config import ResourceConfig

    data = ResourceConfig(str(project_root / "env" / "exporter-lab.yaml")).data
    group = data["maaxboard-1"]
    assert {"USBSerialPort", "PDUDaemonPort", "TFTPProvider", "port-5201"} <= set(group)
    assert group["location"] == "rack 1, shelf 2"  # the '##' comments are gone
    assert group["port-5201"] == {"cls": "NetworkService", "address": "192.168.10.31", "port": 5201, "username": "root"}


def test_an_unreachable_coordinator_is_one_clear_line():
    from farm.virtual.processes import free_ports

    from ..conftest import run_farm

    address = f"127.0.0.1:{free_ports(1)[0]}"
    proc = run_farm("places", "--coordinator", address)
    assert proc.returncode == 3
    assert proc.stderr.startswith(f"farm: infrastructure error: cannot reach the labgrid coordinator at {address}")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_job_whose_coordinator_cannot_be_reached_tries_again_then_ends_in_one_line():
    """A job (acquired_place) tries an unreachable coordinator again for a while, saying so at once
    (a coordinator restarting is back in seconds), bounded by its own timeout; then exit 3 in one
    line that says how long it tried. `farm places` above does not wait."""
    import re

    from farm.virtual.processes import free_ports

    from .conftest import Job

    address = f"127.0.0.1:{free_ports(1)[0]}"
    t0 = time.monotonic()
    job = Job("hold", "board=maaxboard", "--timeout", "4", env={"LG_COORDINATOR": address})
    try:
        waiting = job.expect("WAITING", timeout=20)
        assert re.fullmatch(rf"WAITING cannot reach the labgrid coordinator at {re.escape(address)} \(.+\); set "
                            r"LG_COORDINATOR .*; trying again for up to [34] s", waiting), waiting
        error = job.expect("ERROR", timeout=20)
        assert job.proc.wait(timeout=20) == 3
        assert 3.5 < time.monotonic() - t0 < 20
        assert re.fullmatch(rf"ERROR cannot reach the labgrid coordinator at {re.escape(address)} \(.+; tried for "
                            r"[45] s\); set LG_COORDINATOR .*", error), error
    finally:
        job.kill()


def test_lab_commands_without_a_lab(tmp_path):
    from ..conftest import run_farm

    proc = run_farm("lab", "status", "--dir", str(tmp_path))
    assert proc.returncode == 2 and "no virtual lab here" in proc.stderr
    proc = run_farm("lab", "up", "--boards", "rpi=1", "--dir", str(tmp_path))
    assert proc.returncode == 2 and "unknown board model 'rpi'" in proc.stderr


def test_a_lock_is_the_newest_lease_of_its_owner():
    """After a coordinator restart another job of the same host/user may lock our place: the owner
    matches and our lease is still there (tags outlive the restart); the newer lease is the lock's."""
    from labgrid.remote.common import Place

    from farm.places import lock_stands, newer_leases

    old = attrs.evolve(_lease("h/ci", 1, "old-job"), since=100.0)
    new = attrs.evolve(_lease("h/ci", 2, "new-job"), since=200.0)
    alice = attrs.evolve(_lease("h/alice", 3), since=300.0)
    place = Place(name="p", acquired="h/ci", tags={lease.key: lease.encode() for lease in (old, new, alice)})
    assert not lock_stands(place, "h/ci", old) and newer_leases(place, old) == [new]
    assert lock_stands(place, "h/ci", new) and newer_leases(place, new) == []
    assert not lock_stands(Place(name="p", acquired=None, tags=place.tags), "h/ci", new)  # released (a restart)
    assert not lock_stands(Place(name="p", acquired="h/ci", tags={}), "h/ci", new)  # our lease dropped
    assert Lease.decode(new.key, new.encode()) == new
    assert Lease.decode(old.key, old.encode().replace(",since=100.0", "")).since == 0.0  # a lease of an older farm


def test_supervise_restarts_a_failed_command_and_passes_sigterm_on(tmp_path):
    """The virtual lab's exporter supervisor, as labgrid's systemd unit: restart on failure, stop on SIGTERM."""
    counter = tmp_path / "runs"
    script = f"import pathlib, sys; p = pathlib.Path({str(counter)!r}); n = int(p.read_text()) if p.exists() else 0; " \
             f"p.write_text(str(n + 1)); sys.exit(100 if n == 0 else 1 if n == 1 else 0)"
    proc = subprocess.run([sys.executable, "-m", "farm.virtual.supervise", "--delay", "0.1", "--",
                           sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and counter.read_text() == "3"  # exit 100, exit 1: restarted; exit 0: done
    assert "exited with 100; starting it again" in proc.stdout and "exited with 1; starting it again" in proc.stdout

    from farm.virtual.processes import children, wait_for

    proc = subprocess.Popen([sys.executable, "-m", "farm.virtual.supervise", "--", "sleep", "30"])
    # the supervisor has its handlers and runs the command once the command is its child (a fixed sleep guessed)
    assert wait_for(lambda: children(proc.pid), 30), "the supervisor never started its command"
    proc.terminate()
    assert proc.wait(timeout=10) == 128 + signal.SIGTERM  # sleep died of the SIGTERM passed on; no restart


def test_a_coordinator_call_runs_past_a_stop_an_interrupted_call_left_queued():
    """Ctrl-C in a call whose future had just completed leaves asyncio's ``loop.stop()`` queued; the
    clean-up's next call (cancel the reservation, release the place) must not end early on it."""
    import asyncio

    from farm.coordinator import Coordinator

    client = Coordinator.__new__(Coordinator)  # only its event loop: no coordinator needed
    client.loop = asyncio.new_event_loop()
    try:
        client.loop.call_soon(client.loop.stop)  # what the interrupted call left behind
        assert client._complete(asyncio.sleep(0.01, result="cancelled")) == "cancelled"

        async def fails():
            raise RuntimeError("the call's own")
        with pytest.raises(RuntimeError, match="the call's own"):
            client._complete(fails())
    finally:
        client.loop.close()


def test_a_coordinator_call_raises_a_ctrl_c_that_a_grpc_callback_swallowed():
    """Lost inside one of gRPC's callbacks, the interrupt left that call never completing (a queued job
    sat out its timeout after Ctrl-C): the waiting call raises it again."""
    import asyncio
    import time

    from farm import signals
    from farm.coordinator import LOST_INTERRUPT_CHECK, Coordinator

    client = Coordinator.__new__(Coordinator)
    client.loop = asyncio.new_event_loop()

    def swallowing_callback():  # what grpc's CallbackWrapper did with it ("Exception ignored in ...")
        try:
            signals._interrupt(signal.SIGINT, None)
        except KeyboardInterrupt:
            pass

    try:
        never = client.loop.create_future()  # the call whose completion went with the callback
        client.loop.call_later(0.05, swallowing_callback)
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            client._complete(never)
        assert time.monotonic() - t0 < 0.05 + 2 * LOST_INTERRUPT_CHECK + 0.5
        assert client._complete(asyncio.sleep(0, result="next call")) == "next call"  # raised once
    finally:
        client.loop.close()
