"""farm compare keeps records of different methods apart, and says which it kept apart."""

from __future__ import annotations

from pathlib import Path

import attrs

from farm.results.compare import Apart, compare, load_result_dir, methods_apart
from farm.results.compare_outputs import to_markdown
from farm.results.identity import MetricKey
from farm.results.csvout import read_records, write_records
from farm.results.record import Record
from tests.conftest import run_farm

DATA = Path(__file__).resolve().parents[1] / "data"


def rec(params: str, value: float, *, target: str, metric: str = "rtt_median", unit: str = "us") -> Record:
    return Record(run_id="r1", timestamp="2026-12-01T10:00:00.000+00:00", target=target, arch="arm64",
                  setup="default", image="img", suite="network", benchmark="sweep", params=params, repeat=0,
                  metric=metric, value=value, unit=unit)


def test_methods_apart_lists_only_keys_that_differ_by_method():
    point = "packet_size=1472;requested=10000000"
    c = compare([
        ("lab", [rec(f"method=import:ipbench;{point}", 87.0, target="board"),
                 rec(f"method=ipbench-echo;{point}", 90.0, target="board", metric="rtt_max"),
                 rec("method=import:ipbench;packet_size=1472;requested=20000000", 85.0, target="board")]),
        ("live", [rec(f"method=ipbench-echo;{point};n=4000", 120.0, target="twin"),
                  rec(f"method=ipbench-echo;{point}", 95.0, target="twin", metric="rtt_max")]),
    ])
    # rtt_max of one method on both sides is joined; the 20 Mb/s point is only missing, not apart
    assert methods_apart(c) == (Apart(MetricKey("", "", "network", "sweep", point, "rtt_median", "us"),
                                      (("import:ipbench", ("default@lab",)), ("ipbench-echo", ("default@live",)))),)
    md = to_markdown(c)
    assert "## Not joined: methods differ" in md
    assert f"sweep `{point}` rtt_median (us): import:ipbench in default@lab; ipbench-echo in default@live" in md


def test_like_methods_give_no_section():
    point = "method=ipbench-echo;packet_size=1472;requested=10000000"
    c = compare([("a", [rec(point, 1.0, target="t1")]), ("b", [rec(point, 2.0, target="t2")])])
    assert methods_apart(c) == ()
    assert "methods differ" not in to_markdown(c)


def test_cli_compare_of_imported_history_and_live_sweep_names_what_it_kept_apart(tmp_path):
    lab = tmp_path / "lab"
    done = run_farm("import", "ipbench", str(DATA / "ipbench-sample.csv"), "--setup", "lab", "--target", "maaxboard",
                    "--out", str(lab))
    assert done.returncode == 0, done.stderr
    # a live sweep of the same points: the same records under method=ipbench-echo, in a run directory of its own
    live = tmp_path / "live"
    live.mkdir()
    records = read_records(lab / "results.csv")
    write_records(live / "results.csv", [attrs.evolve(r, setup="twin", target="maaxboard-twin",
                                                      params=r.params.replace("method=ipbench",
                                                                              "method=ipbench-echo;n=4000"))
                                         for r in records])
    done = run_farm("compare", str(lab), str(live), "--out", str(tmp_path / "cmp"))
    assert done.returncode == 0, done.stderr
    md = (tmp_path / "cmp" / "compare.md").read_text()
    section = md.split("## Not joined: methods differ", 1)[1]
    lines = [line for line in section.splitlines() if line.startswith("- ")]
    assert len(lines) == len(records)  # every record of the history, none joined
    assert "- network / sweep `packet_size=1472;requested=10000000` rtt_median (us): ipbench in lab; " \
           "ipbench-echo in twin" in section
    # nothing was joined: no row has both medians
    assert all(r.ratio is None for r in compare([load_result_dir(lab), load_result_dir(live)]).rows)


def test_a_live_ipbench_sweep_joins_the_imported_history(tmp_path):
    """method=ipbench is ipbench's definitions whoever measured them: a live sweep's records (with
    their run lengths, which do not split keys) and an import's join, and their ratio is computed."""
    lab = tmp_path / "lab"
    assert run_farm("import", "ipbench", str(DATA / "ipbench-sample.csv"), "--setup", "lab", "--out",
                    str(lab)).returncode == 0
    live = tmp_path / "live"
    live.mkdir()
    records = [r for r in read_records(lab / "results.csv") if r.metric in ("rtt_median", "cpu_utilisation")]
    run_lengths = "cooldown=1.0;n=4000;samples=4000;timeout=60.0;warmup=1.0"
    write_records(live / "results.csv", [
        attrs.evolve(r, setup="twin", target="maaxboard-twin", value=r.value * 2,
                     params=";".join(sorted([*r.params.split(";"), *run_lengths.split(";")])))
        for r in records])
    c = compare([load_result_dir(lab), load_result_dir(live)])
    joined = [row for row in c.rows if row.ratio is not None]
    assert len(joined) == len(records) and all(row.ratio == 2.0 for row in joined)
    assert methods_apart(c) == ()
