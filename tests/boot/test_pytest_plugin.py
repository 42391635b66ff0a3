"""A labgrid user's test directory (examples/pytest), copied outside the repository, run by pytest with
labgrid's plugin and farm's against the MaaXBoard twin, no LG_* variable set: it reaches a shell."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

pytestmark = pytest.mark.boot


def _pytest(project_root, cwd, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LG_")}
    env["PYTHONPATH"] = str(project_root)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "farm.pytestplugin", "-p", "no:cacheprovider",
                           f"--lg-env={project_root / 'env' / 'qemu-maaxboard.yaml'}", "-o", "junit_family=xunit1",
                           *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


def test_example_directory_runs_on_the_twin(project_root, maaxboard_image, tmp_path):
    tests = tmp_path / "user-tests"
    shutil.copytree(project_root / "examples" / "pytest", tests)

    # labgrid's fixtures only: the strategy boots the env file's images: farm-image
    plain = _pytest(project_root, tests, "-q", "test_labgrid_shell.py")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "2 passed" in plain.stdout

    # farm's fixtures: the image given, the boot with retries, the records
    proc = _pytest(project_root, tests, "-q", f"--farm-image={maaxboard_image.path}", f"--farm-out={tmp_path / 'out'}",
                   f"--junitxml={tmp_path / 'junit.xml'}", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 passed" in proc.stdout
    rows = {r["metric"]: r for r in csv.DictReader((tmp_path / "out" / "results.csv").open())}
    assert rows["cpus"]["value"] == "4.0" and rows["cpus"]["target"] == "maaxboard-twin"
    assert rows["cpus"]["image"] == maaxboard_image.name
    assert float(rows["boot_seconds"]["value"]) > 0
    props = {p.get("name") for p in ET.parse(tmp_path / "junit.xml").getroot().iter("property")}
    assert {"farm.cpus", "farm.boot_seconds[attempts=1]"} <= props
    log = (tmp_path / "out" / "console" / "maaxboard-twin.log").read_text(errors="replace")
    assert "U-Boot 20" in log and "FARM-READY" in log
