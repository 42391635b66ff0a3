"""The real env/maaxboard.yaml boots the virtual lab's boards, one and two at a time."""

from __future__ import annotations

import json

import pytest

from farm.boot.console_log import ConsoleLog
from farm.boot.facts import read_facts
from farm.boot.session import EnvFile, boot_target
from farm.coordinator import Coordinator
from farm.places import acquired_place
from farm.virtual.power import is_on

from ..conftest import ROOT

pytestmark = pytest.mark.boot

BOOT_TIMEOUT = 300  # two TCG guests of 4 vCPUs on 2 shared cores: generous


def test_a_place_boots_env_maaxboard_unchanged(lab, maaxboard_image, tmp_path):
    env = EnvFile.load(ROOT / "env" / "maaxboard.yaml")
    boards = {b["place"]: b for b in lab.state()["boards"]}
    tftp_root = lab.directory / "tftp"
    with acquired_place({"board": "maaxboard"}, timeout=60, coordinator=lab.coordinator, job="t-env") as lease:
        with ConsoleLog(tmp_path / "console") as console:
            with boot_target(env, maaxboard_image, "t-env-1", console) as booted:
                # staged over SSH into the lab host's TFTP root, as links into the image cache
                staged = sorted(p.name for p in tftp_root.glob("*/t-env-1/*"))
                assert staged == sorted([maaxboard_image.kernel.name, maaxboard_image.initrd.name])
                facts = read_facts(booted.shell)
                assert (facts.cpus, facts.machine) == (4, "aarch64")
                assert facts.kernel == maaxboard_image.manifest["kernel_version"]
                # benchmarks reach the board through the port forward its exporter announces
                from farm.boot.network import reach

                assert reach(booted.target, facts.address, 5201) == \
                    ("127.0.0.1", boards[lease.place]["forwards"]["5201"])
            log = console.path("maaxboard").read_text(errors="replace")
        assert not list(tftp_root.glob("*/t-env-1")), "the job's TFTP folder is removed on the lab host"
    # the console was attached before power-on: U-Boot's banner is in the log
    for marker in ("U-Boot 20", "Hit any key to stop autoboot", "DHCP client bound", "Starting kernel", "FARM-READY"):
        assert marker in log, marker
    # afterwards: powered off, released, no lease, no reservation
    assert not is_on(boards[lease.place]["qmp_socket"])
    with Coordinator(lab.coordinator) as coord:
        place = coord.place(lease.place)
        assert place.acquired is None and place.reservation is None
        assert not [k for k in place.tags if k.startswith("farm_lease_")]
        assert coord.reservations() == []


def test_two_places_boot_in_parallel(jobs, maaxboard_image, tmp_path):
    """Two jobs, two processes: each reserves, locks and boots its own board at the same time."""
    running = [jobs("boot", "board=maaxboard", "--image", str(maaxboard_image.path), "--job", f"t-par-{i}",
                    "--log-dir", str(tmp_path / f"console-{i}"), "--timeout", "60") for i in (1, 2)]
    locked = [job.expect("LOCKED", timeout=120).split() for job in running]
    results = [json.loads(job.expect("{", timeout=BOOT_TIMEOUT)) for job in running]
    assert {r["place"] for r in results} == {place for _, place, _ in locked} == {"maaxboard-1", "maaxboard-2"}
    # at the same time: both held their board before either had booted
    assert max(float(t) for _, _, t in locked) < min(r["booted_at"] for r in results)
    assert all(r["cpus"] == 4 and r["machine"] == "aarch64" for r in results)
    assert [job.finish(timeout=120) for job in running] == [0, 0]
    for i in (1, 2):
        log = (tmp_path / f"console-{i}" / "maaxboard.log").read_text(errors="replace")
        assert "FARM-READY" in log


def test_env_file_resolves_the_locked_place_in_consecutive_blocks(lab):
    """One process, job after job (a pipeline with several targets): each block's env file sees its lock."""
    from labgrid.resource import NetworkSerialPort, PDUDaemonPort
    from labgrid.resource.remote import RemoteTFTPProvider

    from farm.boot.session import open_target

    env = EnvFile.load(ROOT / "env" / "maaxboard.yaml")
    seen = []
    for _ in range(2):
        with acquired_place({"board": "maaxboard"}, timeout=30, coordinator=lab.coordinator) as lease:
            _, target = open_target(env)
            try:
                kinds = {type(r) for r in target.resources}
                assert {NetworkSerialPort, PDUDaemonPort, RemoteTFTPProvider} <= kinds
                seen.append(lease.place)
            finally:
                target.cleanup()
    assert len(seen) == 2
