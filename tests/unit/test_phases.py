"""A run's time by phase: the split (pure), in run.json after every stage (the runner with an injected flow
whose boot and benchmark take known times), and on the dashboard's run page."""

from __future__ import annotations

import json
import time
import types
from pathlib import Path

import pytest

from farm.dashboard.runpage import phases_text
from farm.results.phases import describe, phase_of, split
from farm.results.record import Measurement
from farm.run import run_pipeline

from farm.run.events import hookimpl

from ..fakes import FakeFlow, booted_target
from .test_runner import pipeline, registry  # noqa: F401  (pipeline: the fixture)


def test_phase_of_each_stage_classname():
    assert [phase_of(c) for c in ("farm.build", "farm.place", "farm.boot", "farm.bench.network", "farm.publish",
                                  "farm.run")] == ["build", "reserve", "boot", "benchmarks", "publish", None]


def test_split_sums_the_stages_of_a_phase_and_the_rest_is_other():
    stages = [("farm.build", 1.0), ("farm.boot", 4.0), ("farm.bench.crypto", 2.0), ("farm.bench.network", 3.0),
              ("farm.boot", 5.0), ("farm.run", 0.0), ("farm.bench.crypto", None), ("farm.publish", 0.5)]
    assert split(stages, 16.0) == {"build": 1.0, "boot": 9.0, "benchmarks": 5.0, "publish": 0.5, "other": 0.5,
                                   "wall": 16.0}
    assert split(stages) == {"build": 1.0, "boot": 9.0, "benchmarks": 5.0, "publish": 0.5}
    assert split([("farm.boot", 3.0)], 2.0)["other"] == 0.0  # never below 0 (a clock's rounding)
    assert describe({"boot": 3.0, "other": 1.0, "wall": 4.0}) == "boot 3.0 s (75 %), other 1.0 s (25 %) of 4.0 s"


def timed_flow():
    """A boot of 0.2 s and a power-off of 0.3 s (the power-off is in no stage: ``other``)."""
    return FakeFlow(booted=booted_target, boot_seconds=0.2, power_off_seconds=0.3)


def test_run_json_has_the_time_by_phase(pipeline, tmp_path):  # noqa: F811
    def slow(ctx, params):
        time.sleep(0.25)
        return [Measurement("count", "value", 1.0, "count", {})]

    seen = []

    class Spy:  # a listener after the run directory: run.json as written for each stage
        @hookimpl
        def stage_ended(self, stage):
            seen.append(json.loads((tmp_path / "run" / "run.json").read_text())["phases"])

    run = run_pipeline(pipeline(("slow",), setups=("a",)), out=tmp_path / "run", flow_for=lambda s: timed_flow(),
                       registry=registry(slow=slow), listeners=[Spy()])
    phases = json.loads((run.path / "run.json").read_text())["phases"]
    assert set(phases) == {"build", "boot", "benchmarks", "publish", "other", "wall"}
    assert 0.2 <= phases["boot"] < 0.5 and 0.25 <= phases["benchmarks"] < 0.55
    assert phases["other"] >= 0.3  # the power-off
    assert phases["wall"] == pytest.approx(sum(v for k, v in phases.items() if k != "wall"), abs=0.01)
    assert [set(p) for p in seen[:3]] == [{"build", "other", "wall"}, {"build", "boot", "other", "wall"},
                                          {"build", "boot", "benchmarks", "other", "wall"}]  # each stage counted at once


def test_the_run_page_shows_the_phases():
    stages = [types.SimpleNamespace(classname=c, seconds=s) for c, s in
              (("farm.build", 1.0), ("farm.boot", 4.0), ("farm.bench.x", 4.0), ("farm.publish", 1.0))]
    line = phases_text(stages, 9.5)  # the run's duration ends before publish: 10.5 s in all
    assert "build 1.0 s (10 %)" in line and "publish 1.0 s (10 %)" in line and "other 0.5 s" in line
    assert "of 10.5 s" in line
    assert phases_text([], None) == ""
