"""farm.results.ipbench: the lab's wide CSV (tests/data/ipbench-*.csv, synthetic, see README) into
sweep records and back, the variants of public ipbench scripts, and iperf3 imports."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from farm.errors import EXIT_JOB_ERROR, JobError, ParseError
from farm.measure import BenchmarkError, Measurement
from farm.measure.ipbench import METRICS, WIDE_COLUMNS
from farm.results.importers import import_file, run_id as run_id_of
from farm.results.ipbench import sweep_rows, write_wide_csv
from farm.results.record import Record, RunContext, parse_params

DATA = Path(__file__).resolve().parent.parent / "data"
SAMPLE = DATA / "ipbench-sample.csv"
HEADER = ",".join(WIDE_COLUMNS)


def write(tmp_path: Path, text: str, name: str = "lab.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_wide_columns_are_the_lab_header():
    assert HEADER == ("Requested_Throughput,Receive_Throughput,Send_Throughput,Packet_Size,"
                      "Minimum_RTT,Average_RTT,Maximum_RTT,Stdev_RTT,Median_RTT,CPU_Utilisation")


# --- reading the lab's CSV -------------------------------------------------------------------


def test_read_sample_gives_live_sweep_records():
    records = import_file("ipbench", SAMPLE, setup="maaxboard", target="maaxboard-1")
    assert len(records) == 13 * 11  # 13 loads, 9 metrics (Packet_Size is a param) and the two cycle counts
    run_id = run_id_of(SAMPLE.read_bytes(), {"importer": "ipbench", "setup": "maaxboard", "target": "maaxboard-1",
                                             "cpu_fraction": False, "decrypt": False})
    assert {r.run_id for r in records} == {run_id}
    first = {r.metric: r for r in records[:11]}
    assert {(m, r.unit) for m, r in first.items()} == {*METRICS.values(), ("idle_cycles", "ticks"),
                                                        ("total_cycles", "ticks")}
    assert (first["idle_cycles"].value, first["total_cycles"].value) == (11605646241, 12000000000)
    r = first["received_throughput"]
    assert (r.benchmark, r.suite, r.setup, r.target, r.arch, r.repeat) == (
        "sweep", "network", "maaxboard", "maaxboard-1", "unknown", 0)
    assert r.params == "method=ipbench;packet_size=1472;requested=10000000"
    assert r.value == 9995659.0
    assert first["rtt_stdev"].value == 23.79
    assert first["rtt_median"].value == 87.0
    assert first["cpu_utilisation"].value == 3.3  # the CPU column wins over Idle/Total_Cycles
    assert first["requested_throughput"].value == 10_000_000.0


def test_the_same_capture_imports_to_the_same_results_wherever_it_lies(tmp_path):
    """Two copies of one capture, at other paths and imported at other times, give byte-identical
    results.csv (run id from the content,
    timestamp from the file's mtime); one changed value gives another run id."""
    import csv
    import os
    import shutil
    import subprocess
    import sys

    sample = SAMPLE
    first, second = tmp_path / "a" / "lab.csv", tmp_path / "b" / "other-name.csv"
    for copy in (first, second):
        copy.parent.mkdir()
        shutil.copyfile(sample, copy)
        os.utime(copy, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    outs = []
    for i, copy in enumerate((first, second)):
        out = tmp_path / f"out{i}"
        proc = subprocess.run([sys.executable, "-m", "farm.cli", "import", "ipbench", str(copy), "--setup", "lab",
                               "--out", str(out)], capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2])
        assert proc.returncode == 0, proc.stderr
        outs.append((out / "results.csv").read_bytes())
    assert outs[0] == outs[1]
    rows = list(csv.DictReader(outs[0].decode().splitlines()))
    assert {r["timestamp"] for r in rows} == {"2023-11-14T22:13:20.000+00:00"}
    changed = tmp_path / "changed.csv"
    changed.write_text(sample.read_text().replace("9995659", "9995658", 1))
    assert {r.run_id for r in import_file("ipbench", changed, setup="lab")} != {rows[0]["run_id"]}
    assert [r.value for r in import_file("ipbench", changed, setup="lab")][:3] != [float(r["value"]) for r in rows[:3]]


def test_missing_column_names_file_and_column():
    path = DATA / "ipbench-missing-column.csv"
    with pytest.raises(JobError) as info:
        import_file("ipbench", path, setup="x")
    assert str(info.value).startswith(f"{path}: ipbench CSV line 1: no Median_RTT column")
    assert info.value.exit_code == EXIT_JOB_ERROR


def test_bad_number_names_file_line_and_column():
    path = DATA / "ipbench-bad-number.csv"
    with pytest.raises(ParseError) as info:
        import_file("ipbench", path, setup="x")
    assert str(info.value) == f"{path}: ipbench CSV line 4: Average_RTT is '9O', expected a number"


def test_lower_case_header_of_the_au_ts_scripts(tmp_path):
    # helpers/scripts/latency.sh and ipbench_benchmark.sh write "CPU_utilisation"
    text = SAMPLE.read_text().replace("CPU_Utilisation", "CPU_utilisation")
    records = import_file("ipbench", write(tmp_path, text), setup="x")
    assert [r.value for r in records if r.metric == "cpu_utilisation"][:2] == [3.3, 3.6]


def test_cpu_from_idle_and_total_cycles_when_there_is_no_cpu_column(tmp_path):
    header = ("Requested_Throughput,Receive_Throughput,Send_Throughput,Packet_Size,Minimum_RTT,"
              "Average_RTT,Maximum_RTT,Stdev_RTT,Median_RTT,Bad_Packets,Idle_Cycles,Total_Cycles")
    text = f"{header}\n100000000,99916558,99983042,1472,60,95,808,20.84,88,0,9000,12000\n"
    records = import_file("ipbench", write(tmp_path, text), setup="x")
    assert [r.value for r in records if r.metric == "cpu_utilisation"] == [25.0]


def test_cycles_agree_with_the_cpu_column_of_the_sample(tmp_path):
    lines = SAMPLE.read_text().splitlines()
    cut = "\n".join(",".join(c for i, c in enumerate(line.split(",")) if i != 9) for line in lines)
    derived = [r.value for r in import_file("ipbench", write(tmp_path, cut), setup="x")
               if r.metric == "cpu_utilisation"]
    printed = [r.value for r in import_file("ipbench", SAMPLE, setup="x") if r.metric == "cpu_utilisation"]
    assert derived == pytest.approx(printed, abs=0.06)


def test_star_mark_of_latency_sh_and_blank_lines(tmp_path):
    text = f"{HEADER}\n\n*1000000000,700000000,999000000,1472,70,4000,9000,10.5,3900,61.9\n"
    records = import_file("ipbench", write(tmp_path, text), setup="x")
    assert records[0].params == "method=ipbench;packet_size=1472;requested=1000000000"
    assert records[0].value == 1e9


def test_repeated_points_get_the_next_repeat(tmp_path):
    row = "10000000,9995659,9996133,1472,58,92,481,23.79,87,3.3"
    records = import_file("ipbench", write(tmp_path, f"{HEADER}\n{row}\n{row}\n"), setup="x")
    assert sorted({r.repeat for r in records}) == [0, 1]


def test_cpu_fraction_files(tmp_path):
    text = f"{HEADER}\n10000000,9995659,9996133,1472,58,92,481,23.79,87,0.033\n"
    records = import_file("ipbench", write(tmp_path, text), setup="x", options={"cpu_fraction": True})
    assert [r.value for r in records if r.metric == "cpu_utilisation"] == [pytest.approx(3.3)]


@pytest.mark.parametrize("text, message", [
    ("", r"line 1: empty, expected the header Requested_Throughput,"),
    (f"{HEADER}\n10000000,9995659\n", r"line 2: 2 fields, the header has 10"),
    (f"{HEADER}\n10000000,9995659,9996133,1472,58,nan,481,23.79,87,3.3\n", r"line 2: Average_RTT is 'nan'"),
])
def test_other_broken_files(tmp_path, text, message):
    with pytest.raises((JobError, ParseError), match=message):
        import_file("ipbench", write(tmp_path, text), setup="x")


def test_no_cpu_column_and_no_cycles(tmp_path):
    header = HEADER.replace(",CPU_Utilisation", ",Idle_Cycles")
    with pytest.raises(JobError, match=r"no CPU_Utilisation column"):
        import_file("ipbench", write(tmp_path, f"{header}\n"), setup="x")


# --- records -> wide rows -> CSV -------------------------------------------------------------


def test_sweep_rows_round_trip_the_sample(tmp_path):
    records = import_file("ipbench", SAMPLE, setup="maaxboard")
    shuffled = records[:]
    random.Random(1).shuffle(shuffled)
    rows = sweep_rows(shuffled)
    assert [row["Requested_Throughput"] for row in rows] == [
        1e6 * x for x in (10, 20, 50, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000)]
    assert rows[0] == {
        "Requested_Throughput": 10000000.0, "Receive_Throughput": 9995659.0,
        "Send_Throughput": 9996133.0, "Packet_Size": 1472.0, "Minimum_RTT": 58.0,
        "Average_RTT": 92.0, "Maximum_RTT": 481.0, "Stdev_RTT": 23.79, "Median_RTT": 87.0,
        "CPU_Utilisation": 3.3, "Idle_Cycles": 11605646241.0, "Total_Cycles": 12000000000.0}
    out = tmp_path / "wide.csv"
    write_wide_csv(out, rows)
    lines = out.read_text().splitlines()
    assert lines[0] == SAMPLE.read_text().splitlines()[0] == f"{HEADER},Idle_Cycles,Total_Cycles"
    assert lines[1] == "10000000,9995659,9996133,1472,58,92,481,23.79,87,3.3,11605646241,12000000000"
    # the sample, every column, number for number (ipbench's "27.00" is our "27")
    def numbers(text_lines):
        return [[float(cell) for cell in line.split(",")] for line in text_lines]
    assert numbers(lines[1:]) == numbers(SAMPLE.read_text().splitlines()[1:])
    assert "612,27,97" in lines[8]
    again = import_file("ipbench", out, setup="maaxboard")
    assert [(r.metric, r.params, r.value) for r in again] == [(r.metric, r.params, r.value) for r in records]


def test_sweep_rows_from_live_records_with_gaps():
    ctx = RunContext(run_id="r1", target="qemu", arch="arm64", setup="qemu", image="img", suite="network")
    params = {"requested": 50000000, "packet_size": 1472}
    records = [ctx.record(Measurement("sweep", "received_throughput", 49e6, "bit/s", params)),
               ctx.record(Measurement("sweep", "loss", 0.1, "percent", params)),
               ctx.record(Measurement("iperf3", "sent_throughput", 1.0, "bit/s", params))]
    (row,) = sweep_rows(records)
    assert row["Requested_Throughput"] == 50e6 and row["Packet_Size"] == 1472.0
    assert row["Receive_Throughput"] == 49e6
    assert row["Median_RTT"] is None and row["CPU_Utilisation"] is None


def test_write_wide_csv_empty_cells_and_extra_columns(tmp_path):
    rows = [{**dict.fromkeys(WIDE_COLUMNS), "Requested_Throughput": 1e7, "Stdev_RTT": 0.1 + 0.2,
             "Idle_Cycles": 5}]
    out = tmp_path / "w.csv"
    write_wide_csv(out, rows)
    assert out.read_text() == f"{HEADER},Idle_Cycles\n10000000,,,,,,,0.30000000000000004,,,5\n"


def test_sweep_rows_refuses_two_runs_mixed_together():
    records = import_file("ipbench", SAMPLE, setup="board")
    other = [Record(**{**r.as_row(), "run_id": "r2", "value": r.value + 1}) for r in records[:9]]
    with pytest.raises(JobError, match=r"requested=10000000: two values of requested_throughput"):
        sweep_rows(records + other)
    same = [Record(**{**r.as_row(), "run_id": "r2"}) for r in records[:9]]
    assert len(sweep_rows(records + same)) == 13  # identical duplicates are harmless


def test_sweep_rows_needs_requested():
    ctx = RunContext(run_id="r1", target="t", arch="a", setup="s", image="i", suite="network")
    with pytest.raises(JobError, match="no requested=<bit/s>"):
        sweep_rows([ctx.record(Measurement("sweep", "rtt_min", 1.0, "us", {"packet_size": 64}))])


# --- iperf3 imports --------------------------------------------------------------------------


def test_import_iperf3_json():
    records = import_file("iperf3", DATA / "iperf3-udp.json", setup="qemu")
    assert {r.benchmark for r in records} == {"iperf3"}
    assert {r.suite for r in records} == {"network"}
    assert {r.run_id for r in records} == {run_id_of((DATA / "iperf3-udp.json").read_bytes(), {
        "importer": "iperf3", "setup": "qemu", "target": "unknown", "cpu_fraction": False, "decrypt": False})}
    by_metric = {r.metric: r.value for r in records}
    assert by_metric["received_throughput"] == 49956176.2388671


def test_import_iperf3_text_of_several_runs():
    records = import_file("iperf3", DATA / "iperf3-two-runs.txt", setup="board")
    runs = {(parse_params(r.params)["run"], r.repeat) for r in records}
    assert runs == {("0", 0), ("1", 1)}


def test_import_iperf3_failures_name_the_file(tmp_path):
    with pytest.raises(BenchmarkError, match="Connection refused"):
        import_file("iperf3", DATA / "iperf3-refused.json", setup="x")
    path = write(tmp_path, "hello\n", "junk.txt")
    with pytest.raises(ParseError, match=rf"^{path}: iperf3 output: no run summary"):
        import_file("iperf3", path, setup="x")
    with pytest.raises(JobError, match="captured output not found"):
        import_file("iperf3", tmp_path / "missing.json", setup="x")


# --- rows without the trailing cycle columns (the lab's DPDK files) ---------------------------

DPDK_HEADER = ("Requested_Throughput,Receive_Throughput,Send_Throughput,Packet_Size,Minimum_RTT,Average_RTT,"
               "Maximum_RTT,Stdev_RTT,Median_RTT,Idle_Cycles,Total_Cycles")


def test_row_missing_only_the_cycle_columns_is_imported_with_a_warning(tmp_path):
    text = (f"{DPDK_HEADER}\n100000000,99000000,100000000,1472,20,25,90,3.5,24,0\n"
            "200000000,199000000,200000000,1472,21,26,95,3.6,25,500,1000\n")
    warnings: list[str] = []
    records = import_file("ipbench", write(tmp_path, text), setup="dpdk", warn=warnings.append)
    assert len(warnings) == 1 and "line 2: 10 fields, the header has 11: no Total_Cycles" in warnings[0]
    assert "no CPU_Utilisation for this row" in warnings[0]
    first = {r.metric: r.value for r in records if "requested=100000000;" in r.params + ";"}
    assert first["rtt_median"] == 24 and "cpu_utilisation" not in first
    second = {r.metric: r.value for r in records if "requested=200000000" in r.params}
    assert second["cpu_utilisation"] == 50.0


def test_row_with_cpu_column_missing_only_cycles_keeps_its_cpu(tmp_path):
    text = f"{HEADER},Idle_Cycles,Total_Cycles\n10000000,9995659,9996133,1472,58,92,481,23.79,87,3.3\n"
    warnings: list[str] = []
    records = import_file("ipbench", write(tmp_path, text), setup="x", warn=warnings.append)
    assert "no Idle_Cycles,Total_Cycles" in warnings[0] and "no CPU_Utilisation" not in warnings[0]
    assert {r.metric: r.value for r in records}["cpu_utilisation"] == 3.3


def test_row_missing_a_required_field_is_still_an_error(tmp_path):
    text = f"{DPDK_HEADER}\n100000000,99000000,100000000,1472,20,25,90,3.5\n"
    with pytest.raises(ParseError, match=r"line 2: 8 fields, the header has 11 \(missing Median_RTT,Idle_Cycles"):
        import_file("ipbench", write(tmp_path, text), setup="x", warn=lambda _: None)


def test_farm_import_ipbench_warns_naming_the_line(tmp_path):
    import subprocess
    import sys

    src = write(tmp_path, f"{DPDK_HEADER}\n100000000,99000000,100000000,1472,20,25,90,3.5,24,0\n")
    proc = subprocess.run([sys.executable, "-m", "farm.cli", "import", "ipbench", str(src), "--setup", "dpdk",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr
    assert f"farm: warning: {src}: ipbench CSV line 2: 10 fields" in proc.stderr
    assert "rtt_median" in (tmp_path / "out" / "results.csv").read_text()
