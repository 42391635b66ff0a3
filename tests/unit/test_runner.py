"""The runner without QEMU: an injected boot flow and benchmark registry, the real run directory,
listeners, resume, place guard and health record. What is checked is what a user reads afterwards:
run.json, junit.xml, results.csv and the exit status, and which boots the flow was asked for."""

from __future__ import annotations

import contextlib
import json
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import farm.places
import farm.run.runner
from farm.bench import BenchmarkError
from farm.bench.registry import BenchmarkSpec
from farm.errors import EXIT_INFRA_ERROR, EXIT_OK, EXIT_TEST_FAILURE, InfrastructureError, TestFailure
from farm.images.build import Image
from farm.results.csvout import read_records
from farm.results.record import Measurement
from farm.run import FarmRequest, run_pipeline

from ..fakes import FakeFlow

ROOT = Path(__file__).resolve().parent.parent.parent
ENV = ROOT / "env" / "qemu-maaxboard.yaml"
def registry(**runs):
    return {name: BenchmarkSpec(name, "test", run) for name, run in runs.items()}


def constant(ctx, params):
    return [Measurement("count", "value", 1.0, "count", {})]


@pytest.fixture
def pipeline(tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setattr(farm.run.runner, "build", lambda request, carried=None: Image(tmp_path, {
        "name": "fake", "arch": "arm64", "key": "k", "kernel": "Image", "initrd": "initrd.cpio.gz"}, cached=True))

    def write(benchmarks=("count",), setups=("a", "b")):
        path = tmp_path / "p.yaml"
        path.write_text(f"name: runner\nimage: {tmp_path / 'fake.yaml'}\ntargets: [{{env: {ENV}}}]\n"
                        f"setups: [{', '.join(f'{{name: {s}}}' for s in setups)}]\n"
                        f"benchmarks: [{', '.join(f'{{{b}: {{}}}}' for b in benchmarks)}]\n")
        return path
    return write


def cases(run_dir: Path) -> dict[str, str]:
    """testcase name -> its kind (pass, failure, error), from junit.xml."""
    result = {}
    for tc in ET.parse(run_dir / "junit.xml").getroot().iter("testcase"):
        kinds = [child.tag for child in tc if child.tag in ("failure", "error")]
        result[tc.get("name")] = kinds[0] if kinds else "pass"
    return result


def test_a_failed_boot_does_not_stop_the_next_setup_and_the_worst_class_wins(pipeline, tmp_path):
    flow = FakeFlow({"a": InfrastructureError("maaxboard-twin: no U-Boot prompt"),
                     "b": None})
    failing = registry(count=constant, broken=lambda ctx, p: (_ for _ in ()).throw(BenchmarkError("tool", "died")))
    run = run_pipeline(pipeline(("count", "broken")), out=tmp_path / "run", flow_for=lambda s: flow,
                       registry=failing)
    assert flow.boots == ["a", "b"] and flow.powered_off == ["a", "b"]
    assert run.status == EXIT_INFRA_ERROR  # the lab's error outranks the benchmark's failure
    got = cases(run.path)
    assert got["boot maaxboard-twin/a"] == "error" and got["boot maaxboard-twin/b"] == "pass"
    assert got["test.count maaxboard-twin/b"] == "pass" and got["test.broken maaxboard-twin/b"] == "failure"
    rows = read_records(run.results_csv)
    assert [(r.setup, r.benchmark, r.metric) for r in rows] == [("b", "count", "value"), ("b", "broken", "failed")]
    info = json.loads((run.path / "run.json").read_text())
    assert info["status"] == "infrastructure-error"
    boots = info["targets"]["maaxboard-twin"]["boots"]
    assert boots[0]["failed"].endswith("no U-Boot prompt") and boots[1]["topology"] == {"flow": "fake"}
    assert [s.get("label") for s in info["stages"] if s["classname"] == "farm.boot"] == \
        ["maaxboard-twin/a", "maaxboard-twin/b"]


def test_a_kernel_panic_is_a_test_failure(pipeline, tmp_path):
    flow = FakeFlow({"a": TestFailure("maaxboard-twin: Kernel panic - not syncing")})
    run = run_pipeline(pipeline(setups=("a",)), out=tmp_path / "run", flow_for=lambda s: flow,
                       registry=registry(count=constant))
    assert run.status == EXIT_TEST_FAILURE and cases(run.path)["boot maaxboard-twin/a"] == "failure"


def test_resume_boots_only_what_did_not_pass(pipeline, tmp_path):
    calls = {"n": 0}

    def flaky(ctx, params):  # fails the first time only
        calls["n"] += 1
        if calls["n"] == 2:  # setup b, first run
            raise BenchmarkError("tool", "lost the link")
        return constant(ctx, params)

    reg = registry(flaky=flaky)
    path = pipeline(("flaky",))
    first = FakeFlow()
    run = run_pipeline(path, out=tmp_path / "run", flow_for=lambda s: first, registry=reg)
    assert run.status == EXIT_TEST_FAILURE and first.boots == ["a", "b"]
    again = FakeFlow()
    resumed = run_pipeline(path, resume=tmp_path / "run", flow_for=lambda s: again, registry=reg)
    assert again.boots == ["b"]  # a passed: not booted again
    assert resumed.status == EXIT_OK
    rows = read_records(resumed.results_csv)
    assert sorted((r.setup, r.metric) for r in rows) == [("a", "value"), ("b", "value")]  # the failed row dropped
    got = cases(resumed.path)
    assert got["boot maaxboard-twin/a"] == "pass" and got["test.flaky maaxboard-twin/b"] == "pass"
    info = json.loads((resumed.path / "run.json").read_text())
    assert len(info["resumed"]) == 1 and info["status"] == "passed"


def test_interrupt_mid_benchmark_powers_off_and_keeps_what_was_measured(pipeline, tmp_path):
    def interrupted(ctx, params):
        raise KeyboardInterrupt

    flow = FakeFlow()
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(pipeline(("count", "stop")), out=tmp_path / "run", flow_for=lambda s: flow,
                     registry=registry(count=constant, stop=interrupted))
    assert flow.powered_off == ["a"]
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["status"] == "interrupted" and info["stopped_at"] == "test.stop maaxboard-twin/a"
    assert [r.metric for r in read_records(tmp_path / "run" / "results.csv")] == ["value"]
    assert cases(tmp_path / "run")["interrupted"] == "error"


@pytest.fixture
def place(monkeypatch):
    """A place of the farm without a coordinator: its lock checks and health records, recorded."""
    state = {"held": True, "health": []}
    lease = types.SimpleNamespace(place="twin-1", coordinator="127.0.0.1:1", owner="t", tags={"board": "maaxboard"})

    @contextlib.contextmanager
    def acquired_place(tags, **kwargs):
        yield lease

    def check_still_held(lease):
        if not state["held"]:
            raise InfrastructureError("place twin-1: the lock is no longer ours (the coordinator restarted?)")

    def record_boot_result(lease, infrastructure_failure, *, power_ons=1):
        state["health"].append((infrastructure_failure, power_ons))
        return None

    monkeypatch.setattr(farm.places, "acquired_place", acquired_place)
    monkeypatch.setattr(farm.places, "check_still_held", check_still_held)
    monkeypatch.setattr(farm.places, "record_boot_result", record_boot_result)
    return state


def test_health_counts_the_boots_the_lab_failed(pipeline, tmp_path, place):
    tftp = InfrastructureError("maaxboard-twin: no boot in 2 attempts; last: TFTP timeout")
    tftp.failed_attempts = ["attempt 1: TFTP timeout", "attempt 2: TFTP timeout"]
    flow = FakeFlow({"a": tftp, "b": TestFailure("maaxboard-twin: Kernel panic")})
    run = run_pipeline(pipeline(setups=("a", "b", "c")), out=tmp_path / "run", env_override=[ENV],
                       farm=FarmRequest({"board": "maaxboard"}), flow_for=lambda s: flow,
                       registry=registry(count=constant))
    # a: the lab's failure counts against the place, each of its 2 power-ons; b: the image's does not;
    # c: a good boot
    assert place["health"] == [(True, 2), (False, 1)]
    assert flow.boots == ["a", "b", "c"]
    assert json.loads((run.path / "run.json").read_text())["place"]["name"] == "twin-1"


def test_a_lost_lock_stops_touching_the_board(pipeline, tmp_path, place):
    def lose_the_lock(ctx, params):
        place["held"] = False
        return constant(ctx, params)

    flow = FakeFlow()
    run = run_pipeline(pipeline(("lose", "count")), out=tmp_path / "run", env_override=[ENV],
                       farm=FarmRequest({"board": "maaxboard"}), flow_for=lambda s: flow,
                       registry=registry(lose=lose_the_lock, count=constant))
    assert flow.boots == ["a"]  # b is never booted: the guard refuses before the flow is asked
    assert run.status == EXIT_INFRA_ERROR
    got = cases(run.path)
    assert got["test.count maaxboard-twin/a"] == "error" and got["boot maaxboard-twin/b"] == "error"
    assert place["health"] == [(False, 1)]  # neither the lost lock nor b count against the place


def test_an_interrupt_whose_unwinding_raised_another_error_is_still_an_interrupt(pipeline, tmp_path):
    """SIGTERM inside labgrid's step bookkeeping: the step's stop asserts while the interrupt unwinds,
    and the boot's error wraps that AssertionError. The run is interrupted (exit 143), not an error."""
    from farm.errors import Terminated

    def raised_while_unwinding() -> InfrastructureError:
        try:
            try:
                raise Terminated(15)
            finally:
                raise AssertionError  # labgrid/step.py: assert self._stack[-1] is step
        except AssertionError as exc:
            error = InfrastructureError("maaxboard-twin: boot failed: AssertionError")
            error.__cause__ = exc
            return error

    flow = FakeFlow({"a": raised_while_unwinding()})
    with pytest.raises(Terminated):
        run_pipeline(pipeline(setups=("a", "b")), out=tmp_path / "run", flow_for=lambda s: flow,
                     registry=registry(count=constant))
    assert flow.boots == ["a"]  # b is not booted after the interrupt
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["status"] == "interrupted" and info["stopped_at"] == "boot maaxboard-twin/a"
