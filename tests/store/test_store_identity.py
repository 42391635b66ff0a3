"""Run identity in the results store (issue 31), on SQLite and PostgreSQL: one run is one run,
two runs are never one, and a stored run is never silently replaced by another.

- live run ids are unique lab-wide (not 4 random hex digits per second);
- an import's id is made of the file *and* how it was imported (target, setup, options, frequency);
- a baseline's copy of a stored run keeps the stored run (console, junit, path); an edited copy is refused;
- another run under a stored run's id (an old-style id met again) is refused, the stored run kept;
- ``--force`` moves an old run aside: the store's path follows it;
- ``farm qualify`` of a candidate edited on disk stores its verdict with the numbers it judged.
"""

from __future__ import annotations

import json
import re
import shutil
import time

import pytest
import sqlalchemy as sa

from farm.errors import JobError
from farm.run.rundir import new_run_id
from farm.store import schema
from farm.store.db import open_store
from tests.conftest import ROOT, run_farm
from tests.store.rundirs import make_run

DATA = ROOT / "tests" / "data"
STARTED = "2026-12-01T10:00:00.000+00:00"


def _runs(eng: sa.Engine) -> list:
    with eng.connect() as c:
        return c.execute(sa.select(schema.runs).order_by(schema.runs.c.run_id)).all()


def _values(eng: sa.Engine, run_id: str) -> list[float]:
    r, rec = schema.runs, schema.records
    with eng.connect() as c:
        return sorted(c.execute(sa.select(rec.c.value).join(r, r.c.id == rec.c.run)
                                .where(r.c.run_id == run_id)).scalars())


def test_run_ids_started_in_one_second_never_meet():
    """20 jobs of a lab start in one second, again and again: their ids must all differ. The old
    4 hex digits met within a few hundred such seconds; 20,000 ids made at once all differ."""
    t0 = time.monotonic()
    ids = [new_run_id() for _ in range(20000)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{12}", i) for i in ids)
    assert time.monotonic() - t0 < 30


def test_a_run_id_never_holds_a_secret(monkeypatch):
    """A hex-looking secret could appear in a random id, which names the run's directory: an id its
    masking would change is never given out."""
    from farm import secrets

    made = iter(["deadbeefcafe", "0123456789ab"])
    monkeypatch.setattr("farm.runid.secrets.token_hex", lambda n: next(made))
    monkeypatch.setattr(secrets, "_forms", [*secrets._forms, "deadbeef"])
    assert new_run_id().endswith("-0123456789ab")


def _import(out, env, *args, source=DATA / "ipbench-sample.csv"):
    return run_farm("import", "ipbench", str(source), "--out", str(out), *args, env=env)


def test_one_file_imported_for_two_targets_is_two_runs(store_env, tmp_path):
    for target in ("maaxboard-1", "maaxboard-2"):
        proc = _import(tmp_path / target, store_env, "--setup", "lab-2024", "--target", target)
        assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
    proc = _import(tmp_path / "other-setup", store_env, "--setup", "lab-2025", "--target", "maaxboard-1")
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
    runs = _runs(open_store(store_env))
    assert len(runs) == 3 and len({r.run_id for r in runs}) == 3
    assert sorted((r.targets, r.setups) for r in runs) == [
        ("maaxboard-1", "lab-2024"), ("maaxboard-1", "lab-2025"), ("maaxboard-2", "lab-2024")]
    for r in runs:  # each run holds its own 143 records (13 loads x 11), none replaced by another's
        with open_store(store_env).connect() as c:
            assert c.execute(sa.select(sa.func.count()).where(schema.records.c.run == r.id)).scalar_one() == 143


def test_the_same_file_imported_the_same_way_is_one_run(store_env, tmp_path):
    for out in ("a", "b"):
        assert _import(tmp_path / out, store_env, "--setup", "s", "--target", "t").returncode == 0
    (run,) = _runs(open_store(store_env))
    assert run.path == str((tmp_path / "b").resolve())  # the same import, now there


def test_an_import_at_another_frequency_is_another_run(store_env, tmp_path):
    source = DATA / "isal-perf-host.txt"
    for out, hz in (("slow", "1GHz"), ("fast", "2GHz")):
        proc = run_farm("import", "isal", str(source), "--setup", "host", "--frequency", hz, "--out",
                        str(tmp_path / out), env=store_env)
        assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
    assert len({r.run_id for r in _runs(open_store(store_env))}) == 2


def test_a_baseline_copy_keeps_the_stored_run(store_env, tmp_path, monkeypatch):
    monkeypatch.setenv("FARM_BASELINES", str(tmp_path / "baselines"))
    run = make_run(tmp_path / "run", "20261201-100000-aaaa", started=STARTED)
    assert run_farm("db", "ingest", str(run), env=store_env).returncode == 0
    saved = run_farm("baseline", "save", str(run), "--name", "v1", env=store_env)
    assert saved.returncode == 0, saved.stderr
    copy = tmp_path / "baselines" / "v1"
    proc = run_farm("db", "ingest", str(copy), env=store_env)
    assert proc.returncode == 0, proc.stderr
    assert "kept: a baseline's copy of the stored run" in proc.stderr
    eng = open_store(store_env)
    (stored,) = _runs(eng)
    assert stored.path == str(run.resolve()) and stored.junit == "pass"  # the run, not its copy
    with eng.connect() as c:
        assert c.execute(sa.select(sa.func.count()).select_from(schema.consoles)).scalar_one() == 1
        assert c.execute(sa.select(sa.func.count()).select_from(schema.stages)).scalar_one() == 3

    # a copy whose records were edited after it was saved is refused; the stored run stays
    text = (copy / "results.csv").read_text()
    (copy / "results.csv").write_text(text.replace("100000000.0", "999.0"))
    proc = run_farm("db", "ingest", str(copy), env=store_env)
    assert proc.returncode == 2 and "records differ from the stored run's" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert _values(eng, "20261201-100000-aaaa") == [1.0e8, 1.1e8, 1.2e8]


def test_a_baseline_copy_first_then_its_run_replaces_it(store_env, tmp_path):
    run = make_run(tmp_path / "run", "20261201-100000-aaaa", started=STARTED)
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("results.csv", "run.json"):
        shutil.copy(run / name, copy / name)
    (copy / "baseline.json").write_text(json.dumps({"name": "v1", "run_id": "20261201-100000-aaaa"}))
    from farm.store.ingest import ingest

    eng = open_store({"FARM_DB": store_env["FARM_DB"]})
    assert [d.outcome for d in ingest(eng, [copy])] == ["stored"]
    assert [d.outcome for d in ingest(eng, [run])] == ["replaced"]  # the run itself: richer, replaces the copy
    (stored,) = _runs(eng)
    assert stored.path == str(run.resolve()) and stored.junit == "pass"


def test_another_run_under_a_stored_id_is_refused(store_env, tmp_path):
    """Two runs of the old id form (4 hex digits) that met: the second must not replace the first."""
    first = make_run(tmp_path / "first", "20261201-100000-abcd", started=STARTED, values={"throughput": [1.0]})
    second = make_run(tmp_path / "second", "20261201-100000-abcd", started="2026-12-01T10:00:00.400+00:00",
                      values={"throughput": [2.0]}, who="someone-else")
    assert run_farm("db", "ingest", str(first), env=store_env).returncode == 0
    proc = run_farm("db", "ingest", str(second), env=store_env)
    assert proc.returncode == 2, proc.stderr
    assert "run id 20261201-100000-abcd is stored already for another run" in proc.stderr
    assert str(first.resolve()) in proc.stderr and "Traceback" not in proc.stderr
    (stored,) = _runs(open_store(store_env))
    assert stored.path == str(first.resolve()) and _values(open_store(store_env), stored.run_id) == [1.0]
    # all of one `farm db ingest` or nothing: a good run given with the conflicting one is not stored either
    from farm.store.ingest import RunConflict, ingest

    other = make_run(tmp_path / "other", "20261202-100000-0000", started="2026-12-02T10:00:00.000+00:00")
    with pytest.raises(RunConflict):
        ingest(open_store(store_env), [other, second])
    assert len(_runs(open_store(store_env))) == 1
    assert issubclass(RunConflict, JobError)


def test_force_moves_a_stored_run_and_the_store_follows(store_env, tmp_path):
    out = tmp_path / "imp"
    assert _import(out, store_env, "--setup", "s1").returncode == 0
    (old,) = _runs(open_store(store_env))
    proc = _import(out, store_env, "--setup", "s2", "--force")  # another import into the same --out
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
    aside = next(tmp_path.glob("imp.replaced-*"))
    runs = {r.run_id: r for r in _runs(open_store(store_env))}
    assert len(runs) == 2
    assert runs[old.run_id].path == str(aside.resolve())     # the old run is where it went
    (new,) = [r for r in runs.values() if r.run_id != old.run_id]
    assert new.path == str(out.resolve()) and new.setups == "s2"
    assert (aside / "results.csv").is_file()


def test_qualify_of_an_edited_candidate_stores_the_numbers_it_judged(store_env, tmp_path):
    five = {"throughput": [1.0e8, 1.1e8, 1.2e8, 1.05e8, 1.15e8]}  # 5 boots a side: fewer are never a regression
    base = make_run(tmp_path / "base", "20261201-100000-aaaa", started=STARTED, values=five)
    cand = make_run(tmp_path / "cand", "20261201-110000-bbbb", started="2026-12-01T11:00:00.000+00:00", values=five)
    assert run_farm("db", "ingest", str(cand), env=store_env).returncode == 0
    # the candidate regresses after it was stored (re-measured into the same directory, or edited)
    text = (cand / "results.csv").read_text()
    for old, new in (("100000000.0", "50000000.0"), ("110000000.0", "55000000.0"), ("120000000.0", "60000000.0"),
                     ("105000000.0", "52500000.0"), ("115000000.0", "57500000.0")):
        text = text.replace(old, new)
    (cand / "results.csv").write_text(text)
    proc = run_farm("qualify", "--baseline", str(base), "--candidate", str(cand), "--out", str(tmp_path / "q"),
                    env={**store_env, "FARM_ARCHIVE": "none"})  # (the made-up run's images are in no cache)
    assert proc.returncode == 1 and "warning" not in proc.stderr, proc.stderr
    eng = open_store(store_env)
    assert _values(eng, "20261201-110000-bbbb") == [5.0e7, 5.25e7, 5.5e7, 5.75e7, 6.0e7]  # what the failing verdict judged
    with eng.connect() as c:
        verdict = c.execute(sa.select(schema.qualifications)).one()
    assert verdict.passed is False and verdict.candidate_run_id == "20261201-110000-bbbb"


def test_qualify_of_an_edited_baseline_copy_stores_no_verdict(store_env, tmp_path, monkeypatch):
    monkeypatch.setenv("FARM_BASELINES", str(tmp_path / "baselines"))
    base = make_run(tmp_path / "base", "20261201-100000-aaaa", started=STARTED)
    cand = make_run(tmp_path / "cand", "20261201-110000-bbbb", started="2026-12-01T11:00:00.000+00:00")
    assert run_farm("db", "ingest", str(cand), env=store_env).returncode == 0
    assert run_farm("baseline", "save", str(cand), "--name", "cand", env=store_env).returncode == 0
    copy = tmp_path / "baselines" / "cand"
    (copy / "results.csv").write_text((copy / "results.csv").read_text().replace("100000000.0", "1.0"))
    proc = run_farm("qualify", "--baseline", str(base), "--candidate", "cand", "--out", str(tmp_path / "q"),
                    env=store_env)
    assert proc.returncode in (0, 1), proc.stderr
    assert "warning: results store" in proc.stderr and "records differ" in proc.stderr
    eng = open_store(store_env)
    with eng.connect() as c:
        assert c.execute(sa.select(sa.func.count()).select_from(schema.qualifications)).scalar_one() == 0
    assert _values(eng, "20261201-110000-bbbb") == [1.0e8, 1.1e8, 1.2e8]  # the run as it was measured
