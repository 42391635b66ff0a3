"""A run directory is never silently reused: `--out` of farm run, import, compare and qualify, through
the real CLI on real directories and symlinks (no boots: every run here stops before a board)."""

from __future__ import annotations

import hashlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from farm.results.csvout import read_records, write_records
from farm.results.record import Record

from .conftest import ROOT, run_farm

DATA = ROOT / "tests" / "data"


def _records(run_id: str, values=(940e6, 941e6, 939e6)) -> list[Record]:
    return [Record(run_id=run_id, timestamp="2026-11-29T00:00:00.000+00:00", target="maaxboard", arch="arm64",
                   setup="default", image="maaxboard-bench", suite="network", benchmark="iperf3",
                   params="protocol=tcp", repeat=i, metric="received_throughput", value=v, unit="bit/s")
            for i, v in enumerate(values)]


def old_run(path: Path, run_id: str = "20261129-000000-0ld1") -> dict[str, bytes]:
    """A finished run directory; returns its files' bytes to check nothing of it changed."""
    (path / "console").mkdir(parents=True)
    write_records(path / "results.csv", _records(run_id))
    (path / "run.json").write_text(json.dumps({"run_id": run_id, "status": "passed"}))
    (path / "junit.xml").write_text('<testsuites><testsuite name="old" tests="1"><testcase name="old"/>'
                                    "</testsuite></testsuites>")
    (path / "console" / "maaxboard-twin.log").write_text("U-Boot 2023.01\n")
    return snapshot(path)


def snapshot(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def moved_aside(out: Path) -> Path:
    (aside,) = out.parent.glob(f"{out.name}.replaced-*")
    return aside


@pytest.fixture
def missing_recipe_pipeline(tmp_path) -> Path:
    """A valid pipeline whose build fails at once (job error): a run that starts and ends without QEMU."""
    path = tmp_path / "p.yaml"
    path.write_text(f"name: no-recipe\nimage: {tmp_path / 'nope.yaml'}\n"
                    f"targets: [{{env: {ROOT / 'env' / 'qemu-maaxboard.yaml'}}}]\nbenchmarks: [{{iperf3: {{}}}}]\n")
    return path


def test_run_into_an_existing_run_directory_is_refused_and_changes_nothing(tmp_path, missing_recipe_pipeline):
    out = tmp_path / "run"
    before = old_run(out)
    proc = run_farm("run", str(missing_recipe_pipeline), "--out", str(out))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"farm: job error: --out {out}: not empty (it holds run 20261129-000000-0ld1): use "
                                   "--force to start it anew (the old content is moved aside) or --resume to finish "
                                   "that run")
    assert snapshot(out) == before
    assert not list(tmp_path.glob("run.replaced-*"))


def test_run_force_starts_anew_and_moves_the_old_run_aside(tmp_path, missing_recipe_pipeline):
    out = tmp_path / "run"
    before = old_run(out)
    proc = run_farm("run", str(missing_recipe_pipeline), "--out", str(out), "--force")
    assert proc.returncode == 2, proc.stderr  # the build's job error: the run itself ran
    aside = moved_aside(out)
    assert f"--force: the old content of {out} moved to {aside}" in proc.stderr
    assert snapshot(aside) == before  # nothing measured lost
    info = json.loads((out / "run.json").read_text())
    assert info["run_id"] != "20261129-000000-0ld1" and info["replaced"] == str(aside)
    assert not (out / "results.csv").exists() and not (out / "console" / "maaxboard-twin.log").exists()
    cases = {tc.get("name"): tc for tc in ET.parse(out / "junit.xml").getroot().iter("testcase")}
    assert "old" not in cases and cases["build"].find("error") is not None


def test_an_empty_out_directory_is_used(tmp_path, missing_recipe_pipeline):
    out = tmp_path / "run"
    out.mkdir()  # e.g. made by the CI job
    proc = run_farm("run", str(missing_recipe_pipeline), "--out", str(out))
    assert proc.returncode == 2 and (out / "run.json").exists(), proc.stderr
    assert "not empty" not in proc.stderr and not list(tmp_path.glob("run.replaced-*"))


@pytest.mark.parametrize("verb", ["run", "import"])
def test_a_symlinked_out_is_refused_even_with_force(tmp_path, verb, missing_recipe_pipeline):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "out"
    link.symlink_to(elsewhere)
    args = (["run", str(missing_recipe_pipeline)] if verb == "run" else
            ["import", "iperf3", str(DATA / "iperf3-tcp.json"), "--setup", "s"])
    for extra in ([], ["--force"]):
        proc = run_farm(*args, "--out", str(link), *extra)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip() == (f"farm: job error: --out {link}: is a symbolic link (to {elsewhere}): give a "
                                       "directory, not a link")
        assert list(elsewhere.iterdir()) == [] and link.is_symlink()


def test_resume_and_force_together_are_refused(tmp_path):
    proc = run_farm("run", "pipelines/smoke.yaml", "--resume", str(tmp_path), "--force")
    assert proc.returncode == 2
    assert "--resume finishes RUN_DIR, --force starts a run directory anew: give one of them" in proc.stderr


def test_resume_refuses_symlinks_where_it_would_write(tmp_path, missing_recipe_pipeline):
    run = tmp_path / "run"
    old_run(run)
    sha = hashlib.sha256(missing_recipe_pipeline.read_bytes()).hexdigest()  # a run of that pipeline
    (run / "run.json").write_text(json.dumps({"run_id": "r", "pipeline_sha256": sha, "stages": []}))
    victim = tmp_path / "victim.csv"
    victim.write_text("precious\n")
    (run / "results.csv").unlink()
    (run / "results.csv").symlink_to(victim)
    proc = run_farm("run", str(missing_recipe_pipeline), "--resume", str(run))
    assert proc.returncode == 2, proc.stderr
    assert "results.csv: symbolic link(s) where farm writes its own files" in proc.stderr
    assert victim.read_text() == "precious\n"


def test_import_into_a_used_directory_is_refused_then_forced_cleanly(tmp_path):
    out = tmp_path / "imp"
    before = old_run(out)
    args = ("import", "iperf3", str(DATA / "iperf3-tcp.json"), "--setup", "lab", "--out", str(out))
    proc = run_farm(*args)
    assert proc.returncode == 2 and "not empty (it holds run 20261129-000000-0ld1): use --force" in proc.stderr
    assert snapshot(out) == before
    proc = run_farm(*args, "--force")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["results.csv", "run.json"]  # no old junit.xml or console
    assert {r.setup for r in read_records(out / "results.csv")} == {"lab"}
    assert snapshot(moved_aside(out)) == before


def test_a_bad_import_with_force_moves_nothing(tmp_path):
    out = tmp_path / "imp"
    before = old_run(out)
    proc = run_farm("import", "ipbench", str(DATA / "ipbench-bad-number.csv"), "--setup", "lab", "--out", str(out),
                    "--force")
    assert proc.returncode == 2, proc.stderr
    assert snapshot(out) == before and not list(tmp_path.glob("imp.replaced-*"))


def test_compare_regenerates_its_own_output_and_never_writes_into_a_run(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    old_run(a, "run-a")
    before_b = old_run(b, "run-b")
    for _ in range(2):  # the default LAST_DIR/compare is compare's own: made anew each time
        proc = run_farm("compare", str(a), str(b))
        assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (b / "compare").iterdir()) == ["compare.csv", "compare.md", "compare.png"]
    for extra in ([], ["--force"]):
        proc = run_farm("compare", str(a), str(b), "--out", str(a), *extra)
        assert proc.returncode == 2, proc.stderr
        assert f"--out {a}: is a run directory (it holds run run-a): compare writes" in proc.stderr
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("mine")
    proc = run_farm("compare", str(a), str(b), "--out", str(other))
    assert proc.returncode == 2 and "not empty (it holds mine.txt): use --force" in proc.stderr
    assert run_farm("compare", str(a), str(b), "--out", str(other), "--force").returncode == 0
    assert (moved_aside(other) / "mine.txt").read_text() == "mine"
    assert snapshot(b).items() >= before_b.items()


def test_qualify_never_replaces_a_runs_junit(tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    base, cand = tmp_path / "base", tmp_path / "cand"
    old_run(base, "run-base")
    before = old_run(cand, "run-cand")
    q = ("qualify", "--baseline", str(base), "--candidate", str(cand))
    for extra in ([], ["--force"]):
        proc = run_farm(*q, "--out", str(cand), *extra)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip() == (
            f"farm: job error: --out {cand}: is a run directory (it holds run run-cand): qualify writes its own "
            "junit.xml, which would replace the run's; give it a directory of its own, e.g. --out results/qualify")
    assert snapshot(cand) == before
    for _ in range(2):  # its own directory: made anew each time
        proc = run_farm(*q, "--out", str(tmp_path / "q"))
        assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "q").iterdir()) == ["junit.xml", "qualify.csv", "qualify.md"]


def test_report_does_not_draw_through_a_symlinked_plots_directory(tmp_path):
    out = tmp_path / "lab"
    proc = run_farm("import", "ipbench", str(DATA / "ipbench-sample.csv"), "--setup", "lab", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert run_farm("report", str(out), "--no-step-summary").returncode == 0
    assert list((out / "plots").glob("*.png"))  # a sweep: a plot is drawn into plots/
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for png in (out / "plots").iterdir():
        png.unlink()
    (out / "plots").rmdir()
    (out / "plots").symlink_to(elsewhere)
    proc = run_farm("report", str(out), "--no-step-summary")
    assert proc.returncode == 2, proc.stderr
    assert f"{out / 'plots'}: is a symbolic link (to {elsewhere}); farm writes only files of its own" in proc.stderr
    assert list(elsewhere.iterdir()) == []


def _run_id(out: Path) -> str:
    (run_id,) = {r.run_id for r in read_records(out / "results.csv")}
    return run_id


def _stored_paths(db: Path) -> dict[str, str]:
    """run_id -> the path the results store holds for it."""
    import sqlalchemy as sa

    from farm.store import schema
    from farm.store.db import open_store

    eng = open_store({"FARM_DB": str(db)})
    with eng.connect() as connection:
        return dict(connection.execute(sa.select(schema.runs.c.run_id, schema.runs.c.path)).all())


def test_a_stored_import_moved_aside_by_force_is_followed_by_the_store(tmp_path):
    """The first import is stored at ``out``; ``--force`` moves it aside and stores the second at ``out``:
    the store's path of the first follows it to where it now is (without it, two runs would name ``out``
    and the first's files would be lost to the dashboard's downloads)."""
    db, out = tmp_path / "store.db", tmp_path / "imp"
    env = {"FARM_DB": str(db)}
    args = ("import", "iperf3", str(DATA / "iperf3-tcp.json"), "--out", str(out))
    first = run_farm(*args, "--setup", "lab", env=env)
    assert first.returncode == 0, first.stderr
    first_id = _run_id(out)
    assert _stored_paths(db) == {first_id: str(out.resolve())}
    second = run_farm(*args, "--setup", "other", "--force", env=env)
    assert second.returncode == 0, second.stderr
    second_id = _run_id(out)
    assert second_id != first_id
    aside = moved_aside(out)
    assert _run_id(aside) == first_id
    assert _stored_paths(db) == {first_id: str(aside.resolve()), second_id: str(out.resolve())}


def test_a_stored_run_moved_aside_by_farm_run_force_is_followed_by_the_store(tmp_path, missing_recipe_pipeline):
    """The same through ``farm run --force`` (the run that replaces it stops at its build: no board)."""
    db, out = tmp_path / "store.db", tmp_path / "run"
    env = {"FARM_DB": str(db)}
    imported = run_farm("import", "iperf3", str(DATA / "iperf3-tcp.json"), "--setup", "lab", "--out", str(out),
                        env=env)
    assert imported.returncode == 0, imported.stderr
    old_id = _run_id(out)
    proc = run_farm("run", str(missing_recipe_pipeline), "--out", str(out), "--force", env=env)
    assert proc.returncode == 2, proc.stderr
    aside = moved_aside(out)
    assert f"--force: the old content of {out} moved to {aside}" in proc.stderr
    assert _stored_paths(db)[old_id] == str(aside.resolve())
