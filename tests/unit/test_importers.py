"""farm.results.importers: hand-captured outputs (the real fixtures) as records and result dirs."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from farm.errors import JobError, ParseError
from farm.measure import BenchmarkError
from farm.results.compare import compare, load_result_dir
from farm.results.csvout import read_records
from farm.results import importers
from farm.results.importers import import_file, write_import

DATA = Path(__file__).resolve().parent.parent / "data"
MTIME = 1714557600.25  # 2024-05-01T10:00:00.250Z


def capture(tmp_path: Path, name: str) -> Path:
    """A copy of a fixture with a known modification time."""
    path = tmp_path / name
    shutil.copyfile(DATA / name, path)
    os.utime(path, (MTIME, MTIME))
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_openssl(tmp_path):
    path = capture(tmp_path, "openssl-sha256-mr.txt")
    rs = import_file("openssl", path, setup="laptop")
    assert len(rs) == 6
    first = rs[0]
    assert first.run_id == importers.run_id(path.read_bytes(), {
        "importer": "openssl", "setup": "laptop", "target": "unknown", "cpu_fraction": False, "decrypt": False})
    assert re.fullmatch(r"import-[0-9a-f]{16}", first.run_id)
    assert first.timestamp == "2024-05-01T10:00:00.250+00:00"
    assert (first.target, first.arch, first.setup, first.image, first.suite, first.repeat) == (
        "unknown", "unknown", "laptop", "", "crypto", 0)
    assert (first.benchmark, first.params, first.metric, first.value, first.unit) == (
        "openssl-speed", "algorithm=sha256;block=16", "throughput", 125717168.0, "bytes/s")
    assert {r.run_id for r in rs} == {first.run_id}


def test_isal_and_target(tmp_path):
    path = capture(tmp_path, "isal-perf-host.txt")
    rs = import_file("isal", path, setup="host", target="devbox")
    assert len(rs) == 26 + 4 * 5 + 4  # 13 functions cold and warm, 4 igzip tests x 5 files, 4 averages
    assert {(r.suite, r.target, r.benchmark) for r in rs} == {("storage", "devbox", "isal")}
    assert rs[1].params == "function=crc32_ieee;mode=cold"
    assert rs[1].value == pytest.approx(9524.11e6, rel=1e-12)
    assert rs[-1].params == "file=corpus-weighted;files=5;function=isal_stateless_inflate"


def test_vmexit(tmp_path):
    path = capture(tmp_path, "vmexit-x86.txt")
    rs = import_file("vmexit", path, setup="nested-kvm")
    assert len(rs) == 41
    assert {r.suite for r in rs} == {"virt"}
    assert (rs[0].params, rs[0].metric, rs[0].value, rs[0].unit) == ("test=cpuid", "cycles", 70591.0, "cycles")


def test_same_content_same_run_id(tmp_path):
    a = capture(tmp_path, "isal-perf-host.txt")
    b = tmp_path / "copy.txt"
    shutil.copyfile(a, b)
    assert import_file("isal", a, setup="x")[0].run_id == import_file("isal", b, setup="x")[0].run_id
    b.write_text(a.read_text() + "\n")
    assert import_file("isal", a, setup="x")[0].run_id != import_file("isal", b, setup="x")[0].run_id


def test_write_import_makes_a_result_dir(tmp_path):
    path = capture(tmp_path, "isal-perf-host.txt")
    records = import_file("isal", path, setup="host")
    out = write_import(records, tmp_path / "imported", path)
    assert read_records(out / "results.csv") == records
    assert json.loads((out / "run.json").read_text()) == {
        "imported_from": str(path.resolve()), "sha256": sha(path), "setup": "host"}
    # and compare can read it beside another import
    other = write_import(import_file("isal", path, setup="again"), tmp_path / "again", path)
    c = compare([load_result_dir(out), load_result_dir(other)])
    assert c.labels == ("host", "again")
    assert {r.ratio for r in c.rows} == {1.0}


def test_missing_file_names_it(tmp_path):
    with pytest.raises(JobError, match=f"{tmp_path / 'nope.txt'}: captured output not found"):
        import_file("isal", tmp_path / "nope.txt", setup="x")
    with pytest.raises(JobError, match="is not a regular file"):
        import_file("isal", tmp_path, setup="x")


def test_malformed_file_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("header\nxor_gen_warm: runtime = 1 usecs, bandwidth 2 MB in x sec = 3 MB/s\n")
    with pytest.raises(ParseError, match=f"{path}: ISA-L perf output line 2: cannot parse"):
        import_file("isal", path, setup="x")


def test_file_without_measurements(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("enabling apic\n")
    with pytest.raises(ParseError, match=f"{path}: no virt.vmexit measurement found"):
        import_file("vmexit", path, setup="x")
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(ParseError, match="not UTF-8"):
        import_file("vmexit", path, setup="x")


def test_failed_openssl_capture(tmp_path):
    path = tmp_path / "fail.txt"
    path.write_text("speed: foo is an unknown cipher or digest\n")
    with pytest.raises(BenchmarkError, match=f"openssl: {path}: foo is an unknown cipher"):
        import_file("openssl", path, setup="x")


def test_setup_is_required(tmp_path):
    path = capture(tmp_path, "isal-perf-host.txt")
    with pytest.raises(JobError, match="setup '': expected a non-empty name"):
        import_file("isal", path, setup="")
    with pytest.raises(JobError, match="no records to write"):
        write_import([], tmp_path / "o", path)


# --- impossible values: refused naming the file and the line (or JSON field), nothing written ---

def _tweak(tmp_path: Path, name: str, old: str, new: str, count: int = -1) -> Path:
    text = (DATA / name).read_text()
    assert old in text
    path = tmp_path / f"bad-{name}"
    path.write_text(text.replace(old, new, count))
    return path


IMPOSSIBLE = [
    ("ipbench", "ipbench-sample.csv", "10000000,9995659,", "10000000,-9995659,",
     r"line 2: Receive_Throughput is '-9995659': negative, not a measurement"),
    ("ipbench", "ipbench-sample.csv", ",23.79,87,3.3,", ",23.79,87,inf,", r"line 2: CPU_Utilisation is 'inf'"),
    ("iperf3", "iperf3-tcp.json", '"bits_per_second":\t22636016881.957283', '"bits_per_second":\t-1',
     r"iperf3 JSON end.sum_sent.bits_per_second is negative \(-1\): not a measurement"),
    ("iperf3", "iperf3-tcp.json", '"bits_per_second":\t22636016881.957283', '"bits_per_second":\tNaN',
     r"iperf3 JSON end.sum_sent.bits_per_second is NaN \(not measured\)"),
    ("iperf3", "iperf3-two-runs.txt", "0.000 ms  0/4243 (0%)  sender\n", "0.000 ms  0/4243 (0%)  sender\n",
     None),  # placeholder replaced below (the receiver line)
    ("openssl", "openssl-sha256-mr.txt", ":125717168.00:", ":-125717168.00:",
     r"openssl output line 2: sha256 block 16: -125717168.0 bytes/s is negative"),
    ("openssl", "openssl-sha256-mr.txt", ":125717168.00:", ":inf:", r"openssl output line 2: .* is infinite"),
    ("vmexit", "vmexit-x86.txt", None, None, r"vmexit output line \d+: .*negative cycles"),
]
IMPOSSIBLE[4] = ("iperf3", "iperf3-two-runs.txt", "0.006 ms  0/4243 (0%)  receiver",
                 "0.006 ms  -5/4243 (-0.12%)  receiver", r"iperf3 output line 18: loss -5/4243 \(-0.12%\) is negative")


@pytest.mark.parametrize("kind, name, old, new, expected", IMPOSSIBLE)
def test_cli_import_refuses_impossible_values(tmp_path, kind, name, old, new, expected):
    import re
    import subprocess
    import sys

    if kind == "vmexit":  # the first result line of the real capture, made negative
        text = (DATA / name).read_text()
        first = re.search(r"^([a-z_]+) (\d+)$", text, re.M)
        old, new = first.group(0), f"{first.group(1)} -{first.group(2)}"
    path = _tweak(tmp_path, name, old, new)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "farm.cli", "import", kind, str(path), "--setup", "s",
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert re.search(re.escape(f"farm: job error: {path}") + ".*" + expected, proc.stderr), proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()
