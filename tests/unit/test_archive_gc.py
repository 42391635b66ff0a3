"""farm archive gc: the --keep rule (pure), and a real archive where baselines and stored
qualifications keep their runs, shared objects stay with the runs that still name them."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from farm.archive import open_archive
from farm.archive.record import RunRecord
from farm.archive.retention import Keep, collect, protected, runs_to_keep
from farm.errors import JobError
from farm.run import run_pipeline

from .archive_helpers import fake_image, pipeline_tree, use_image, values
from ..fakes import FakeFlow

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)


def rec(run_id: str, days_ago: float) -> RunRecord:
    return RunRecord(run_id, "", "", "p", "passed", (NOW - timedelta(days=days_ago)).isoformat(), {}, None, (), {})


def test_keep_parses_a_count_or_an_age_and_refuses_anything_else():
    assert Keep.parse("20") == Keep(count=20)
    assert Keep.parse("90d") == Keep(age=timedelta(days=90))
    assert Keep.parse("12w").age == timedelta(weeks=12) and Keep.parse("36h").age == timedelta(hours=36)
    for bad in ("", "-1", "3m", "d", "1.5d", "10 d"):
        with pytest.raises(JobError, match="--keep"):
            Keep.parse(bad)


def test_a_run_stays_when_any_rule_keeps_it_or_something_protects_it():
    records = [rec("new", 1), rec("mid", 10), rec("old", 100), rec("ancient", 400)]
    assert runs_to_keep(records, [Keep(count=2)], (), NOW) == {"new", "mid"}
    assert runs_to_keep(records, [Keep(age=timedelta(days=30))], (), NOW) == {"new", "mid"}
    assert runs_to_keep(records, [Keep(count=1), Keep(age=timedelta(days=200))], (), NOW) == {"new", "mid", "old"}
    assert runs_to_keep(records, [Keep(count=0)], {"ancient", "not-archived"}, NOW) == {"ancient"}


@pytest.fixture
def lab(tmp_path, monkeypatch):
    monkeypatch.setenv("FARM_ARCHIVE", str(tmp_path / "archive"))
    monkeypatch.setenv("FARM_DB", str(tmp_path / "results.db"))
    monkeypatch.setenv("FARM_BASELINES", str(tmp_path / "baselines"))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def three_runs(lab, monkeypatch):
    """Runs 0 and 1 boot one image, run 2 another; oldest first."""
    shared, other = fake_image(lab / "img-a", seed=b"shared"), fake_image(lab / "img-b", seed=b"other")
    runs = []
    for i, image in enumerate((shared, shared, other)):
        use_image(monkeypatch, image)
        runs.append(run_pipeline(pipeline_tree(lab / "repo"), out=lab / f"run{i}", flow_for=lambda s: FakeFlow(),
                                 registry=values(1.0)))
    return runs


def test_gc_removes_what_no_kept_run_names_and_never_a_baseline_s_or_a_qualification_s(lab, monkeypatch):
    runs = three_runs(lab, monkeypatch)
    archive = open_archive()
    from farm.results.baselines import save_baseline
    from farm.store.db import open_store
    from farm.store.ingest import record_qualification

    save_baseline(runs[0].path, "release-1")
    record_qualification(open_store(), path=lab / "q", baseline=f"release-1 ({lab}): run {runs[0].run_id}, passed",
                         candidate_run_id=runs[1].run_id, passed=True, headline="passed")
    keep = protected()
    assert keep == {runs[0].run_id: "baseline release-1", runs[1].run_id: "a stored qualification's candidate"}
    before = archive.object_shas()
    dry = collect(archive, [Keep(count=0)], {}, NOW, dry_run=True)  # nothing protected: all would go
    assert set(dry.runs) == {r.run_id for r in runs} and dry.objects == len(before)
    assert archive.object_shas() == before and len(archive.run_ids()) == 3  # a dry run removes nothing
    done = collect(archive, [Keep(count=0)], keep, NOW)
    assert done.runs == (runs[2].run_id,)
    assert archive.run_ids() == sorted(r.run_id for r in runs[:2])
    kept = {sha for r in runs[:2] for sha in archive.record(r.run_id).objects()}
    assert archive.object_shas() == kept and kept < before  # run 2's own image went, the shared one stayed
    for run in runs[:2]:
        record = archive.record(run.run_id)
        for entry in record.objects().values():
            archive.check(entry, "kept")


def test_gc_with_an_unreadable_record_removes_no_object(lab, monkeypatch):
    runs = three_runs(lab, monkeypatch)
    archive = open_archive()
    (lab / "archive" / "runs" / "20200101-000000-dead.json").write_text("{not json")
    before = archive.object_shas()
    done = collect(archive, [Keep(count=1)], {}, NOW)
    assert done.unreadable and done.objects == 0 and archive.object_shas() == before
    assert set(done.runs) == {r.run_id for r in runs[:2]}


def test_the_stored_qualification_names_its_baseline_s_run_too(lab, monkeypatch):
    from farm.store.db import open_store
    from farm.store.ingest import record_qualification

    record_qualification(open_store(), path=lab / "q", baseline="nightly (/x): run 20261129-224818-e762, passed",
                         candidate_run_id="20261130-010101-beef", passed=False, headline="FAILED")
    assert protected() == {"20261130-010101-beef": "a stored qualification's candidate",
                           "20261129-224818-e762": "a stored qualification's baseline"}
