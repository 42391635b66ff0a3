"""farm.results.report: summary.md and metrics.txt of a run directory, from its files alone."""

from __future__ import annotations

import json
import re
import shlex
import sys
import types

import pytest

from farm.cli import main
from farm.errors import EXIT_JOB_ERROR, EXIT_OK, JobError
from farm.results.csvout import write_records
from farm.results.junit import Case, write_junit
from farm.results.record import Record
from farm.measure.units import human
from farm.results.markdown_text import md_escape
from farm.results.openmetrics import label_value, metric_name, metrics_text
from farm.results.report import regenerate, write_summary
from farm.results.rundata import load_run


def rec(setup, benchmark, suite, params, metric, value, unit, repeat=0, target="maaxboard-twin"):
    return Record(run_id="20261129-224818-e762", timestamp="2026-11-29T22:48:15.519+00:00", target=target,
                  arch="arm64", setup=setup, image="maaxboard-bench", suite=suite, benchmark=benchmark,
                  params=params, repeat=repeat, metric=metric, value=value, unit=unit)


AES = "algorithm=aes-128-gcm;block=16384;seconds=1"
AES_KEY = "algorithm=aes-128-gcm;block=16384"  # seconds= is a run length: not part of the key
NASTY = 'label=a "quoted" #hash \\back'


@pytest.fixture
def run(tmp_path):
    """A run directory as farm run leaves it: three repeats of iperf3 on two setups, openssl once,
    a benchmark that failed, an infrastructure error, and a parameter text with awkward characters."""
    d = tmp_path / "20261129-224818-e762"
    d.mkdir()
    records = []
    for setup, base in (("default", 940e6), ("one-core", 610e6)):
        for repeat, k in enumerate((1.0, 1.01, 0.99)):
            records += [rec(setup, "iperf3", "network", "protocol=tcp", "received_throughput", base * k, "bit/s", repeat),
                        rec(setup, "iperf3", "network", "protocol=tcp", "retransmits", float(repeat), "count", repeat)]
    records += [rec("default", "openssl-speed", "crypto", AES, "throughput", 32139119.19, "bytes/s"),
                rec("default", "rtt", "network", NASTY, "rtt_median", 51.5, "us")]
    write_records(d / "results.csv", records)
    write_junit(d / "junit.xml", "farm.smoke", [
        Case("build", "farm.build", 0.0035, "pass"),
        Case("boot maaxboard-twin/default", "farm.boot", 4.2, "pass"),
        Case("network.iperf3 maaxboard-twin/default", "farm.bench.network", 3.4, "pass", output="5 records"),
        Case("crypto.openssl-speed maaxboard-twin/one-core", "farm.bench.crypto", 0.3, "failure",
             "openssl: speed: Unknown algorithm | <aes-999>\nsecond line"),
        Case("boot maaxboard-twin/two-core", "farm.boot", 60.0, "error", "U-Boot prompt not seen within 60 s"),
    ])
    (d / "run.json").write_text(json.dumps({
        "run_id": "20261129-224818-e762", "pipeline": "pipelines/smoke.yaml", "pipeline_name": "smoke",
        "who": "ci", "started": "2026-11-29T22:48:07.671+00:00", "finished": "2026-11-29T22:48:15.530+00:00",
        "status": "infrastructure-error", "farm_version": "0.1.0", "git_sha": "9c0c63c6761ff282c77ab298dc",
        "ci_job": "4711",
        # as farm run writes them (farm/run/runner.py: the boot_recorded and image_built events)
        "images": {"maaxboard-bench": {"dir": "/c/maaxboard-bench-745440545eb5", "name": "maaxboard-bench",
                                       "kernel_version": "6.1.0-57-arm64", "key": "745440545eb5aa"}},
        "targets": {"maaxboard-twin": {"env": "env/qemu-maaxboard.yaml", "arch": "arm64", "boots": [
            {"setup": "default", "repeat": 0, "image": "maaxboard-bench", "cpus": 4, "frequency_hz": 1.5e9,
             "frequency_source": "cpufreq", "kernel": "6.1.0-57-arm64", "boot_seconds": 4.21},
            {"setup": "two-core", "repeat": 0, "image": "maaxboard-bench",
             "failed": "U-Boot prompt not seen within 60 s", "failed_attempts": []}]}},
    }))
    return d


def test_summary(run):
    report = regenerate(run)
    md = report.summary.read_text()
    assert md.startswith("# farm run 20261129-224818-e762: infrastructure-error\n")
    assert "3 of 5 stages passed." in md
    assert "- pipeline **smoke** (`pipelines/smoke.yaml`)" in md
    assert "git 9c0c63c6761f" in md and "CI job 4711" in md
    assert ("target **maaxboard-twin** (default, repeat 0): 4 cpus @ 1500 MHz (cpufreq), kernel 6.1.0-57-arm64, "
            "booted in 4.2 s") in md
    assert "target **maaxboard-twin** (two-core, repeat 0): boot failed: U-Boot prompt not seen within 60 s" in md
    assert "image maaxboard-bench (kernel 6.1.0-57-arm64, key 745440545eb5)" in md
    assert "?" not in md.split("## Stages")[0]  # every fact run.json has is found

    # the stage table: one row per testcase, failures and errors stand out, first line of the message only
    assert "| build | pass | 0.0 s |  |" in md
    assert ("| crypto.openssl-speed maaxboard-twin/one-core | **failure** | 0.3 s | "
            "openssl: speed: Unknown algorithm \\| \\<aes-999> |") in md
    assert "| boot maaxboard-twin/two-core | **error** | 60.0 s | U-Boot prompt not seen within 60 s |" in md
    # key figures: a section per benchmark; median, n and range per target/setup/params/metric, in units
    # people read (Mbit/s, MB/s, µs), sizes in parameters in bytes
    assert md.index("### network.iperf3") < md.index("### crypto.openssl-speed") < md.index("### network.rtt")
    iperf = md.split("### network.iperf3")[1].split("###")[0]
    assert ("| maaxboard-twin | default | protocol=tcp | received_throughput | 940 Mbit/s | 3 | "
            "931 Mbit/s – 949 Mbit/s |") in iperf
    assert "| maaxboard-twin | one-core | protocol=tcp | received_throughput | 610 Mbit/s | 3 |" in iperf
    assert ("| maaxboard-twin | default | algorithm=aes-128-gcm; block=16384 B | throughput | 32.1 MB/s | 1 | - |"
            in md)
    assert "| rtt_median | 51.5 µs | 1 |" in md
    assert "| retransmits | 1 | 3 | 0 – 2 |" in md  # a count has no unit
    assert report.figures == 6
    # every table row has the same number of cells as its header: nothing broke a row
    for table in re.findall(r"(?:^\|.*\|\n)+", md, flags=re.M):
        widths = {len(re.split(r"(?<!\\)\|", row)) for row in table.splitlines()}
        assert len(widths) == 1, table


OPENMETRICS_SAMPLE = re.compile(
    r'^(?P<name>[a-zA-Z_][a-zA-Z0-9_]*)'
    r'\{(?P<labels>[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")*)\}'
    r' (?P<value>[-+]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|NaN|Inf))$')


def test_metrics_txt_is_openmetrics(run):
    text = regenerate(run).metrics.read_text()
    lines = text.splitlines()
    assert lines[-1] == "# EOF" and text.endswith("# EOF\n")
    samples = [line for line in lines if not line.startswith("#")]
    assert len(samples) == 6
    for line in samples:
        assert OPENMETRICS_SAMPLE.match(line), line
    assert ('farm_network_iperf3_received_throughput{target="maaxboard-twin",setup="default",'
            'params="protocol=tcp"} 940000000.0') in samples
    assert f'farm_crypto_openssl_speed_throughput{{target="maaxboard-twin",setup="default",params="{AES_KEY}"}} 32139119.19' in samples
    assert ('farm_network_rtt_rtt_median{target="maaxboard-twin",setup="default",'
            'params="label=a \\"quoted\\" %23hash \\\\back"} 51.5') in samples
    assert "# TYPE farm_network_iperf3_received_throughput gauge" in lines
    assert ("# HELP farm_network_iperf3_received_throughput network iperf3 received_throughput, median over "
            "repeats, in bit/s") in lines


def test_metrics_txt_parses_with_the_openmetrics_reference_parser(run):
    parser = pytest.importorskip("prometheus_client.openmetrics.parser", reason="prometheus-client is in the test extra")
    families = {f.name: f for f in parser.text_string_to_metric_families(regenerate(run).metrics.read_text())}
    iperf = families["farm_network_iperf3_received_throughput"]
    assert iperf.type == "gauge"
    values = {(s.labels["setup"], s.labels["params"]): s.value for s in iperf.samples}
    assert values == {("default", "protocol=tcp"): 940e6, ("one-core", "protocol=tcp"): 610e6}
    (rtt,) = families["farm_network_rtt_rtt_median"].samples
    assert rtt.labels["params"] == 'label=a "quoted" %23hash \\back'


def test_metrics_txt_as_gitlab_reads_it(run):
    """GitLab's parser: cut each line at '#', shell-split the rest, first word name, second value."""
    seen = {}
    for line in regenerate(run).metrics.read_text().splitlines():
        words = shlex.split(re.sub(r"#.*$", "", line))
        if not words:
            continue
        assert len(words) == 2, line
        seen[words[0]] = words[1]
    assert len(seen) == 6
    assert seen["farm_network_iperf3_received_throughput{target=maaxboard-twin,setup=default,params=protocol=tcp}"] == \
        "940000000.0"


def test_one_metric_in_two_units_gets_two_families():
    text = metrics_text([rec("default", "x", "s", "", "lat", 1.0, "us"), rec("default", "x", "s", "", "lat", 2.0, "ms")])
    assert "# TYPE farm_s_x_lat_us gauge" in text and "# TYPE farm_s_x_lat_ms gauge" in text


def test_names_and_labels():
    assert metric_name("crypto", "openssl-speed", "throughput") == "farm_crypto_openssl_speed_throughput"
    assert metric_name("net work", "a..b", "9lives") == "farm_net_work_a_b_9lives"
    assert label_value('a"b\\c\nd#e') == '"a\\"b\\\\c\\nd%23e"'


def test_human_numbers():
    assert human(32139119.19, "bytes/s") == "32.1 MB/s"
    assert human(940e6, "bit/s") == "940 Mbit/s"
    assert human(999.0, "bit/s") == "999 bit/s"
    assert human(51.5, "us") == "51.5 µs"
    assert human(3.0, "") == "3"


def test_md_escape():
    assert md_escape("a|b\nc *d* `e` $x$ <b>") == "a\\|b c \\*d\\* \\`e\\` \\$x\\$ \\<b>"


def test_step_summary_is_appended(run, tmp_path):
    summary = tmp_path / "step.md"
    summary.write_text("earlier step\n")
    regenerate(run, step_summary=summary)
    regenerate(run, step_summary=summary)
    text = summary.read_text()
    assert text.startswith("earlier step\n# farm run")
    assert text.count("# farm run 20261129-224818-e762") == 2


def test_run_that_died_early(tmp_path):
    d = tmp_path / "r"
    d.mkdir()
    (d / "run.json").write_text('{"run_id": "r", "status": "job-error"}')
    report = regenerate(d)
    md = report.summary.read_text()
    assert md.startswith("# farm run r: job-error") and "No measurements." in md
    assert "not in the run directory: results.csv, junit.xml" in md
    assert report.metrics.read_text() == "# EOF\n"


def test_not_a_run_directory(tmp_path):
    with pytest.raises(JobError, match="not a run directory"):
        load_run(tmp_path)
    with pytest.raises(JobError, match="no such run directory"):
        load_run(tmp_path / "nope")


def test_plots_are_drawn_when_the_module_offers_them(run, monkeypatch):
    def write_run_plots(run_dir, records):
        (run_dir / "plots").mkdir()
        (run_dir / "plots" / "sweep.png").write_bytes(b"png")
        return [run_dir / "plots" / "sweep.png"]

    monkeypatch.setitem(sys.modules, "farm.results.plots",
                        types.SimpleNamespace(write_run_plots=write_run_plots))
    report = regenerate(run)
    assert report.plots == (run / "plots" / "sweep.png",) and not report.notes
    assert "- [sweep.png](plots/sweep.png)" in report.summary.read_text()

    monkeypatch.setitem(sys.modules, "farm.results.plots", types.SimpleNamespace())
    report = regenerate(run)
    assert report.plots == () and "write_run_plots" in report.notes[0]
    monkeypatch.setitem(sys.modules, "farm.results.plots", None)  # import fails: skipped quietly
    assert regenerate(run).notes == ("plots: farm.results.plots is not installed",)


def test_cli_report(run, tmp_path, capsys, monkeypatch):
    step = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    assert main(["report", str(run)]) == EXIT_OK
    assert capsys.readouterr().out.strip() == str(run / "summary.md")
    assert (run / "metrics.txt").exists() and step.read_text().startswith("# farm run")
    step.unlink()
    assert main(["report", "--no-step-summary", str(run)]) == EXIT_OK
    assert not step.exists()
    assert main(["report", str(tmp_path / "nope")]) == EXIT_JOB_ERROR
    assert "no such run directory" in capsys.readouterr().err


def test_summary_of_a_single_boot_needs_no_setup(run):
    info = json.loads((run / "run.json").read_text())
    del info["targets"]["maaxboard-twin"]["boots"][1]
    (run / "run.json").write_text(json.dumps(info))
    md = regenerate(run).summary.read_text()
    assert "target **maaxboard-twin**: 4 cpus @ 1500 MHz (cpufreq), kernel 6.1.0-57-arm64, booted in 4.2 s" in md


def test_write_summary_appends_the_step_summary_once(run, tmp_path):
    step = tmp_path / "step.md"
    write_summary(run, step_summary=step)
    assert step.read_text().count("# farm run 20261129-224818-e762") == 1
    assert (run / "summary.md").read_text().rstrip("\n") == step.read_text().rstrip("\n")


def test_github_annotations_one_per_failed_stage(run, capsys):
    from farm.results.github import github_annotations

    lines = github_annotations(load_run(run))
    assert lines == [
        "::error title=farm test failure%3A crypto.openssl-speed maaxboard-twin/one-core::"
        "openssl: speed: Unknown algorithm | <aes-999>%0Asecond line",
        "::error title=farm error%3A boot maaxboard-twin/two-core::U-Boot prompt not seen within 60 s",
    ]
    assert main(["report", "--no-step-summary", "--github-annotations", str(run)]) == EXIT_OK
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == lines and out[-1] == str(run / "summary.md")  # the path stays the last line


def test_sweep_key_figures_are_one_row_per_point_in_human_units(tmp_path):
    """A sweep of 4 rates on 2 setups, 14 metrics each, was 112 rows of raw bit/s params: now a row per point."""
    d = tmp_path / "sweep"
    d.mkdir()
    records = []
    for setup in ("four-cores", "one-core"):
        for rate in (10e6, 50e6, 100e6, 200e6):
            params = f"method=ipbench-echo;n=1700;packet_size=1472;requested={int(rate)}"
            records += [rec(setup, "sweep", "network", params, m, v, u) for m, v, u in (
                ("requested_throughput", rate, "bit/s"), ("sent_throughput", rate * 0.999, "bit/s"),
                ("received_throughput", rate * 0.99, "bit/s"), ("rtt_min", 194.8, "us"), ("rtt_avg", 531.8, "us"),
                ("rtt_max", 12200.0, "us"), ("rtt_stdev", 803.6, "us"), ("rtt_median", 424.8, "us"),
                ("lost", 0.0, "count"), ("cpu_utilisation", 24.78, "percent"),
                *((f"cpu{i}_utilisation", 1.0 + i, "percent") for i in range(4)))]
    write_records(d / "results.csv", records)
    md = regenerate(d).summary.read_text()
    section = md.split("### network.sweep")[1]
    rows = [line for line in section.splitlines() if line.startswith("| maaxboard-twin")]
    assert len(rows) == 8
    assert "All points: method=ipbench-echo; packet_size=1472 B." in section
    assert ("| maaxboard-twin | one-core | requested=50 Mbit/s | 1 | 50 Mbit/s | 50 Mbit/s | 49.5 Mbit/s | "
            "195 µs | 532 µs | 12.2 ms | 804 µs | 425 µs | 0 | 24.8 % |") in rows
    assert "10000000" not in md and "e+" not in md and " us " not in md and "percent" not in md
    for table in re.findall(r"(?:^\|.*\|\n)+", md, flags=re.M):
        assert len({len(re.split(r"(?<!\\)\|", row)) for row in table.splitlines()}) == 1, table
