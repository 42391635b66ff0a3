"""farm lab: the real components run, places are tagged and healthy, plain labgrid-client works on them."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

from farm.virtual.power import is_on

from ..conftest import ROOT, run_farm


def test_status_shows_every_component_running(lab):
    proc = run_farm("lab", "status", "--dir", str(lab.directory))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for component in ("sshd", "coordinator", "pdudaemon", "qemu maaxboard-1", "qemu maaxboard-2", "exporter"):
        assert re.search(rf"^\s+{re.escape(component)}\s+pid \d+\s+running\s", proc.stdout, re.M), \
            (component, proc.stdout)
    assert "NOT RUNNING" not in proc.stdout


def test_places_are_tagged_healthy_and_free(lab):
    proc = run_farm("places", "--json")
    assert proc.returncode == 0, proc.stderr
    places = {p["name"]: p for p in json.loads(proc.stdout)}
    assert sorted(places) == lab.places
    for place in places.values():
        assert place["tags"] == {"board": "maaxboard", "arch": "aarch64", "cores": "4", "lab": "virtual"}
        assert place["health"] == "ok" and place["holder"] is None and place["leases"] == []


def test_a_second_lab_in_the_same_directory_is_refused(lab):
    proc = run_farm("lab", "up", "--dir", str(lab.directory))
    assert proc.returncode == 2
    assert "already up" in proc.stderr and "farm lab down" in proc.stderr


def test_plain_labgrid_client_powers_a_board_through_pdudaemon_and_qmp(lab):
    """The lab is a labgrid lab: labgrid-client, not farm, locks a place and switches its power."""
    qmp = lab.state()["boards"][0]["qmp_socket"]
    client = [str(Path(sys.executable).parent / "labgrid-client"), "-p", "maaxboard-1"]

    def run(*args):
        proc = subprocess.run([*client, *args], capture_output=True, text=True, timeout=60, env=os.environ)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert not is_on(qmp)
    run("acquire")
    try:
        run("power", "on")
        assert is_on(qmp)
        run("power", "off")
        assert not is_on(qmp)
    finally:
        run("release")


def test_plain_labgrid_client_console_reaches_the_board(lab):
    """labgrid-client's own console on the virtual farm: Debian 12 has no microcom, so labgrid runs
    telnet (scripts/setup.sh installs it) on the place's NetworkSerialPort; the board's U-Boot answers."""
    import pexpect

    client = [str(Path(sys.executable).parent / "labgrid-client"), "-p", "maaxboard-2"]
    qmp = lab.state()["boards"][1]["qmp_socket"]

    def run(*args):
        proc = subprocess.run([*client, *args], capture_output=True, text=True, timeout=60, env=os.environ)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    run("acquire")
    console = None
    try:
        console = pexpect.spawn(client[0], [*client[1:], "console"], env=dict(os.environ), timeout=60)
        console.expect(r"connecting to NetworkSerialPort.* calling telnet 127\.0\.0\.1 \d+")
        console.expect("Connected to")
        run("power", "on")
        console.expect(r"U-Boot 20\d\d")
        console.expect("Hit any key to stop autoboot")
        console.send("\n")  # into U-Boot's prompt, and a command it answers
        console.expect("=> ")
        console.send("version\n")
        console.expect(r"U-Boot 20\d\d\.\d\d")
        console.sendcontrol("]")  # telnet's escape, then its quit
        console.expect("telnet> ")
        console.send("quit\n")
        console.expect(pexpect.EOF)
    finally:
        if console is not None and console.isalive():
            console.terminate(force=True)
        run("power", "off")
        run("release")
    assert not is_on(qmp)


def test_console_is_attached_before_power_on(lab):
    """farm console on a locked place: the board's first words after power-on arrive; Ctrl-] leaves."""
    from farm.coordinator import Coordinator
    from farm.places import lock, release
    from farm.virtual.power import switch

    qmp = lab.state()["boards"][0]["qmp_socket"]
    with Coordinator(lab.coordinator) as coord:
        lock(coord, "maaxboard-1", job="t-console")
        console = subprocess.Popen([sys.executable, "-m", "farm.cli", "console", "maaxboard-1"], cwd=ROOT,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=os.environ)
        try:
            assert b"console of maaxboard-1 attached" in console.stderr.readline()
            switch(qmp, "on")
            seen, deadline = b"", time.monotonic() + 60
            while b"U-Boot 20" not in seen:
                ready, _, _ = select.select([console.stdout], [], [], max(0.0, deadline - time.monotonic()))
                assert ready, f"no U-Boot banner within 60 s; got {seen[-300:]!r}"
                chunk = console.stdout.read1(4096)
                assert chunk, f"console closed; got {seen[-300:]!r}"
                seen += chunk
            console.stdin.write(b"\x1d")
            console.stdin.flush()
            assert console.wait(timeout=30) == 0
        finally:
            if console.poll() is None:
                console.kill()
            release(coord, "maaxboard-1")
    assert not is_on(qmp)


def test_a_lab_of_one_vcpu_twins(tmp_path):
    """`farm lab up --cpus 1`: each QEMU runs one vCPU and its place is tagged cores=1 (a lab of its own)."""
    directory = tmp_path / "lab1"
    proc = run_farm("lab", "up", "--boards", "maaxboard=1", "--cpus", "1", "--dir", str(directory))
    assert proc.returncode == 0, proc.stderr
    try:
        coordinator = re.search(r"export LG_COORDINATOR=(\S+)", proc.stdout)[1]
        assert "place         maaxboard-1: board=maaxboard arch=aarch64 lab=virtual cores=1" in proc.stderr
        places = json.loads(run_farm("places", "--json", "--coordinator", coordinator).stdout)
        assert [p["tags"]["cores"] for p in places] == ["1"]
        state = json.loads((directory / "lab.json").read_text())
        assert state["boards"][0]["cpus"] == 1
        qemus = [p for p in state["processes"] if "qemu" in p["name"]]
        argv = Path(f"/proc/{qemus[0]['pid']}/cmdline").read_bytes().split(b"\0")
        assert argv[argv.index(b"-smp") + 1] == b"1" and argv.count(b"-smp") == 1
    finally:
        down = run_farm("lab", "down", "--dir", str(directory))
        assert down.returncode == 0, down.stderr
