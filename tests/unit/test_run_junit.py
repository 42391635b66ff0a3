"""junit.xml is never green when the run failed: every failed run has a testcase of its exit class
(a test failure a `failure`, a job or infrastructure error an `error`). The real runner and CLI, with
the build and the board injected (no QEMU): what fails is the boot or a benchmark, as on a board."""

from __future__ import annotations

import contextlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import attrs
import pytest

import farm.bench.registry
import farm.boot.flow
import farm.boot.session
import farm.run.runner
from farm.boot.facts import TargetFacts
from farm.cli import main
from farm.errors import (EXIT_INFRA_ERROR, EXIT_JOB_ERROR, EXIT_TEST_FAILURE, InfrastructureError, JobError,
                         TestFailure)
from farm.images.build import Image
from tests.fakes import booted_target

ROOT = Path(__file__).resolve().parent.parent.parent
FACTS = TargetFacts(cpus=4, online="0-3", frequency_hz=None, frequency_source="unknown", governor="",
                    kernel="6.1.0-57-arm64", machine="aarch64", address="10.0.2.15")


@pytest.fixture
def pipeline(tmp_path, monkeypatch) -> Path:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setattr(farm.run.runner, "build", lambda request, carried=None: Image(tmp_path, {
        "name": "fake", "arch": "arm64", "key": "k", "kernel": "Image", "initrd": "initrd.cpio.gz"}, cached=True))
    path = tmp_path / "p.yaml"
    path.write_text(f"name: junit\nimage: {tmp_path / 'fake.yaml'}\n"
                    f"targets: [{{env: {ROOT / 'env' / 'qemu-maaxboard.yaml'}}}]\nbenchmarks: [{{iperf3: {{}}}}]\n")
    return path


def boot_raising(exc: Exception):
    @contextlib.contextmanager
    def boot_target(*args, **kwargs):
        raise exc
        yield  # pragma: no cover

    return boot_target


def booting(*args, **kwargs):
    @contextlib.contextmanager
    def boot_target(*a, **k):
        yield booted_target()

    return boot_target


def with_iperf3(monkeypatch, **changes) -> None:
    """The registered benchmarks, iperf3's registration changed (what `farm run` reads)."""
    registered = farm.bench.registry.benchmarks()
    changed = {**registered, "iperf3": attrs.evolve(registered["iperf3"], **changes)}
    monkeypatch.setattr(farm.bench.registry, "benchmarks", lambda: changed)


def junit(run_dir: Path) -> tuple[ET.Element, dict[str, ET.Element]]:
    suite = ET.parse(run_dir / "junit.xml").getroot().find("testsuite")
    return suite, {tc.get("name"): tc for tc in suite.iter("testcase")}


@pytest.mark.parametrize("exc, code, kind", [
    (JobError("env/qemu-maaxboard.yaml: bootarg 'x; reset' contains characters not allowed on a U-Boot command "
              "line"), EXIT_JOB_ERROR, "error"),
    (InfrastructureError("maaxboard-twin: no U-Boot prompt in 30 s"), EXIT_INFRA_ERROR, "error"),
    (TestFailure("maaxboard-twin: Kernel panic - not syncing"), EXIT_TEST_FAILURE, "failure"),
])
def test_a_boot_that_fails_is_a_testcase_of_its_exit_class(pipeline, tmp_path, monkeypatch, exc, code, kind):
    monkeypatch.setattr(farm.boot.flow, "boot_target", boot_raising(exc))
    out = tmp_path / "run"
    assert main(["run", str(pipeline), "--out", str(out)]) == code
    suite, cases = junit(out)
    assert int(suite.get("errors" if kind == "error" else "failures")) >= 1
    boot = cases["boot maaxboard-twin/default"].find(kind)
    assert boot is not None and boot.get("message") == str(exc)
    info = json.loads((out / "run.json").read_text())
    assert info["stopped_at"] == "boot maaxboard-twin/default"


def test_a_job_error_in_a_benchmark_is_its_error_testcase(pipeline, tmp_path, monkeypatch):
    monkeypatch.setattr(farm.boot.flow, "boot_target", booting())
    monkeypatch.setattr(farm.boot.session, "read_facts", lambda shell: FACTS)
    def bad_input(ctx, params):
        raise JobError("iperf3: the host has no iperf3")

    with_iperf3(monkeypatch, run=bad_input)
    out = tmp_path / "run"
    assert main(["run", str(pipeline), "--out", str(out)]) == EXIT_JOB_ERROR
    suite, cases = junit(out)
    assert int(suite.get("errors")) == 1 and cases["boot maaxboard-twin/default"].find("error") is None
    assert cases["network.iperf3 maaxboard-twin/default"].find("error").get("message") == "iperf3: the host has no iperf3"


def test_a_defect_of_farm_still_leaves_a_red_junit(pipeline, tmp_path, monkeypatch):
    def broken(request, carried=None):
        raise RuntimeError("a bug")

    monkeypatch.setattr(farm.run.runner, "build", broken)
    out = tmp_path / "run"
    with pytest.raises(RuntimeError, match="a bug"):
        main(["run", str(pipeline), "--out", str(out)])
    suite, cases = junit(out)
    assert cases["build"].find("error").get("message") == "RuntimeError: a bug"
    assert json.loads((out / "run.json").read_text())["status"] == "infrastructure-error"


def test_a_passing_run_stays_green(pipeline, tmp_path, monkeypatch):
    from farm.measure import Measurement

    monkeypatch.setattr(farm.boot.flow, "boot_target", booting())
    monkeypatch.setattr(farm.boot.session, "read_facts", lambda shell: FACTS)
    with_iperf3(monkeypatch, run=lambda ctx, params: [Measurement("iperf3", "received_throughput", 9e8, "bit/s")])
    out = tmp_path / "run"
    assert main(["run", str(pipeline), "--out", str(out)]) == 0
    suite, cases = junit(out)
    assert (suite.get("errors"), suite.get("failures")) == ("0", "0")
    assert sorted(cases) == ["boot maaxboard-twin/default", "build", "network.iperf3 maaxboard-twin/default", "publish"]
