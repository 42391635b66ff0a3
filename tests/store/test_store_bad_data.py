"""Bad data into the results store (issue 31): a clear error naming the file and field (exit 2),
nothing stored, never a traceback; and SQLite and PostgreSQL take and refuse exactly the same runs,
so a laptop's store and a lab's agree.

A NaN value is a measurement's result farm knows (not measured: qualify fails on it): it is stored,
as NULL in both databases, and read back as NaN.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import sqlalchemy as sa

from farm.results.csvout import read_records, write_records
from farm.store import schema
from farm.store.db import open_store
from farm.store.ingest import read_run
from tests.conftest import run_farm
from tests.store.rundirs import make_run

STARTED = "2026-12-01T10:00:00.000+00:00"
RUN = "20261201-100000-0123456789ab"


def _count(env, table=schema.runs) -> int:
    with open_store(env).connect() as c:
        return c.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()


def _edit_records(run: Path, **changes) -> None:
    import attrs

    records = read_records(run / "results.csv")
    write_records(run / "results.csv", [attrs.evolve(records[0], **changes), *records[1:]])


def _edit_run_json(run: Path, change) -> None:
    info = json.loads((run / "run.json").read_text())
    change(info)
    (run / "run.json").write_text(json.dumps(info))


def test_the_migrations_are_one_line_and_0006_makes_a_store_at_0005_take_nan(store_env, tmp_path):
    """0006 (records.value nullable) comes after 0005 (reproductions): one chain, one head, which
    open_store reaches from a store written at 0005 (value NOT NULL there), and then a NaN is stored."""
    from alembic import command
    from alembic.script import ScriptDirectory

    from farm.store.db import _alembic_config, current_revision, database_url, engine, head_revision

    script = ScriptDirectory.from_config(_alembic_config(None))
    assert len(script.get_heads()) == 1 and len(script.get_bases()) == 1
    chain = [rev.revision for rev in script.walk_revisions()][::-1]  # base first, one down_revision each
    assert chain[0] == "0001" and chain[-1] == head_revision()
    assert chain == ["0001", "0002", "0004", "0005", "0006", "0007"]
    eng = engine(database_url(store_env))
    with eng.begin() as c:
        command.upgrade(_alembic_config(c), "0005")
    with eng.connect() as c:
        assert not {col["name"]: col for col in sa.inspect(c).get_columns("records")}["value"]["nullable"]
    run = make_run(tmp_path / "r", RUN, started=STARTED, values={"throughput": [1.0e8, math.nan]})
    proc = run_farm("db", "ingest", str(run), env=store_env)
    assert proc.returncode == 0, proc.stderr
    with eng.connect() as c:
        assert current_revision(c) == head_revision()
        assert c.execute(sa.select(schema.records.c.value).order_by(schema.records.c.repeat)).scalars().all() == [
            1.0e8, None]


def test_a_nan_value_is_stored_as_null_and_read_back_as_nan(store_env, tmp_path):
    run = make_run(tmp_path / "r", RUN, started=STARTED, values={"throughput": [1.0e8, math.nan, 1.2e8]})
    proc = run_farm("db", "ingest", str(run), env=store_env)
    assert proc.returncode == 0, proc.stderr  # was: exit 3 "NOT NULL constraint failed: records.value"
    eng = open_store(store_env)
    with eng.connect() as c:
        values = c.execute(sa.select(schema.records.c.value).order_by(schema.records.c.repeat)).scalars().all()
        figure = c.execute(sa.select(schema.figures)).one()
    assert values == [1.0e8, None, 1.2e8]             # the same in SQLite and PostgreSQL
    assert (figure.n, figure.median) == (2, 1.1e8)   # a NaN is no measurement of the figure
    from farm.dashboard import site

    with eng.connect() as c:  # the run page reads the records back
        status, html = site.render(c, f"run/{RUN}.html")
    assert status == 200 and "throughput" in html


# each: how the run directory is spoiled, and the words the error must have (file, field)
RECORD_CASES = {
    "huge repeat": (dict(repeat=2 ** 40), "results.csv line 2: repeat: 1099511627776 is out of range"),
    "setup too long": (dict(setup="s" * 201), "results.csv line 2: setup: 201 characters, the store keeps at most 200"),
    "NUL in a metric": (dict(metric="through\x00put"), "results.csv line 2: metric: holds a NUL character"),
    "params too long": (dict(params="k=" + "v" * 999), "results.csv line 2: params: 1001 characters"),
    "a key too big for an index": (dict(params="k=" + "é" * 990, metric="m" * 200, target="t" * 200),
                                   "its key (metric, benchmark, target, setup, started, suite, params"),
}
RUN_JSON_CASES = {
    "targets a list": (lambda i: i.update(targets=[1, 2]), "run.json: targets: expected a mapping, got list [1, 2]"),
    "a target a list": (lambda i: i["targets"].update(board=[]), "run.json: targets.board: expected a mapping"),
    "boots a text": (lambda i: i["targets"]["maaxboard-twin"].update(boots="many"),
                     "run.json: targets.maaxboard-twin.boots: expected a list, got str"),
    "repeat a word": (lambda i: i["targets"]["maaxboard-twin"]["boots"][0].update(repeat="x"),
                      "run.json: targets.maaxboard-twin.boots[0].repeat: expected an integer, got str 'x'"),
    "cpus huge": (lambda i: i["targets"]["maaxboard-twin"]["boots"][0].update(cpus=10 ** 30),
                  "run.json: targets.maaxboard-twin.boots[0].cpus: a whole number out of range"),
    "frequency of 400 digits": (lambda i: i["targets"]["maaxboard-twin"]["boots"][0].update(frequency_hz=10 ** 400),
                                "run.json: targets.maaxboard-twin.boots[0].frequency_hz: a number out of range"),
    "artifacts a list": (lambda i: i["images"]["maaxboard-bench"].update(artifacts=[1]),
                         "run.json: images.maaxboard-bench.artifacts: expected a mapping, got list [1]"),
    "status a number": (lambda i: i.update(status=3), "run.json: status: expected a string, got int 3"),
    "git sha too long": (lambda i: i.update(git_sha="a" * 65), "run.json: git_sha: 65 characters, the store keeps at most 64"),
    "who with a NUL": (lambda i: i.update(who="a\x00b"), "run.json: who: holds a NUL character"),
}


def _spoiled(tmp_path: Path, case: str) -> Path:
    run = make_run(tmp_path / "r", RUN, started=STARTED)
    if case in RECORD_CASES:
        _edit_records(run, **RECORD_CASES[case][0])
    else:
        _edit_run_json(run, RUN_JSON_CASES[case][0])
    return run


@pytest.mark.parametrize("case", [*RECORD_CASES, *RUN_JSON_CASES])
def test_a_value_that_does_not_fit_is_a_job_error_naming_file_and_field(tmp_path, case):
    from farm.errors import JobError

    run = _spoiled(tmp_path, case)
    words = (RECORD_CASES.get(case) or RUN_JSON_CASES[case])[1]
    with pytest.raises(JobError) as refused:
        read_run(run)
    assert str(refused.value).startswith(str(run)) and words in str(refused.value)


@pytest.mark.parametrize("case", ["huge repeat", "frequency of 400 digits"])
def test_the_commands_refuse_it_without_a_traceback(store_env, tmp_path, case):
    run = _spoiled(tmp_path, case)
    proc = run_farm("db", "ingest", str(run), env=store_env)
    assert proc.returncode == 2, proc.stderr           # bad input, not "the lab failed" (3)
    assert proc.stderr.startswith(f"farm: job error: {run}"), proc.stderr
    assert "Traceback" not in proc.stderr
    assert _count(store_env) == 0
    # farm's own ingest after a command: a warning naming it, the run directory kept
    base = make_run(tmp_path / "b", "20261201-090000-0123456789ab", started="2026-12-01T09:00:00.000+00:00")
    proc = run_farm("qualify", "--baseline", str(base), "--candidate", str(run), "--out", str(tmp_path / "q"),
                    env=store_env)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2 or f"farm: warning: results store: {run} not ingested" in proc.stderr, proc.stderr
    assert _count(store_env) == 0


def test_both_stores_take_the_same_values(tmp_path, postgres_socket):
    """The same runs ingested into a SQLite file and a PostgreSQL database: each is taken by both or
    refused by both, with the same words (the databases' own checks never decide)."""
    from tests.store.conftest import _new_pg_database

    outcomes = {}
    for backend in ("sqlite", "postgresql"):
        env = {"FARM_DB": str(tmp_path / "laptop.db") if backend == "sqlite" else _new_pg_database(postgres_socket)}
        results = []
        for i, case in enumerate([*RECORD_CASES, *RUN_JSON_CASES, "fine"]):
            base = tmp_path / backend / str(i)
            base.mkdir(parents=True)
            run = make_run(base / "r", RUN, started=STARTED) if case == "fine" else _spoiled(base, case)
            try:
                read = read_run(run)
            except Exception as exc:  # noqa: BLE001 - the message is what is compared
                results.append((case, "refused", str(exc).replace(str(run), "RUN")))
                continue
            from farm.store.ingest import ingest

            done = ingest(open_store(env), [run])
            results.append((case, done[0].outcome, read.run_id))
        outcomes[backend] = results
    assert outcomes["sqlite"] == outcomes["postgresql"]
    assert outcomes["sqlite"][-1] == ("fine", "stored", RUN)


def test_a_key_as_big_as_farm_takes_fits_a_postgresql_index_entry(postgres_socket, tmp_path):
    """farm's bound on an index entry is PostgreSQL's, or below it: a figure whose key is as big as
    farm takes, of text that does not compress (PostgreSQL compresses a long value in an index
    entry), is stored by PostgreSQL."""
    import random
    import string

    from farm.store.fit import INDEX_ENTRY_BYTES
    from farm.store.ingest import _FIGURE_INDEX, ingest
    from tests.store.conftest import _new_pg_database

    rng = random.Random(31)

    def noise(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    def key_bytes(run) -> int:
        figure = read_run(run).figures[0]
        return sum(len(figure[c].encode()) for c in _FIGURE_INDEX if isinstance(figure[c], str))

    run = make_run(tmp_path / "r", RUN, started=STARTED)
    key = {"metric": noise(200), "target": noise(200), "setup": noise(200), "benchmark": noise(100),
           "suite": noise(100)}
    _edit_records(run, params="k=" + noise(998), **key)
    two_bytes = INDEX_ENTRY_BYTES - key_bytes(run)  # that many of the params' characters 2-byte ones
    assert 0 < two_bytes < 998
    params = "k=" + noise(998 - two_bytes) + noise(two_bytes, "äöüßéèàçñøåæœ" + "ÄÖÜÉÈÀÇÑØÅÆŒ")
    _edit_records(run, params=params)
    assert key_bytes(run) == INDEX_ENTRY_BYTES  # at the bound: farm takes it
    eng = open_store({"FARM_DB": _new_pg_database(postgres_socket)})
    assert [d.outcome for d in ingest(eng, [run])] == ["stored"]
    assert {"metric", "params", "target"} <= set(_FIGURE_INDEX)


@pytest.mark.parametrize("where", ["run.json", "baseline.json"])
def test_a_deeply_nested_json_file_is_a_clear_error_everywhere(tmp_path, where, monkeypatch):
    monkeypatch.setenv("FARM_BASELINES", str(tmp_path / "baselines"))
    env = {"FARM_DB": str(tmp_path / "r.db")}
    run = make_run(tmp_path / "r", RUN, started=STARTED)
    deep = '{"x": ' + "[" * 100000 + "]" * 100000 + "}"
    if where == "run.json":
        (run / "run.json").write_text(deep)
        for args in (("report", str(run), "--no-step-summary"), ("db", "ingest", str(run)),
                     ("baseline", "save", str(run), "--name", "deep"),
                     ("run", "pipelines/smoke.yaml", "--out", str(run))):
            proc = run_farm(*args, env=env)
            assert proc.returncode == 2, (args, proc.stderr)
            assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr, (args, proc.stderr)
            assert "nested deeper than 64 levels" in proc.stderr or "not empty" in proc.stderr, (args, proc.stderr)
        proc = run_farm("qualify", "--baseline", str(run), "--candidate", str(run), "--out", str(tmp_path / "q"),
                        env=env)
        assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr, proc.stderr
    else:
        assert run_farm("baseline", "save", str(run), "--name", "v1", env=env).returncode == 0
        (tmp_path / "baselines" / "v1" / "baseline.json").write_text(deep)
        proc = run_farm("baseline", "list", env=env)
        assert proc.returncode == 0 and "v1" in proc.stdout and "Traceback" not in proc.stderr, proc.stderr


def test_an_image_manifest_nested_deep_is_refused(tmp_path):
    image = tmp_path / "img"
    image.mkdir()
    (image / "manifest.json").write_text("[" * 100000 + "]" * 100000)
    proc = run_farm("boot", "--env", "env/qemu-maaxboard.yaml", "--image", str(image))
    assert proc.returncode == 2 and "nested deeper than 64 levels" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_iperf3_capture_nested_deep_is_refused(tmp_path):
    capture = tmp_path / "iperf3.json"
    capture.write_text('{"start": ' + "[" * 100000 + "]" * 100000 + "}")
    proc = run_farm("import", "iperf3", str(capture), "--setup", "s", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "nested deeper than" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "o").exists()
