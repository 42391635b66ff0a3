"""A place's health record (the farm_health and farm_infra_failures tags): the pure parts."""

from __future__ import annotations

import pytest

from farm.places import (FAILURES_TAG, HEALTH_TAG, PlaceStatus, describe_holders, health_filter, health_update,
                         own_tags)


def test_three_infrastructure_failures_in_a_row_make_a_place_unhealthy():
    tags: dict[str, str] = {"board": "maaxboard", HEALTH_TAG: "ok"}
    states = []
    for _ in range(4):
        update, state = health_update(tags, True, threshold=3)
        tags = {k: v for k, v in {**tags, **update}.items() if v}
        states.append(state)
    assert states == [None, None, "unhealthy", None]  # the new state only when it changes
    assert tags == {"board": "maaxboard", HEALTH_TAG: "unhealthy", FAILURES_TAG: "4"}


def test_a_passing_boot_resets_the_count_and_makes_it_healthy():
    assert health_update({HEALTH_TAG: "ok", FAILURES_TAG: "2"}, False, 3) == ({FAILURES_TAG: ""}, None)
    assert health_update({HEALTH_TAG: "unhealthy", FAILURES_TAG: "5"}, False, 3) == \
        ({FAILURES_TAG: "", HEALTH_TAG: "ok"}, "ok")
    assert health_update({HEALTH_TAG: "ok"}, False, 3) == ({}, None)  # nothing to write
    # a place without the tag counts as healthy: it gets the tag, and that is no change of state
    assert health_update({"board": "x"}, False, 3) == ({HEALTH_TAG: "ok"}, None)
    # fewer failures than the threshold, then a pass: counting starts again
    assert health_update({HEALTH_TAG: "ok", FAILURES_TAG: "1"}, True, 3) == ({FAILURES_TAG: "2"}, None)


def test_every_failed_power_on_of_a_boot_counts():
    """Two jobs whose boots each spent 2 attempts: the place is out after the second job, not the third
    (labgrid gives a retried job the same free place again: counted per job, one job's retries all
    went to a board that never boots)."""
    update, state = health_update({HEALTH_TAG: "ok"}, True, 3, power_ons=2)
    assert (update, state) == ({FAILURES_TAG: "2"}, None)
    assert health_update({HEALTH_TAG: "ok", **update}, True, 3, power_ons=2) == \
        ({FAILURES_TAG: "4", HEALTH_TAG: "unhealthy"}, "unhealthy")
    with pytest.raises(ValueError):
        health_update({}, True, 3, power_ons=0)


def test_threshold_and_garbled_counts():
    assert health_update({}, True, 1) == ({FAILURES_TAG: "1", HEALTH_TAG: "unhealthy"}, "unhealthy")
    assert health_update({FAILURES_TAG: "x"}, True, 3) == ({FAILURES_TAG: "1"}, None)
    with pytest.raises(ValueError):
        health_update({}, True, 0)


def test_the_reservation_filter_asks_for_healthy_places():
    assert health_filter({"board": "maaxboard"}) == {"board": "maaxboard", HEALTH_TAG: "ok"}
    # a caller naming the health itself (e.g. farm reserve farm_health=unhealthy) gets what it asked
    assert health_filter({"board": "maaxboard", HEALTH_TAG: "unhealthy"}) == {"board": "maaxboard", HEALTH_TAG: "unhealthy"}


def _status(health_tag=None, failures=0, health="ok"):
    return PlaceStatus(name="maaxboard-1", tags={"board": "maaxboard"}, comment="", holder=None, since=None,
                       reservation=None, leases=(), health=health, health_tag=health_tag, infra_failures=failures)


def test_place_status_matches_the_health_filter_and_says_its_state():
    healthy, unset, sick = _status("ok", 1), _status(None), _status("unhealthy", 3)
    assert healthy.matches(health_filter({"board": "maaxboard"})) and healthy.healthy
    assert not unset.matches(health_filter({"board": "maaxboard"})) and unset.healthy  # not tagged yet
    assert not sick.matches(health_filter({"board": "maaxboard"})) and not sick.healthy
    assert all(s.matches({"board": "maaxboard"}) for s in (healthy, unset, sick))
    assert (unset.health_text(), healthy.health_text()) == ("ok", "1 infrastructure failure in a row")
    assert sick.health_text() == "unhealthy (3 infrastructure failures in a row)"
    assert _status("unhealthy", health="serial unavailable").health_text() == "serial unavailable; unhealthy"
    assert "maaxboard-1 unhealthy (3 infrastructure failures in a row): farm health check maaxboard-1" \
        in describe_holders([sick])
    assert sick.as_dict()["farm_health"] == "unhealthy" and sick.as_dict()["infra_failures"] == 3


def test_own_tags_leave_out_farms_records():
    tags = {"board": "maaxboard", HEALTH_TAG: "ok", FAILURES_TAG: "2", "farm_lease_1a2b": "owner=a/b"}
    assert own_tags(tags) == {"board": "maaxboard"}


def test_the_health_commands_explain_themselves_and_refuse_bad_input():
    from ..conftest import run_farm

    for args in (["health", "--help"], ["health", "check", "--help"], ["health", "set", "--help"]):
        proc = run_farm(*args)
        assert proc.returncode == 0 and "usage: farm health" in proc.stdout, proc.stderr
    proc = run_farm("health", "set", "maaxboard-1", "broken")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    proc = run_farm("run", "pipelines/health.yaml", "--health-check")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "farm: job error: --health-check checks a place of the farm: give it with --farm name=PLACE"


def test_the_health_pipeline_is_a_boot_without_benchmarks():
    from pathlib import Path

    from farm.run import load_pipeline

    pipeline = load_pipeline(Path(__file__).resolve().parents[2] / "pipelines" / "health.yaml")
    assert pipeline.benchmarks == () and pipeline.boot_attempts == 1
    assert {p.name for p in pipeline.images.values()} == {"maaxboard-bench.yaml", "x86-bench.yaml"}
