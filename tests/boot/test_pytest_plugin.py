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

    # farm's fixtures: the image given, the boot with retries, the records (labgrid's fixtures alone, the
    # strategy booting the env file's images: the READMEs' command below, with no farm option)
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


def _readme_commands(path) -> str:
    """The first ``sh`` block after the pytest section's start in ``path`` (README.md) or its only one."""
    import re

    text = path.read_text()
    if "## The pytest way" in text:
        text = text[text.index("## The pytest way"):]
    return re.search(r"```sh\n(.*?)```", text, re.S).group(1)


READMES = ("examples/pytest/README.md", "README.md")


def test_the_readme_command_runs_as_written(project_root, maaxboard_image, tmp_path):
    """The READMEs' commands, verbatim (each distinct one once: both READMEs give the same), in a copy of the
    repository's layout (its pyproject.toml, with farm's ``-p no:labgrid``, the env and image files, the
    example directory; .venv the checkout's), as a user runs them from the top of a checkout: 4 passed (the
    two tests on labgrid's fixtures alone, the strategy booting the env file's image, and farm's two),
    results/junit.xml with farm's properties."""
    distinct = dict.fromkeys(_readme_commands(project_root / readme) for readme in READMES)
    for number, commands in enumerate(distinct):
        _run_readme_commands(project_root, commands, tmp_path / f"commands-{number}")


def _run_readme_commands(project_root, commands: str, tmp_path) -> None:
    assert commands.startswith("cd examples/pytest\n") and "--lg-env=" in commands
    repo = tmp_path / "checkout"
    for part in ("env", "images", "examples/pytest"):
        shutil.copytree(project_root / part, repo / part, ignore=shutil.ignore_patterns("results", "__pycache__"))
    shutil.copy2(project_root / "pyproject.toml", repo / "pyproject.toml")
    (repo / ".venv").symlink_to(project_root / ".venv")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LG_")}
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=repo, capture_output=True, text=True,
                          env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "4 passed" in proc.stdout.splitlines()[-1], proc.stdout[-2000:]
    results = repo / "examples" / "pytest" / "results"
    props = {p.get("name"): p.get("value") for p in ET.parse(results / "junit.xml").getroot().iter("property")}
    assert props["farm.cpus"] == "4 count"
    cases = {(c.get("classname"), c.get("name")) for c in ET.parse(results / "junit.xml").getroot().iter("testcase")
             if not {child.tag for child in c} & {"failure", "error", "skipped"}}  # the passed ones
    assert {("test_labgrid_shell", "test_shell_answers"), ("test_labgrid_shell", "test_kernel_is_linux")} <= cases, cases
    (run,) = results.glob("pytest-*/results.csv")
    assert {r["metric"] for r in csv.DictReader(run.open())} == {"cpus", "boot_seconds"}
