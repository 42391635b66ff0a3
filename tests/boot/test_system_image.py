"""A system image boots on the MaaXBoard's twin as it is (the flow system): farm's bare-metal stand-in,
built here with the cross gcc, TFTP-staged and booted by Debian's U-Boot through bootm, its ready line
waited for, its banner and per-component lines read as records; a lab's raw file given by --image
is wrapped in a uImage and booted the same way; bootelf, which hangs on the twin, and a fatal line
are clear failures with the console kept."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from farm.images.system import system_image

from ..conftest import run_farm

pytestmark = pytest.mark.boot


def _rows(out: Path) -> list[dict]:
    with open(out / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def _pipeline(tmp_path: Path, project_root: Path, system: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(f"name: sys\ntargets: [{{env: {project_root / 'env' / 'qemu-maaxboard.yaml'}}}]\n"
                    f"setups:\n  - name: client-vm\n    system: {system}\n"
                    "benchmarks: [{console: {until: 'farm-standin: powering off', seconds: 60}}]\n")
    return path


def test_the_standin_boots_through_bootm_and_its_stats_become_records(project_root, tftp_root, tmp_path):
    out = tmp_path / "run"
    proc = run_farm("run", "pipelines/system-standin.yaml", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = _rows(out)
    assert {(r["suite"], r["benchmark"], r["setup"], r["image"]) for r in rows} == \
        {("system", "console", "standin", "farm-standin")}
    banner = [r for r in rows if r["metric"] == "banner"]
    assert [(r["params"], r["value"], r["unit"]) for r in banner] == [("el=1;version=1", "1.0", "count")]
    ticks = {r["params"]: float(r["value"]) for r in rows if r["metric"] == "ticks"}
    assert set(ticks) == {"component=fill", "component=checksum", "component=copy"} and min(ticks.values()) > 0
    shares = [float(r["value"]) for r in rows if r["metric"] == "share"]
    assert len(shares) == 3 and 90 <= sum(shares) <= 100.5  # the three components take (nearly) all ticks
    run = json.loads((out / "run.json").read_text())
    boot = run["targets"]["maaxboard-twin"]["boots"][0]
    image = system_image(project_root / "images" / "standin.yaml")
    assert boot["flow"] == "system" and boot["system"]["boot"] == "bootm"
    assert boot["system"]["sha256"] == image.manifest["artifacts"]["farm-standin.uimg"]["sha256"]
    assert boot["system"]["ready"] == "farm-standin: ready"
    cases = {c.get("name"): c for c in ET.parse(out / "junit.xml").getroot().iter("testcase")}
    assert any(n.startswith("system.console") for n in cases)
    log = (out / "console" / "maaxboard-twin.log").read_text(errors="replace")
    assert log.index("bootm ${kernel_addr_r} - ${fdtcontroladdr}") < log.index("farm-standin: ready") \
        < log.index("farm-standin: powering off")
    assert not list(tftp_root.glob("*/*standin*")), "the job's TFTP folder is removed after the boot"


def test_a_labs_raw_file_given_by_image_is_booted_as_farms_uimage_of_it(project_root, tftp_root, tmp_path):
    standin = system_image(project_root / "images" / "standin.yaml")
    loader = tmp_path / "loader.img"  # what Microkit gives the lab: a raw binary and its load address
    loader.write_bytes((standin.path / "farm-standin.bin").read_bytes())
    pipeline = _pipeline(tmp_path, project_root, "{load_addr: 0x40200000, ready: 'farm-standin: ready', stats: "
                         "[{pattern: 'component (?P<component>\\w+): ticks (?P<ticks>\\d+)', units: {ticks: ticks}}]}")
    out = tmp_path / "run"
    proc = run_farm("run", str(pipeline), "--image", str(loader), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert sorted(r["params"] for r in _rows(out)) == ["component=checksum", "component=copy", "component=fill"]
    boot = json.loads((out / "run.json").read_text())["targets"]["maaxboard-twin"]["boots"][0]
    assert (boot["image"], boot["system"]["boot"], boot["system"]["artifact"]) == ("loader", "bootm", "loader.uimg")


def test_bootelf_hangs_on_the_twin_and_says_so(project_root, tftp_root, tmp_path):
    pipeline = _pipeline(tmp_path, project_root, f"{{path: {project_root / 'images' / 'standin.yaml'}, boot: bootelf, "
                         "ready: 'farm-standin: ready', ready_timeout: 10}")
    out = tmp_path / "run"
    proc = run_farm("run", str(pipeline), "--out", str(out))
    assert proc.returncode == 2, proc.stderr  # a job error: the same on every attempt, not retried
    assert "Debian's U-Boot 2023.01 hangs in bootelf on the QEMU twin" in proc.stderr
    assert "## Starting application at 0x40200000" in (out / "console" / "maaxboard-twin.log").read_text()


def test_a_fatal_line_of_the_pipeline_fails_the_benchmark_and_keeps_what_was_read(project_root, tftp_root, tmp_path):
    pipeline = _pipeline(tmp_path, project_root, f"{{path: {project_root / 'images' / 'standin.yaml'}, "
                         "ready: 'farm-standin: ready', fatal: ['component copy'], "
                         "stats: [{pattern: 'farm-standin: counter (?P<hz>\\d+) Hz', units: {hz: Hz}}]}")
    out = tmp_path / "run"
    proc = run_farm("run", str(pipeline), "--out", str(out))
    assert proc.returncode == 1, proc.stderr  # a test failure
    rows = _rows(out)
    assert [(r["metric"], r["value"]) for r in rows] == [("failed", "1.0")]
    case = next(c for c in ET.parse(out / "junit.xml").getroot().iter("testcase") if c.get("name").startswith("system."))
    assert "component copy" in case.find("failure").get("message")
    assert "farm-standin: component copy" in (out / "console" / "maaxboard-twin.log").read_text()


def test_a_shell_less_stand_in_serves_the_sweep_with_cpu_from_its_tcp_cpu_target(project_root, tftp_root, tmp_path):
    """pipelines/system-standin-net.yaml: the benchmark image's Linux as one FIT with no shell, booted by
    bootm; its address is the one its console names (not U-Boot's lease); the sweep starts nothing on it and
    reads CPU over ipbench's TCP protocol; iperf3 runs against the server the system started."""
    out = tmp_path / "run"
    proc = run_farm("run", "pipelines/system-standin-net.yaml", "--out", str(out), timeout=900)
    assert proc.returncode == 0, proc.stderr
    every = _rows(out)
    rows = {r["metric"]: r for r in every if r["benchmark"] == "sweep"}
    assert {r["setup"] for r in every} == {"shell-less"}
    goodput = [float(r["value"]) for r in every if r["benchmark"] == "iperf3" and r["unit"] == "bit/s"]
    assert goodput and min(goodput) > 0  # iperf3 against the server the system's /init started
    assert float(rows["received_throughput"]["value"]) > 0 and float(rows["rtt_samples"]["value"]) > 0
    assert 0 <= float(rows["cpu_utilisation"]["value"]) <= 100
    assert float(rows["total_cycles"]["value"]) > 0 and rows["counter_frequency"]["value"] == "62500000.0"
    boot = json.loads((out / "run.json").read_text())["targets"]["maaxboard-twin"]["boots"][0]
    assert boot["system"]["boot"] == "bootm" and boot["system"]["artifact"] == "farm-standin-net.itb"
    assert boot["address"] == boot["system"]["address"] and boot["address"].startswith("10.0.2.")
    log = (out / "console" / "maaxboard-twin.log").read_text(errors="replace")
    assert "bootm 0x48000000:kernel-1 0x48000000:ramdisk-1 ${fdtcontroladdr}" in log
    assert "farm-serve: ready" in log and "root@farm-target" not in log  # no shell prompt, ever
    with open(out / "sweep-maaxboard-twin-shell-less.csv", newline="") as f:
        wide = list(csv.DictReader(f))
    assert len(wide) == 1 and float(wide[0]["CPU_Utilisation"]) == pytest.approx(float(rows["cpu_utilisation"]["value"]), abs=0.01)
