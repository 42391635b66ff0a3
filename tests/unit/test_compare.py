"""farm.results.compare on small result directories written with write_records."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from farm.errors import JobError, ParseError
from farm.results.compare import compare, load_result_dir
from farm.results.compare_outputs import to_markdown, write_compare
from farm.results.csvout import write_records
from farm.results.record import Record

AES = ("crypto", "openssl-speed", "algorithm=aes-128-gcm;block=16384", "throughput", "bytes/s")
CRC = ("storage", "isal", "function=crc32_ieee;mode=cold", "throughput", "bytes/s")
CPUID = ("virt", "vmexit", "test=cpuid", "cycles", "cycles")
XOR = ("storage", "isal", "function=xor_gen;mode=warm", "throughput", "bytes/s")


def rec(key, value, *, target, setup="default", repeat=0, run_id="r1"):
    suite, benchmark, params, metric, unit = key
    return Record(run_id=run_id, timestamp="2024-05-01T10:00:00.000+00:00", target=target,
                  arch="arm64", setup=setup, image="img", suite=suite, benchmark=benchmark,
                  params=params, repeat=repeat, metric=metric, value=value, unit=unit)


def result_dir(root: Path, name: str, records) -> Path:
    d = root / name
    d.mkdir()
    write_records(d / "results.csv", records)
    return d


@pytest.fixture
def dirs(tmp_path):
    board = result_dir(tmp_path, "board", [
        # four repeats: even n, the median is the mean of the middle two (200 and 300)
        *(rec(AES, v, target="maaxboard", repeat=i) for i, v in enumerate([100.0, 300.0, 400.0, 200.0])),
        rec(CRC, 10.0, target="maaxboard", repeat=0), rec(CRC, 20.0, target="maaxboard", repeat=1),
        rec(CPUID, 3374.0, target="maaxboard"),  # only on the board
    ])
    twin = result_dir(tmp_path, "twin", [
        rec(AES, 500.0, target="qemu-maaxboard"),
        *(rec(CRC, v, target="qemu-maaxboard", repeat=i) for i, v in enumerate([30.0, 50.0, 40.0])),
        rec(XOR, 7.0, target="qemu-maaxboard"),  # only on the twin
    ])
    return board, twin


def test_medians_counts_ratios_and_labels(dirs):
    c = compare([load_result_dir(d) for d in dirs])
    # both inputs have setup "default": the directory names tell them apart
    assert c.labels == ("default@board", "default@twin")
    assert [(col.target, col.setup, col.source) for col in c.columns] == [
        ("maaxboard", "default", "board"), ("qemu-maaxboard", "default", "twin")]
    rows = {tuple(getattr(r.key, f) for f in ("suite", "benchmark", "params", "metric", "unit")): r
            for r in c.rows}
    assert rows[AES].medians == (250.0, 500.0)
    assert rows[AES].counts == (4, 1)
    assert rows[AES].ratio == 2.0
    assert rows[CRC].medians == (15.0, 40.0)
    assert rows[CRC].ratio == pytest.approx(40 / 15)
    assert rows[CPUID].medians == (3374.0, None) and rows[CPUID].ratio is None
    assert rows[XOR].medians == (None, 7.0) and rows[XOR].counts == (0, 1)
    # rows keep the order in which keys first appear
    assert [r.key.benchmark + r.key.params for r in c.rows][:2] == [AES[1] + AES[2], CRC[1] + CRC[2]]


def test_missing_pairs_are_listed(dirs):
    c = compare([load_result_dir(d) for d in dirs])
    assert [(m.key.params, m.present, m.absent) for m in c.missing] == [
        ("test=cpuid", ("default@board",), ("default@twin",)),
        ("function=xor_gen;mode=warm", ("default@twin",), ("default@board",)),
    ]


def test_write_compare_files(dirs, tmp_path):
    c = compare([load_result_dir(d) for d in dirs])
    paths = write_compare(c, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["compare.csv", "compare.md", "compare.png"]

    with open(paths["csv"], newline="") as f:
        table = list(csv.reader(f))
    assert table[0] == ["suite", "benchmark", "params", "metric", "unit",
                        "default@board", "default@board_n", "default@twin", "default@twin_n", "ratio",
                        "default@board_cv", "default@board_ci_low", "default@board_ci_high",
                        "default@twin_cv", "default@twin_ci_low", "default@twin_ci_high",
                        "ratio_estimate", "ratio_ci_low", "ratio_ci_high", "ratio_verdict", "flagged"]
    # fewer than 5 boots a side: the ratio is exported as inconclusive, its number apart
    assert table[1][:10] == [*AES, "250.0", "4", "500.0", "1", "inconclusive"]
    assert table[1][16:] == ["2.0", "", "", "inconclusive", "0"]
    assert table[2][:10] == [*CRC, "15.0", "2", "40.0", "3", "inconclusive"]
    assert table[2][16] == repr(40 / 15)
    assert table[3][:10] == [*CPUID, "3374.0", "1", "", "0", ""]
    assert table[4][:10] == [*XOR, "", "0", "7.0", "1", ""]
    assert table[3][10:] == [""] * 10 + ["0"]  # one value: no CV, no interval, no ratio
    assert len(table) == 5

    md = paths["md"].read_text()
    assert ("| crypto | openssl-speed | algorithm=aes-128-gcm;block=16384 | throughput | bytes/s | 250 B/s (4) | "
            "500 B/s (1) | **inconclusive** 2.00 no interval, n 4/1 (fewer than 5 boots a side) |") in md
    assert "| 15 B/s (2) | 40 B/s (3) | **inconclusive** 2.67 no interval, n 2/3 (fewer than 5 boots a side) |" in md
    assert "0 of 2 ratios conclusive, 2 inconclusive." in md
    assert "## Missing" in md
    assert "- virt / vmexit `test=cpuid` cycles (cycles): only in default@board; not in default@twin" in md
    assert "- storage / isal `function=xor_gen;mode=warm` throughput (bytes/s): only in default@twin; not in default@board" in md

    png = paths["png"].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(png) > 5000


def test_three_inputs_get_a_ratio_per_later_column(dirs, tmp_path):
    patched = result_dir(tmp_path, "patched", [
        rec(AES, 1000.0, target="maaxboard", setup="patched"),
        rec(CRC, 30.0, target="maaxboard", setup="patched"),
    ])
    c = compare([load_result_dir(d) for d in (*dirs, patched)])
    assert c.labels == ("default@board", "default@twin", "patched")
    paths = write_compare(c, tmp_path / "out3")
    with open(paths["csv"], newline="") as f:
        table = list(csv.reader(f))
    assert table[0][5:14] == ["default@board", "default@board_n", "default@twin", "default@twin_n",
                              "patched", "patched_n", "ratio",
                              "default@twin/default@board", "patched/default@board"]
    assert table[1][11:14] == ["inconclusive"] * 3  # one boot of patched: ratio = last/first = 1000/250
    assert table[0][23:] == ["ratio_estimate", "ratio_ci_low", "ratio_ci_high", "ratio_verdict",
                             "default@twin/default@board_estimate", "default@twin/default@board_ci_low",
                             "default@twin/default@board_ci_high", "default@twin/default@board_verdict",
                             "patched/default@board_estimate", "patched/default@board_ci_low",
                             "patched/default@board_ci_high", "patched/default@board_verdict", "flagged"]
    assert table[1][23] == "4.0" and table[2][23] == "2.0"
    assert paths["png"].read_bytes()[:4] == b"\x89PNG"
    md = paths["md"].read_text()
    assert "| default@twin/default@board [95 % CI], n | patched/default@board [95 % CI], n |" in md
    assert "`test=cpuid` cycles (cycles): only in default@board; not in default@twin, patched" in md


def test_one_input_with_two_targets_gives_two_columns(tmp_path):
    both = result_dir(tmp_path, "both", [
        rec(AES, 100.0, target="maaxboard"), rec(AES, 300.0, target="qemu-maaxboard"),
    ])
    c = compare([load_result_dir(both)])
    assert c.labels == ("maaxboard/default", "qemu-maaxboard/default")
    assert c.rows[0].ratio == 3.0
    assert c.missing == ()


def test_ratio_against_zero_is_empty(tmp_path):
    a = [rec(CPUID, 0.0, target="a", setup="x")]
    b = [rec(CPUID, 5.0, target="b", setup="y")]
    c = compare([("a", a), ("b", b)])
    assert c.labels == ("x", "y")
    assert c.rows[0].ratio is None
    assert "| 0 cycles (1) | 5 cycles (1) | — |" in to_markdown(c)


def test_nothing_to_compare(tmp_path):
    with pytest.raises(JobError, match="nothing to compare"):
        compare([("a", [rec(AES, 1.0, target="t", repeat=0), rec(AES, 2.0, target="t", repeat=1)])])
    with pytest.raises(JobError, match="b: no records"):
        compare([("a", [rec(AES, 1.0, target="t")]), ("b", [])])
    with pytest.raises(JobError, match="no inputs"):
        compare([])


def test_load_result_dir_errors(tmp_path):
    with pytest.raises(JobError, match=f"{tmp_path / 'nope'}: not a result directory"):
        load_result_dir(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(JobError, match=f"{tmp_path / 'empty' / 'results.csv'}: no such file"):
        load_result_dir(tmp_path / "empty")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "results.csv").write_text("not,a,header\n")
    with pytest.raises(ParseError, match="line 1"):
        load_result_dir(tmp_path / "bad")


def test_two_setups_of_one_name_are_refused_not_pooled(tmp_path):
    """A run made before pipelines refused duplicate setup names: a 4-core and a 1-core setup both
    called 'default' must not become one median."""
    four = [rec(AES, 940e6, target="board", repeat=r) for r in range(3)]
    one = [rec(AES, 240e6, target="board", repeat=r) for r in range(3)]
    mixed = load_result_dir(result_dir(tmp_path, "mixed", four + one))
    other = load_result_dir(result_dir(tmp_path, "other", [rec(AES, 900e6, target="twin", run_id="r2")]))
    with pytest.raises(JobError, match="compare: mixed: run r1 has two records of .* setup 'default', "
                                       "repeat 0 .*two setups of one name"):
        compare([other, mixed])


def _sweep(target, setup, received_factor, rtt_factor):
    out = []
    for rate in (10e6, 50e6, 100e6):
        params = f"method=ipbench-echo;packet_size=1472;requested={int(rate)}"
        for metric, value, unit in (("requested_throughput", rate, "bit/s"), ("sent_throughput", rate, "bit/s"),
                                    ("received_throughput", rate * received_factor, "bit/s"),
                                    ("rtt_min", 100 * rtt_factor, "us"), ("rtt_median", 200 * rtt_factor, "us"),
                                    ("rtt_max", 900 * rtt_factor, "us"), ("cpu_utilisation", 40.0, "percent")):
            out.append(rec(("network", "sweep", params, metric, unit), value, target=target, setup=setup))
    return out


def boots(key, centre, *, target, setup, n=5, spread=0.01):
    """``n`` boots of one value each, spread by +-``spread`` around ``centre``."""
    return [rec(key, centre * (1 + spread * (i - n // 2) / n), target=target, setup=setup, repeat=i)
            for i in range(n)]


def test_sweeps_are_curves_and_ratios_are_coloured_better_or_worse(tmp_path):
    """compare.png was 1000x3994 px of bars including requested_throughput (always 1.00), all one colour."""
    mpimg = pytest.importorskip("matplotlib.image")
    bare = result_dir(tmp_path, "bare", [*_sweep("board", "bare-linux", 1.0, 1.0),
                                        *boots(AES, 100.0, target="board", setup="bare-linux"),
                                        *boots(CPUID, 1000.0, target="board", setup="bare-linux")])
    guest = result_dir(tmp_path, "guest", [*_sweep("board", "kvm-guest", 0.8, 2.0),
                                          *boots(AES, 150.0, target="board", setup="kvm-guest"),  # faster: better
                                          *boots(CPUID, 3000.0, target="board", setup="kvm-guest")])  # more cycles: worse
    c = compare([load_result_dir(bare), load_result_dir(guest)])
    assert [label for label, _ in c.sweeps] == ["bare-linux", "kvm-guest"]
    assert [len(rows) for _, rows in c.sweeps] == [3, 3]

    from farm.results.compare import verdict
    from farm.results.compare_plot import ratio_bars
    bars = [b for panel in ratio_bars(c).values() for b in panel]
    assert {(b.row.key.benchmark, b.verdict) for b in bars} == {("openssl-speed", "better"), ("vmexit", "worse")}
    assert verdict(1.005, 1) == "same" and verdict(0.5, -1) == "better" and verdict(2.0, 0) == "unknown"

    paths = write_compare(c, tmp_path / "out")
    assert set(paths) == {"csv", "md", "png", "sweep_png"}
    image = mpimg.imread(paths["png"])
    assert image.shape[0] <= 600  # two bars, not a page of sweep points
    rgb = {tuple(int(round(v * 255)) for v in px[:3]) for row in image[::2] for px in row[::2]}
    assert (0x2e, 0x9e, 0x44) in rgb and (0xd0, 0x34, 0x2c) in rgb  # a green bar and a red one
    sweep = mpimg.imread(paths["sweep_png"])
    colours = {tuple(int(round(v * 255)) for v in px[:3]) for row in sweep[::2] for px in row[::2]}
    assert (0x1f, 0x77, 0xb4) in colours and (0xff, 0x7f, 0x0e) in colours  # each setup its own colour (C0, C1)


def test_a_bar_is_judged_by_its_benchmarks_registration_before_its_unit(tmp_path):
    """iperf3's host_cpu is the lab host's CPU, in percent: its registration says it has no better direction
    (a loaded lab host moves it, the target does not), so a rise of it is no worse bar, as another percent is."""
    host_cpu = ("network", "iperf3", "protocol=tcp", "host_cpu", "percent")
    loss = ("network", "iperf3", "protocol=udp", "lost_percent", "percent")
    before = result_dir(tmp_path, "before", [*boots(host_cpu, 10.0, target="board", setup="s"), *boots(loss, 1.0, target="board", setup="s")])
    after = result_dir(tmp_path, "after", [*boots(host_cpu, 30.0, target="board", setup="s"), *boots(loss, 3.0, target="board", setup="s")])
    from farm.results.compare_plot import ratio_bars

    bars = [b for panel in ratio_bars(compare([load_result_dir(before), load_result_dir(after)])).values() for b in panel]
    assert {(b.row.key.metric, b.verdict) for b in bars} == {("host_cpu", "unknown"), ("lost_percent", "worse")}


def test_cli_compare_of_one_run_directory_compares_its_setups(tmp_path):
    """`farm compare RUN_DIR` of a run with two setups (vm-vs-bare): the first setup is the reference;
    a run of one setup has nothing to compare and says so."""
    from farm.cli import main
    from farm.results.csvout import write_records
    from farm.results.record import Record

    def row(setup: str, value: float) -> Record:
        return Record(run_id="r1", timestamp="2026-12-01T00:00:00Z", target="twin", arch="arm64", setup=setup,
                      image="img", suite="crypto", benchmark="openssl-speed", params="algorithm=sha256;block=16384",
                      repeat=0, metric="throughput", value=value, unit="B/s")

    run = tmp_path / "run"
    run.mkdir()
    write_records(run / "results.csv", [row("bare", 100.0), row("kvm-guest", 98.0)])
    assert main(["compare", str(run), "--out", str(tmp_path / "cmp")]) == 0
    text = (tmp_path / "cmp" / "compare.csv").read_text()
    assert "kvm-guest" in text and "0.98" in text
    alone = tmp_path / "alone"
    alone.mkdir()
    write_records(alone / "results.csv", [row("bare", 100.0)])
    assert main(["compare", str(alone), "--out", str(tmp_path / "cmp2")]) == 2
