"""Every form of the lab's files imports with every column, and `farm compare` of two imports gives the
lab's own ratios exactly: ipbench CSVs with and without the cycle columns (and the sDDF benchmark's
header), iperf3 JSON, text, --bidir and the hand-annotated "notebook" (tests/data/README.md)."""

from __future__ import annotations

import csv
import re
import statistics
from pathlib import Path

import pytest

from farm.errors import ParseError
from farm.measure import iperf3
from farm.measure.iperf3_notebook import bitrate_text, parse_annotation
from farm.results.importers import import_file
from farm.results.ipbench import sweep_rows, write_wide_csv
from farm.results.identity import identity_params
from tests.conftest import run_farm

DATA = Path(__file__).resolve().parents[1] / "data"
SAMPLE = DATA / "ipbench-sample.csv"
HEADER10 = ("Requested_Throughput,Receive_Throughput,Send_Throughput,Packet_Size,Minimum_RTT,Average_RTT,"
            "Maximum_RTT,Stdev_RTT,Median_RTT,CPU_Utilisation")


# --- ipbench CSV ----------------------------------------------------------------------------------


def test_the_sddf_benchmarks_header_keeps_bad_packets_and_the_cycles(tmp_path):
    # au-ts/sddf examples/echo_server/benchmark.py: ...,Median_RTT,Bad_Packets,Idle_Cycles,Total_Cycles
    path = tmp_path / "sddf.csv"
    path.write_text("Requested_Throughput,Receive_Throughput,Send_Throughput,Packet_Size,Minimum_RTT,Average_RTT,"
                    "Maximum_RTT,Stdev_RTT,Median_RTT,Bad_Packets,Idle_Cycles,Total_Cycles\n"
                    "10000000,10000072,10000072,1460,124,184,583,18.57,179,0,239572505741,254026200059\n")
    by = {r.metric: r for r in import_file("ipbench", path, setup="sel4")}
    assert (by["bad_packets"].value, by["bad_packets"].unit) == (0, "count")
    assert (by["idle_cycles"].value, by["total_cycles"].value, by["idle_cycles"].unit) == (
        239572505741, 254026200059, "ticks")
    assert by["cpu_utilisation"].value == pytest.approx(100 * (1 - 239572505741 / 254026200059))
    wide = tmp_path / "wide.csv"  # written back with every column
    write_wide_csv(wide, sweep_rows(by.values()))
    assert wide.read_text().splitlines() == [
        f"{HEADER10},Bad_Packets,Idle_Cycles,Total_Cycles",
        f"10000000,10000072,10000072,1460,124,184,583,18.57,179,{by['cpu_utilisation'].value!r},0,239572505741,"
        "254026200059"]


def test_ipbenchs_controller_line_with_an_sddf_target_has_an_empty_cpu_cell(tmp_path):
    # latency_output prints "...,median," and the target's ",idle,total": the CPU column is empty
    path = tmp_path / "ctl.csv"
    path.write_text(f"{HEADER10},Idle_Cycles,Total_Cycles\n10000000,9995659,9996133,1472,58,92,481,23.79,87,,9000,12000\n")
    by = {r.metric: r.value for r in import_file("ipbench", path, setup="x")}
    assert by["cpu_utilisation"] == 25.0 and by["idle_cycles"] == 9000


LAB = DATA / "lab"  # the lab's own tables (tests/data/README.md)


def test_every_table_of_the_labs_own_files_imports_every_row():
    # issue #45: the QEMU/KVM table's header spells CPU_Utilsation (the lab's spelling) and was refused
    tables = sorted(LAB.glob("ipbench-*.csv"))
    assert len(tables) == 5
    for table in tables:
        rows = [line for line in table.read_text().splitlines()[1:] if line.strip()]
        records = import_file("ipbench", table, setup="lab", warn=lambda text: None)
        assert len({r.params for r in records if r.metric == "received_throughput"}) == len(rows), table.name
    kvm = {r.params.split(";")[2]: r.value for r in import_file("ipbench", LAB / "ipbench-qemu-kvm-4cores-1.5ghz.csv",
                                                                  setup="lab") if r.metric == "cpu_utilisation"}
    assert kvm["requested=100000000"] == 91.7


def test_a_column_farm_does_not_know_is_named_not_imported(tmp_path):
    path = tmp_path / "extra.csv"
    path.write_text(f"Run,{HEADER10}\n1,10000000,9995659,9996133,1472,58,92,481,23.79,87,3.3\n")
    warnings: list[str] = []
    records = import_file("ipbench", path, setup="x", warn=warnings.append)
    assert len(records) == 9
    assert warnings == [f"{path}: ipbench CSV line 1: column(s) Run not imported (not ipbench's)"]


@pytest.mark.parametrize("cycles", [True, False])
def test_compare_of_two_ipbench_imports_gives_the_labs_ratios(tmp_path, cycles):
    """Two lab files of the same loads: every compare.csv ratio is the second file's number over the
    first's, exactly (one value a side: the median is the value)."""
    rows = list(csv.reader(SAMPLE.read_text().splitlines()))
    if not cycles:
        rows = [row[:10] for row in rows]
    other = [rows[0]] + [[row[0], str(int(row[1]) // 2), row[2], row[3], *(str(float(v) * 3) for v in row[4:])]
                         for row in rows[1:]]
    dirs = []
    for name, table in (("a", rows), ("b", other)):
        path = tmp_path / f"{name}.csv"
        path.write_text("\n".join(",".join(row) for row in table) + "\n")
        dirs.append(tmp_path / f"imp-{name}")
        assert run_farm("import", "ipbench", str(path), "--setup", name, "--out", str(dirs[-1])).returncode == 0
    proc = run_farm("compare", *map(str, dirs), "--out", str(tmp_path / "cmp"))
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "cmp" / "compare.csv") as f:
        # one import a side: n 1/1, so `ratio` says inconclusive; the estimate is the lab's ratio
        got = {(r["params"], r["metric"]): float(r["ratio_estimate"]) for r in csv.DictReader(f)
               if r["ratio_estimate"]}
    columns = {"Receive_Throughput": "received_throughput", "Minimum_RTT": "rtt_min", "Average_RTT": "rtt_avg",
               "Maximum_RTT": "rtt_max", "Stdev_RTT": "rtt_stdev", "Median_RTT": "rtt_median",
               "CPU_Utilisation": "cpu_utilisation", "Idle_Cycles": "idle_cycles", "Total_Cycles": "total_cycles"}
    header = rows[0]
    expected = {}
    for a, b in zip(rows[1:], other[1:]):
        params = f"method=ipbench;packet_size={a[3]};requested={a[0]}"
        for column, metric in columns.items():
            if column in header:
                i = header.index(column)
                cpu = metric in ("cpu_utilisation", "idle_cycles", "total_cycles")  # the lab's board's CPU
                expected[(f"cores=board;{params}" if cpu else params, metric)] = float(b[i]) / float(a[i])
    assert expected and {k: got[k] for k in expected} == expected
    assert {m for _, m in got} >= {"idle_cycles", "total_cycles"} if cycles else "idle_cycles" not in {m for _, m in got}


# --- iperf3 notebooks -----------------------------------------------------------------------------


@pytest.mark.parametrize("note, bitrate", [
    ("bandwidth=100M", "100M"), ("bandwith=200M", "200M"), ("b 100M", "100M"), ("-b 100M", "100M"),
    ("100Mb/s", "100M"), ("100M", "100M"), ("1.5G", "1.5G"), ("1000M", "1G"), ("500k", "500K"), (" bitrate=64Kbps", "64K"),
])
def test_the_annotations_the_lab_writes(note, bitrate):
    assert parse_annotation(note, 1) == bitrate


@pytest.mark.parametrize("note", ["100MB/s", "fast", "bandwidth=", "-b", "0M"])
def test_an_annotation_it_cannot_read_names_the_line(note):
    with pytest.raises(ParseError, match=rf"iperf3 output line 7: cannot read the requested load"):
        parse_annotation(note, 7)


def test_bitrate_text():
    assert [bitrate_text(b) for b in (1e8, 1.5e9, 64e3, 1472e3, 999)] == ["100M", "1.5G", "64K", "1.472M", "999"]


def test_a_notebook_imports_with_the_requested_load_and_repeats(tmp_path):
    records = import_file("iperf3", DATA / "iperf3-notebook.txt", setup="lab")
    received = [(r.params, r.repeat, r.value) for r in records if r.metric == "received_throughput"]
    assert received == [("bitrate=50M;direction=host-to-target;protocol=udp", 0, 50e6),
                        ("bitrate=100M;direction=host-to-target;protocol=udp", 0, 99.7e6),
                        ("bitrate=200M;direction=host-to-target;protocol=udp", 0, 193e6),
                        ("bitrate=100M;direction=host-to-target;protocol=udp", 1, 100e6),
                        ("bitrate=200M;direction=host-to-target;protocol=udp", 1, 193e6)]
    loss = [r.value for r in records if r.metric == "loss" and "200M" in r.params]
    assert loss == [pytest.approx(100 * 1109 / 33955), pytest.approx(100 * 1143 / 33954)]


def test_a_bidir_notebook_gives_both_directions_of_each_load():
    ms = iperf3.parse_text((DATA / "iperf3-notebook-bidir.txt").read_text())
    by = {(m.params["bitrate"], m.params["bidir"], m.metric): m.value for m in ms}
    assert by[("200M", "client-to-server", "received_throughput")] == 192e6
    assert by[("200M", "server-to-client", "received_throughput")] == 191e6
    assert by[("100M", "server-to-client", "sent_throughput")] == 100e6
    assert {k[:2] for k in by} == {("200M", "client-to-server"), ("200M", "server-to-client"),
                                   ("100M", "client-to-server"), ("100M", "server-to-client")}


def test_a_notebook_it_cannot_read_is_refused_with_file_and_line(tmp_path):
    lines = (DATA / "iperf3-notebook.txt").read_text().splitlines()
    lines[8] = lines[8].replace("bandwith=200M", "bandwith=fast")
    path = tmp_path / "notes.txt"
    path.write_text("\n".join(lines) + "\n")
    proc = run_farm("import", "iperf3", str(path), "--setup", "lab", "--out", str(tmp_path / "imp"))
    assert proc.returncode == 2
    assert f"{path}: iperf3 output line 9: cannot read the requested load 'bandwith=fast'" in proc.stderr
    assert not (tmp_path / "imp").exists()


def test_compare_of_two_notebooks_gives_their_ratios(tmp_path):
    text = (DATA / "iperf3-notebook.txt").read_text()
    halved = re.sub(r"(\d+(?:\.\d+)?) Mbits/sec", lambda m: f"{float(m[1]) / 2:g} Mbits/sec", text)
    dirs = []
    for name, body in (("a", text), ("b", halved)):
        (tmp_path / f"{name}.txt").write_text(body)
        dirs.append(tmp_path / f"imp-{name}")
        proc = run_farm("import", "iperf3", str(tmp_path / f"{name}.txt"), "--setup", name, "--out", str(dirs[-1]))
        assert proc.returncode == 0, proc.stderr
    proc = run_farm("compare", *map(str, dirs), "--out", str(tmp_path / "cmp"))
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "cmp" / "compare.csv") as f:
        got = {(r["params"], r["metric"]): float(r["ratio_estimate"]) for r in csv.DictReader(f)
               if r["metric"] == "received_throughput"}
    # 100M and 200M were measured twice (medians of two): the ratio of the medians, 1/2 at each load
    assert got == {("bitrate=50M;direction=host-to-target;protocol=udp", "received_throughput"): 0.5,
                   ("bitrate=100M;direction=host-to-target;protocol=udp", "received_throughput"): 0.5,
                   ("bitrate=200M;direction=host-to-target;protocol=udp", "received_throughput"): 0.5}


def test_live_bidir_command():
    argv = iperf3.client_command("127.0.0.1", 5201, duration=2, protocol="udp", bitrate="200M", length=1472,
                                 bidir=True)
    assert argv[-1] == "--bidir" and ["-b", "200M"] == argv[argv.index("-b"):][:2]
    with pytest.raises(Exception, match="reverse and bidir"):
        iperf3.client_command("127.0.0.1", 5201, duration=2, reverse=True, bidir=True)


@pytest.mark.parametrize("name", ["iperf3-udp.json", "iperf3-bidir-udp.json", "iperf3-bidir-udp.txt",
                                  "iperf3-two-runs.txt", "iperf3-notebook-bidir.txt"])
def test_compare_of_two_iperf3_imports_gives_the_files_ratios(tmp_path, name):
    """Each iperf3 form the lab holds, and a copy with its rates scaled: every ratio compare.csv gives is
    the second file's number over the first's, as the files say them."""
    text = (DATA / name).read_text()
    if name.endswith(".json"):
        other = re.sub(r'("bits_per_second":\s*)([0-9.e+]+)', lambda m: f"{m[1]}{float(m[2]) * 0.7!r}", text)
    else:
        other = re.sub(r"([0-9.]+) ([KMG]?)bits/sec", lambda m: f"{float(m[1]) * 0.7:.3g} {m[2]}bits/sec", text)
    paths = []
    for label, body in (("a", text), ("b", other)):
        paths.append(tmp_path / f"{label}-{name}")
        paths[-1].write_text(body)
    dirs = []
    for label, path in zip("ab", paths):
        dirs.append(tmp_path / f"imp-{label}")
        proc = run_farm("import", "iperf3", str(path), "--setup", label, "--out", str(dirs[-1]))
        assert proc.returncode == 0, proc.stderr
    proc = run_farm("compare", *map(str, dirs), "--out", str(tmp_path / "cmp"))
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "cmp" / "compare.csv") as f:
        got = {(r["params"], r["metric"]): float(r["ratio_estimate"]) for r in csv.DictReader(f)
               if r["metric"].endswith("_throughput")}
    a, b = (_throughputs(path) for path in paths)
    assert got and got == {key: b[key] / a[key] for key in a}
    # and, apart from farm's own parser: every rate of the second file is 0.7 of the first's (a text form's
    # rates rounded to 3 digits), so a parser that read another column (MBytes, unscaled) gives 1.0 here
    assert all(abs(ratio - 0.7) < 0.7 * 0.01 for ratio in got.values()), got


def _throughputs(path: Path) -> dict[tuple[str, str], float]:
    """(key params, metric) -> the median of the file's values (one run a key, or a notebook's repeats)."""
    by: dict[tuple[str, str], list[float]] = {}
    for r in import_file("iperf3", path, setup="x"):
        if r.metric.endswith("_throughput"):
            by.setdefault((identity_params(r.benchmark, r.params), r.metric), []).append(r.value)
    return {key: statistics.median(values) for key, values in by.items()}
