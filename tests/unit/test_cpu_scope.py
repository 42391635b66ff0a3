"""Which CPU a CPU figure is (issue 25): records say it (cores=board|vcpus), compare joins a board figure
only with a board figure, the wide CSV's CPU_Utilisation of a guest setup is its board's, and figures
written before records said it are read as what they were (a bare board's: board; a guest setup's by
its run.json: vcpus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.results.compare import compare, load_result_dir
from farm.results.csvout import write_records
from farm.results.identity import MetricKey, cpu_scopes_of_run, with_cpu_scope
from farm.results.ipbench import sweep_rows
from farm.results.record import Record, parse_params
from farm.results.sweep_plots import sweep_series
from farm.measure.cpustat import is_cpu_figure

POINT = "cooldown=1;cpu=proc-stat;method=ipbench;packet_size=1472;requested=10000000;samples=800;warmup=1"
RTT_POINT = "cooldown=1;method=ipbench;packet_size=1472;requested=10000000;samples=800;warmup=1"


def rec(setup: str, metric: str, value: float, params: str, *, boot: int = 0, unit: str = "percent") -> Record:
    return Record("r1", "2026-12-02T18:00:00.000+00:00", "maaxboard-twin", "arm64", setup, "img", "network",
                  "sweep", params, boot, metric, value, unit)


def cores(params: str, scope: str) -> str:
    return f"{params};cores={scope}"


def vm_vs_bare(boots: int = 5) -> list[Record]:
    """As a vm-vs-bare run with cpu_target: false writes them: bare's board; the guest's board (through
    its host's channel) and vCPUs (through the guest's), measured at the same window edges."""
    out = []
    for b in range(boots):
        out += [rec("bare", "cpu_utilisation", 20.0 + b, cores(POINT, "board"), boot=b),
                rec("bare", "rtt_median", 300.0 + b, RTT_POINT, boot=b, unit="us"),
                rec("kvm-guest", "cpu_utilisation", 45.0 + b, cores(POINT, "board"), boot=b),
                rec("kvm-guest", "cpu_utilisation", 99.5 + b / 10, cores(POINT, "vcpus"), boot=b),
                rec("kvm-guest", "rtt_median", 900.0 + b, RTT_POINT, boot=b, unit="us")]
    return out


def test_the_cpu_figures_are_the_targets_cpu_metrics():
    assert all(map(is_cpu_figure, ("cpu_utilisation", "cpu0_utilisation", "cpu12_utilisation", "idle_cycles",
                                   "total_cycles", "counter_frequency", "remote_cpu")))
    assert not any(map(is_cpu_figure, ("host_cpu", "rtt_median", "cpu_utilisation_x", "cpux_utilisation")))


def test_compare_joins_board_with_board_and_keeps_the_vcpus_apart():
    comparison = compare([("r1", vm_vs_bare())], repeats_in_boot={"r1": 1})
    assert comparison.labels == ("bare", "kvm-guest")
    rows = {parse_params(r.key.params).get("cores"): r for r in comparison.rows if r.key.metric == "cpu_utilisation"}
    board, vcpus = rows["board"], rows["vcpus"]
    assert board.counts == (5, 5) and board.medians == (22.0, 47.0)  # the board's 4 cores on both sides
    assert board.estimates[0].ratio == pytest.approx(47.0 / 22.0)
    # a vCPU figure has no bare counterpart: "only in kvm-guest", never a ratio to the board's cores
    assert vcpus.counts == (0, 5) and vcpus.ratios == (None,)
    (missing,) = [m for m in comparison.missing if m.key.metric == "cpu_utilisation"]
    assert missing.present == ("kvm-guest",) and missing.absent == ("bare",)


def test_a_vcpu_figure_never_joins_the_board_figure_of_before():
    """Bare records written before records said their CPU (no cores=) are the board's: they join a new
    bare run's cores=board series; a vCPU figure joins neither."""
    old_bare = rec("bare", "cpu_utilisation", 20.0, POINT)
    new_bare = rec("bare", "cpu_utilisation", 21.0, cores(POINT, "board"))
    guest_vcpus = rec("bare", "cpu_utilisation", 99.0, cores(POINT, "vcpus"))
    assert MetricKey.of(old_bare) == MetricKey.of(new_bare)
    assert MetricKey.of(guest_vcpus) != MetricKey.of(old_bare)
    assert "cores=board" in MetricKey.of(old_bare).params
    rtt = rec("bare", "rtt_median", 300.0, RTT_POINT, unit="us")
    assert "cores" not in MetricKey.of(rtt).params  # only CPU figures say a CPU


def old_guest_run(root: Path) -> Path:
    """A vm-vs-bare run as farm wrote it before: no cores= anywhere; the guest's figure was its vCPU's."""
    d = root / "old"
    d.mkdir()
    write_records(d / "results.csv", [rec("bare", "cpu_utilisation", 20.0, POINT),
                                      rec("kvm-guest", "cpu_utilisation", 99.7, POINT)])
    (d / "run.json").write_text(json.dumps({"run_id": "r1", "targets": {"maaxboard-twin": {"boots": [
        {"setup": "bare", "flow": "netboot"}, {"setup": "kvm-guest", "flow": "netboot+guest"}]}}}))
    return d


def test_an_older_guest_runs_cpu_figure_is_read_as_its_vcpus(tmp_path):
    name, records = load_result_dir(old_guest_run(tmp_path))
    assert {r.setup: parse_params(r.params)["cores"] for r in records} == {"bare": "board", "kvm-guest": "vcpus"}
    comparison = compare([(name, records)])
    assert all(0 in r.counts for r in comparison.rows)  # 3.14 "cpu_utilisation ratio" of before: gone


def test_run_json_says_which_cpu_an_older_setups_shell_was():
    info = {"targets": {"t": {"boots": [{"setup": "bare", "flow": "netboot"}, {"setup": "g", "flow": "netboot+guest"},
                                        {"setup": "bare", "flow": "netboot"}]}}}
    assert cpu_scopes_of_run(info) == {("t", "bare"): "board", ("t", "g"): "vcpus"}
    assert cpu_scopes_of_run({"targets": "junk"}) == {} and cpu_scopes_of_run(None) == {}


def test_with_cpu_scope_tags_cpu_figures_that_do_not_say():
    records = [rec("g", "cpu_utilisation", 99.0, POINT), rec("g", "cpu_utilisation", 45.0, cores(POINT, "board")),
               rec("g", "rtt_median", 900.0, RTT_POINT, unit="us")]
    tagged = with_cpu_scope(records, "vcpus")
    assert [parse_params(r.params).get("cores") for r in tagged] == ["vcpus", "board", None]


def test_the_guest_setups_wide_cpu_utilisation_is_the_boards():
    records = [r for r in vm_vs_bare(1) if r.setup == "kvm-guest"]
    records.append(rec("kvm-guest", "requested_throughput", 10e6, RTT_POINT, unit="bit/s"))
    (row,) = sweep_rows(records)
    assert row["CPU_Utilisation"] == 45.0 and row["Guest_CPU_Utilisation"] == 99.5
    bare = [r for r in vm_vs_bare(1) if r.setup == "bare"]
    (row,) = sweep_rows(bare)
    assert row["CPU_Utilisation"] == 20.0 and "Guest_CPU_Utilisation" not in row
    (row,) = sweep_rows([rec("bare", "cpu_utilisation", 20.0, POINT)])  # the lab's files, older farm's: board
    assert row["CPU_Utilisation"] == 20.0


def test_the_sweep_plot_draws_the_boards_cpu():
    records = [r for r in vm_vs_bare(1) if r.setup == "kvm-guest"]
    (series,) = sweep_series(records)["maaxboard-twin"]
    assert [p.cpu for p in series.points] == [45.0]


def test_an_older_guest_runs_wide_cpu_utilisation_is_its_vcpus_column(tmp_path):
    """Regenerated (farm report), an older run's guest sweep has no board figure: its vCPUs' figure goes to
    Guest_CPU_Utilisation, never into the board's CPU_Utilisation column."""
    from farm.results.rundata import read_run_records
    from farm.results.sweeps import run_sweeps

    records = read_run_records(old_guest_run(tmp_path))
    rows = {s.setup: s.rows[0] for s in run_sweeps(records)}
    assert rows["bare"]["CPU_Utilisation"] == 20.0 and "Guest_CPU_Utilisation" not in rows["bare"]
    assert rows["kvm-guest"]["CPU_Utilisation"] is None and rows["kvm-guest"]["Guest_CPU_Utilisation"] == 99.7
