"""farm's pytest plugin without a boot: labgrid's `main`, farm's failure classes, records, options."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from farm.errors import InfrastructureError, JobError, TestFailure
from farm.pytestplugin import failure_phase, main_target_name, property_value

from .conftest import ROOT

TESTS = '''
import pytest
from farm.errors import InfrastructureError, TestFailure


def test_main_is_the_twin(target, strategy):
    assert target.name == "maaxboard-twin"
    assert type(strategy).__name__ == "UBootNetbootStrategy"


def test_records(farm_record):
    farm_record("latency", 12.5, "us", params={"size": 64})
    farm_record("rate", 3, "count", benchmark="mybench")
    farm_record("bytes", 1025638400, "bytes")


def test_lab_fails_in_the_body(farm_record):
    raise InfrastructureError("serial console closed: the board's QEMU is gone")


@pytest.fixture
def panicking_boot(farm_results):
    raise TestFailure("Kernel panic - not syncing: VFS")


def test_image_fails_in_a_fixture(panicking_boot):
    pass


def test_impossible_value(farm_record):
    farm_record("rate", float("nan"), "count")


def test_plain_assert(farm_record):
    assert 1 == 2
'''


def run_pytest(tmp_path: Path, *args: str, env_file: Path = ROOT / "env" / "qemu-maaxboard.yaml",
               tests: str = TESTS) -> subprocess.CompletedProcess:
    """pytest as a labgrid user runs it: from a directory outside the repository, with --lg-env."""
    (tmp_path / "t").mkdir(exist_ok=True)
    (tmp_path / "t" / "test_it.py").write_text(tests)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LG_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "farm.pytestplugin", f"--lg-env={env_file}",
                           f"--farm-out={tmp_path / 'out'}", f"--junitxml={tmp_path / 'junit.xml'}",
                           "-o", "junit_family=xunit1", "-q", "-p", "no:cacheprovider", *args, "t"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)


def test_pyproject_declares_the_pytest11_entry_point():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"farm.pytestplugin": "farm.pytestplugin"}


def test_property_values_keep_every_digit():
    assert [property_value(v) for v in (1025638400.0, 3.0, 12.5, 0.1 + 0.2, 1e300)] == [
        "1025638400", "3", "12.5", "0.30000000000000004", "1e+300"]


def test_main_target_name():
    assert main_target_name(["maaxboard-twin"], None, "e.yaml") == "maaxboard-twin"
    assert main_target_name(["main", "other"], None, "e.yaml") is None  # labgrid's own main
    assert main_target_name(["a", "b"], None, "e.yaml") is None          # labgrid says there is no main
    assert main_target_name(["a", "b"], "b", "e.yaml") == "b"
    with pytest.raises(pytest.UsageError, match="--farm-target c: e.yaml has no such target"):
        main_target_name(["a", "b"], "c", "e.yaml")


def test_failure_phase_follows_farm_classes():
    assert failure_phase(InfrastructureError("x"), "call") == "setup"  # an error, though in the body
    assert failure_phase(TestFailure("x"), "setup") == "call"          # a failure, though in a fixture
    assert failure_phase(JobError("x"), "setup") == "setup"
    assert failure_phase(AssertionError(), "call") == "call"
    from labgrid.strategy.common import StrategyError

    wrapped = StrategyError("transition")
    wrapped.__cause__ = InfrastructureError("no U-Boot prompt")
    assert failure_phase(wrapped, "call") == "setup"  # labgrid wraps per nested transition


def test_plugin_maps_labgrid_main_records_and_failure_classes(tmp_path):
    proc = run_pytest(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    summary = proc.stdout.splitlines()[-1]
    assert "3 failed, 2 passed, 1 error" in summary, proc.stdout
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")}
    assert cases["test_main_is_the_twin"].find("failure") is None and cases["test_main_is_the_twin"].find("error") is None
    assert cases["test_lab_fails_in_the_body"].find("error") is not None
    assert "farm: infrastructure error: serial console closed" in cases["test_lab_fails_in_the_body"].find("error").text
    assert cases["test_image_fails_in_a_fixture"].find("failure") is not None
    assert cases["test_impossible_value"].find("failure") is not None
    assert cases["test_plain_assert"].find("failure") is not None
    props = {p.get("name"): p.get("value") for p in cases["test_records"].iter("property")}
    # every digit kept (not 1.02564e+09 bytes)
    assert props == {"farm.latency[size=64]": "12.5 us", "farm.rate": "3 count", "farm.bytes": "1025638400 bytes"}
    rows = list(csv.DictReader((tmp_path / "out" / "results.csv").open()))
    assert [(r["target"], r["arch"], r["suite"], r["benchmark"], r["params"], r["metric"], r["value"], r["unit"])
            for r in rows] == [("maaxboard-twin", "arm64", "pytest", "test_records", "size=64", "latency", "12.5", "us"),
                               ("maaxboard-twin", "arm64", "pytest", "mybench", "", "rate", "3.0", "count"),
                               ("maaxboard-twin", "arm64", "pytest", "test_records", "", "bytes", "1025638400.0",
                                "bytes")]
    assert len({r["run_id"] for r in rows}) == 1
    # the session is published like a run: the results store ingested it through its listener
    from tests.unit.test_events import stored_runs

    assert stored_runs(os.environ["FARM_DB"])[rows[0]["run_id"]] == len(rows)


def test_farm_target_option_picks_a_target_of_several(tmp_path):
    text = (ROOT / "env" / "qemu-maaxboard.yaml").read_text()
    body = text.split("targets:\n", 1)[1].split("\ntools:", 1)[0]
    two = text.replace("targets:\n", "targets:\n" + body.replace("maaxboard-twin:", "second-twin:", 1) + "\n", 1)
    env_file = tmp_path / "two.yaml"
    env_file.write_text(two.replace("../images/", str(ROOT / "images") + "/"))
    tests = "def test_main(target):\n    assert target.name == 'second-twin'\n"
    assert run_pytest(tmp_path, "--farm-target=second-twin", env_file=env_file, tests=tests).returncode == 0
    proc = run_pytest(tmp_path, "--farm-target=nope", env_file=env_file, tests=tests)
    assert proc.returncode == 4 and "--farm-target nope" in proc.stderr + proc.stdout


def test_farm_out_not_empty_is_an_error_naming_the_option(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.csv").write_text("old\n")
    proc = run_pytest(tmp_path, tests="def test_r(farm_record):\n    farm_record('x', 1, 's')\n")
    assert proc.returncode == 1 and "--farm-out" in proc.stdout, proc.stdout
    assert (tmp_path / "out" / "results.csv").read_text() == "old\n"  # nothing lost or overwritten


def test_entry_point_loads_the_plugin_and_coexists_with_dash_p(tmp_path):
    """pyproject's pytest11 entry point, as an installed farm has it (a dist-info made here from
    pyproject.toml): pytest loads the plugin by it, and `-p farm.pytestplugin` too is one plugin."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    site = tmp_path / "site"
    dist = site / "farm_entry_point_check-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: farm-entry-point-check\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(
        "[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in project["entry-points"]["pytest11"].items()))
    tests = "def test_fixture_is_there(farm_results):\n    assert farm_results.run_id\n"
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "test_it.py").write_text(tests)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LG_")}
    env["PYTHONPATH"] = f"{site}:{ROOT}"
    for extra in ([], ["-p", "farm.pytestplugin"]):
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra,
                               f"--farm-out={tmp_path / ('out' + str(len(extra)))}", "t"],
                              cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout + proc.stderr


def test_a_secret_the_command_refuses_stops_the_session(tmp_path, monkeypatch):
    """A FARM_SECRET_* too short to mask: the farm command refuses it (exit 2); so does the plugin,
    before any test ran and before it wrote a record in clear."""
    monkeypatch.setenv("FARM_SECRET_PIN", "abc")
    proc = run_pytest(tmp_path, tests="def test_r(farm_record):\n    farm_record('x', 1, 's')\n")
    assert proc.returncode == 4, proc.stdout + proc.stderr  # pytest's usage error
    assert "farm: secret $FARM_SECRET_PIN is 3 characters" in proc.stdout + proc.stderr
    assert not (tmp_path / "out" / "results.csv").exists()


def test_records_and_junit_properties_hold_no_secret(tmp_path, monkeypatch):
    token = "s3cr3t-token"
    monkeypatch.setenv("FARM_SECRET_TOKEN", token)
    tests = (f"def test_r(farm_record):\n    farm_record('lat-{token}', 2.5, 'us', params={{'key': '{token}'}})\n")
    proc = run_pytest(tmp_path, tests=tests)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    junit = (tmp_path / "junit.xml").read_text()
    assert token not in junit
    case = next(ET.parse(tmp_path / "junit.xml").getroot().iter("testcase"))
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props == {"farm.lat-*****[key=*****]": "2.5 us"}
    assert token not in (tmp_path / "out" / "results.csv").read_text()
