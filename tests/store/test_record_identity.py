"""One record identity through the store and the dashboard (issue #25): two runs of pipelines/network.yaml
are one history series per load and setup, the dashboard compares one run's setups and two runs in full
tables (in Chromium), a params value of any text round-trips through the store, report and dashboard,
and a store written before (revision 0001) is migrated to the same figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from farm.measure.params import format_params, parse_params
from farm.results.csvout import read_records, write_records
from farm.results.junit import Case, write_junit
from farm.results.record import Record, to_json, write_text_atomic
from farm.store import schema
from farm.store.db import engine, open_store
from farm.store.history import Filters, history
from farm.store.ingest import ingest
from tests.conftest import run_farm
from tests.store.test_dashboard_browser import _follow, _load, browser  # noqa: F401  (a fixture)

TARGET = "maaxboard-twin"
LOADS = (10, 50, 100, 200)  # pipelines/network.yaml's
SETUPS = ("four-cores", "one-core")
METRICS = (("requested_throughput", "bit/s"), ("received_throughput", "bit/s"), ("rtt_median", "us"),
           ("cpu_utilisation", "percent"))
ODD = "0;1 = größe ∞ 50%"  # a value with ';', '=', spaces, unicode and '%' (the pytest plugin's cpus="0;1")


def network_run(path: Path, run_id: str, started: str, *, old: bool, slower: float = 1.0) -> Path:
    """A run of pipelines/network.yaml as farm writes it; ``old``: as farm wrote it before sample counts
    were values of their own (``n=`` in every point's params, different in every run and setup)."""
    records = []
    for s, setup in enumerate(SETUPS):
        for load in LOADS:
            point = f"method=ipbench-echo;packet_size=1472;requested={load * 1000000}"
            samples = 1700 * load + 13 * s + (7 if old else 0)
            params = f"method=ipbench-echo;n={samples};packet_size=1472;requested={load * 1000000}" if old else point
            for metric, unit in METRICS:
                value = {"requested_throughput": load * 1e6, "received_throughput": load * 1e6 / (1 + s),
                         "rtt_median": 300.0 * (1 + s) * slower, "cpu_utilisation": 10.0 + s}[metric]
                records.append(Record(run_id, started, TARGET, "arm64", setup, "maaxboard-bench", "network", "sweep",
                                      params, 0, metric, value, unit))
            if not old:
                records.append(Record(run_id, started, TARGET, "arm64", setup, "maaxboard-bench", "network", "sweep",
                                      point, 0, "rtt_samples", float(samples), "count"))
    # a pytest test's record of four-cores (farm_record): before, the plugin wrote cpus="0;1" unescaped
    records.append(Record(run_id, started, TARGET, "arm64", SETUPS[0], "maaxboard-bench", "pytest", "test_latency",
                          "cpus=0;1;size=64" if old else format_params({"cpus": ODD, "size": 64}), 0, "latency",
                          12.5, "us"))
    path.mkdir(parents=True)
    write_records(path / "results.csv", records)
    write_junit(path / "junit.xml", "farm.network", [Case("build", "farm.build", 0.1, "pass")])
    write_text_atomic(path / "run.json", to_json({
        "run_id": run_id, "started": started, "status": "passed", "pipeline_name": "network",
        "setups": {s: {"bootargs": []} for s in SETUPS},
        "targets": {TARGET: {"arch": "arm64", "boots": [
            {"setup": s, "repeat": 0, "kernel": "6.1.0-57-arm64", "image": "maaxboard-bench", "image_key": "a" * 64,
             "cpus": 4, "frequency_hz": 1.5e9, "frequency_source": "env"} for s in SETUPS]}}}) + "\n")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    base = tmp_path_factory.mktemp("network")
    return [network_run(base / "r1", "20261201-100000-aaaa", "2026-12-01T10:00:00.000+00:00", old=True),
            network_run(base / "r2", "20261202-100000-bbbb", "2026-12-02T10:00:00.000+00:00", old=False, slower=1.1)]


def _series_per_load_and_setup(eng: sa.Engine) -> None:
    with eng.connect() as c:
        series = history(c, Filters(metric="rtt_median"))
    assert len(series) == len(LOADS) * len(SETUPS)  # not one per run and sample count
    assert {(s.setup, parse_params(s.params)["requested"]) for s in series} == {
        (setup, str(load * 1000000)) for setup in SETUPS for load in LOADS}
    assert all(len(s.points) == 2 for s in series)


def test_two_network_runs_are_one_history_series_per_load_and_setup(runs, tmp_path):
    eng = open_store({"FARM_DB": str(tmp_path / "results.db")})
    ingest(eng, runs)
    _series_per_load_and_setup(eng)
    with eng.connect() as c:  # the odd value stays one value, in the store as in results.csv
        stored = c.execute(sa.select(schema.records.c.params).where(schema.records.c.metric == "latency")).scalars()
        assert [parse_params(p) for p in stored] == [{"cpus": "0;1", "size": "64"}, {"cpus": ODD, "size": "64"}]


def _old_ingest(eng: sa.Engine, run_dir: Path) -> None:
    """What farm before revision 0002 stored of a run: its records' params as results.csv has them, and
    figures keyed by all of them (run lengths and sample counts too)."""
    from farm.store.history import median_interval
    from farm.store.ingest import read_run

    rows = read_run(run_dir)
    raw = [r.params for r in read_records(run_dir / "results.csv")]
    with eng.begin() as c:
        columns = {col["name"] for col in sa.inspect(c).get_columns("runs")}  # the table as 0001 made it
        pk = c.execute(sa.insert(schema.runs).values(**{k: v for k, v in rows.run.items() if k in columns})
                       ).inserted_primary_key[0]
        records = [{**r, "params": text, "run": pk} for r, text in zip(rows.records, raw)]
        c.execute(sa.insert(schema.records), records)
        groups: dict[tuple, list[float]] = {}
        for r in records:
            groups.setdefault(tuple(r[k] for k in ("target", "setup", "suite", "benchmark", "params", "metric",
                                                   "unit", "kernel", "image_key", "git_sha")), []).append(r["value"])
        c.execute(sa.insert(schema.figures), [
            {**dict(zip(("target", "setup", "suite", "benchmark", "params", "metric", "unit", "kernel", "image_key",
                         "git_sha"), key)), "run": pk, "run_id": rows.run_id, "started": rows.run["started"],
             "n": len(vs), "median": vs[0], "lo": median_interval(vs)[0], "hi": median_interval(vs)[1],
             "interval": median_interval(vs)[2], "values": json.dumps(vs)} for key, vs in groups.items()])


def test_a_store_written_before_is_migrated_to_the_same_series(runs, tmp_path):
    from alembic import command

    from farm.store.db import _alembic_config

    url = f"sqlite:///{tmp_path / 'old.db'}"
    eng = engine(url)
    with eng.begin() as c:
        command.upgrade(_alembic_config(c), "0001")
    for run in runs:
        _old_ingest(eng, run)
    with eng.connect() as c:  # before: a series per run and sample count, the odd value as two params
        assert len(history(c, Filters(metric="rtt_median"))) == 2 * len(LOADS) * len(SETUPS)
    eng.dispose()
    migrated = open_store({"FARM_DB": str(tmp_path / "old.db")})  # migrates to the head (0002 and on)
    _series_per_load_and_setup(migrated)
    with migrated.connect() as c:
        assert c.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one() >= "0002"
        stored = c.execute(sa.select(schema.records.c.params).where(schema.records.c.metric == "latency")).all()
        assert [p for (p,) in stored] == ["cpus=0%3B1;size=64", "cpus=0%3B1 %3D größe ∞ 50%25;size=64"]
        assert [parse_params(p) for (p,) in stored] == [{"cpus": "0;1", "size": "64"}, {"cpus": ODD, "size": "64"}]


def test_a_store_with_old_cycles_per_byte_gets_their_source(tmp_path):
    """A cycles/byte record of a run's clock written before the cycle source was recorded says it after
    the migration (from its boot record: the env file's nominal clock), and joins a new run's series."""
    from alembic import command

    from farm.store.db import _alembic_config

    def crypto_run(name: str, params: str) -> Path:
        path = tmp_path / name
        path.mkdir()
        write_records(path / "results.csv", [Record(name, "2026-12-01T10:00:00.000+00:00", TARGET, "arm64", "default",
                                                    "img", "crypto", "openssl-speed", params, 0, "cycles_per_byte",
                                                    10.0, "cycles/byte")])
        write_text_atomic(path / "run.json", to_json({"run_id": name, "started": "2026-12-01T10:00:00.000+00:00",
                                                      "targets": {TARGET: {"boots": [{"setup": "default",
                                                                                      "frequency_source": "env"}]}}}))
        return path

    eng = engine(f"sqlite:///{tmp_path / 'old.db'}")
    with eng.begin() as c:
        command.upgrade(_alembic_config(c), "0001")
    _old_ingest(eng, crypto_run("old", "algorithm=sha256;seconds=1"))
    eng.dispose()
    migrated = open_store({"FARM_DB": str(tmp_path / "old.db")})
    ingest(migrated, [crypto_run("new", "algorithm=sha256;cycles=nominal;seconds=3")])
    with migrated.connect() as c:
        (series,) = history(c, Filters(metric="cycles_per_byte"))
    assert series.params == "algorithm=sha256;cycles=nominal" and len(series.points) == 2


def test_a_store_with_old_cpu_figures_says_their_cpu(tmp_path):
    """CPU figures stored before records said their CPU (revision 0006): a guest setup's (run.json: the flow
    netboot+guest) are its vCPUs' after the migration, a bare one's the board's, and the board's join a new
    run's cores=board series while the vCPUs' stay apart."""
    from alembic import command

    from farm.store.db import _alembic_config

    point = "cpu=proc-stat;method=ipbench;packet_size=1472;requested=10000000"

    def vm_run(name: str, started: str, new: bool) -> Path:
        path = tmp_path / name
        path.mkdir()
        rows = [("bare", "board", 20.0), ("kvm-guest", "vcpus", 99.7)] + ([("kvm-guest", "board", 45.0)] if new else [])
        write_records(path / "results.csv", [
            Record(name, started, TARGET, "arm64", setup, "img", "network", "sweep",
                   f"cores={cores};{point}" if new else point, 0, "cpu_utilisation", value, "percent")
            for setup, cores, value in rows])
        write_text_atomic(path / "run.json", to_json({"run_id": name, "started": started, "targets": {TARGET: {
            "boots": [{"setup": "bare", "flow": "netboot"}, {"setup": "kvm-guest", "flow": "netboot+guest"}]}}}))
        return path

    eng = engine(f"sqlite:///{tmp_path / 'old.db'}")
    with eng.begin() as c:
        command.upgrade(_alembic_config(c), "0006")
    _old_ingest(eng, vm_run("old", "2026-12-01T10:00:00.000+00:00", new=False))
    eng.dispose()
    migrated = open_store({"FARM_DB": str(tmp_path / "old.db")})
    with migrated.connect() as c:
        stored = dict(c.execute(sa.select(schema.records.c.setup, schema.records.c.params)).all())
    assert {setup: parse_params(text)["cores"] for setup, text in stored.items()} == {"bare": "board",
                                                                                     "kvm-guest": "vcpus"}
    ingest(migrated, [vm_run("new", "2026-12-02T10:00:00.000+00:00", new=True)])
    with migrated.connect() as c:
        series = {(s.setup, parse_params(s.params)["cores"]): len(s.points)
                  for s in history(c, Filters(metric="cpu_utilisation"))}
    assert series == {("bare", "board"): 2, ("kvm-guest", "vcpus"): 2, ("kvm-guest", "board"): 1}


def test_report_and_dashboard_show_the_odd_value(runs, tmp_path):
    proc = run_farm("report", str(runs[1]))
    assert proc.returncode == 0, proc.stderr
    assert "cpus=0;1 = größe ∞ 50%" in (runs[1] / "summary.md").read_text(encoding="utf-8")
    env = {"FARM_DB": str(tmp_path / "results.db")}
    assert run_farm("db", "ingest", *map(str, runs), env=env).returncode == 0
    out = tmp_path / "site"
    proc = run_farm("dashboard", "--out", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    assert "cpus=0;1 = größe ∞ 50%" in (out / "run" / "20261202-100000-bbbb.html").read_text(encoding="utf-8")


def test_the_dashboard_compares_one_runs_setups_and_two_runs_in_full(runs, browser, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By

    env = {"FARM_DB": str(tmp_path / "results.db")}
    assert run_farm("db", "ingest", *map(str, runs), env=env).returncode == 0
    out = tmp_path / "site"
    proc = run_farm("dashboard", "--out", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    base = out.as_uri() + "/"
    sweep_rows = len(LOADS) * len(METRICS)
    for run in ("20261201-100000-aaaa", "20261202-100000-bbbb"):  # old records (n= params) and new ones
        page = _load(browser, base + f"run/{run}.html", f"setups-{run}", tmp_path)
        _follow(browser, page.find_element(By.PARTIAL_LINK_TEXT, f"{SETUPS[0]} → {SETUPS[1]}"))
        tables = page.find_elements(By.CSS_SELECTOR, "main table")
        joined = tables[0].find_elements(By.CSS_SELECTOR, "tbody tr")
        assert len(joined) == sweep_rows + (len(LOADS) if run.endswith("bbbb") else 0), run  # every point joined
        # apart: only the pytest record, which ran on four-cores alone
        assert [h.text for h in page.find_elements(By.XPATH, "//main/h2")] == ["only in the first"]
        assert len(tables[1].find_elements(By.CSS_SELECTOR, "tbody tr")) == 1
    page = _load(browser, base + "run/20261202-100000-bbbb.html", "runs", tmp_path)
    _follow(browser, page.find_element(By.PARTIAL_LINK_TEXT, "compare with the run before it"))
    joined, first, then = (t.find_elements(By.CSS_SELECTOR, "tbody tr") for t in
                           page.find_elements(By.CSS_SELECTOR, "main table"))
    # every point of both setups joined (old n= params and new ones alike); apart: the new run's sample
    # counts (values of their own) and the two pytest records (their cpus differ)
    assert len(joined) == len(SETUPS) * sweep_rows
    assert [h.text for h in page.find_elements(By.XPATH, "//main/h2")] == ["only in the first", "only in the second"]
    assert len(first) == 1 and len(then) == len(SETUPS) * len(LOADS) + 1
    assert "cpus=0;1 = größe ∞ 50%" in page.find_element(By.TAG_NAME, "main").text
