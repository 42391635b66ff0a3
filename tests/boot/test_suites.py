"""The network and crypto pipelines on the MaaXBoard twin, for real, with their published outputs."""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET

import pytest

from farm.results.csvout import read_records
from farm.results.identity import identity_params
from farm.results.ipbench import WIDE_COLUMNS
from farm.results.record import format_params, parse_params

from ..conftest import ROOT, run_farm

#: a run of pipelines/crypto.yaml on the MaaXBoard twin (tests/data/README.md)
RECORDED_CRYPTO = ROOT / "tests" / "data" / "crypto-suite-twin"

pytestmark = pytest.mark.boot


def _run(pipeline: str, out):
    proc = run_farm("run", pipeline, "--out", str(out), timeout=900)
    assert proc.returncode == 0, proc.stderr
    suite = ET.parse(out / "junit.xml").getroot()
    assert suite.get("failures") == "0" and suite.get("errors") == "0", proc.stderr
    return proc


def test_network_sweep_writes_the_wide_form_and_plot(maaxboard_image, tftp_root, tmp_path):
    out = tmp_path / "network"
    proc = _run("pipelines/network.yaml", out)
    for setup in ("four-cores", "one-core"):
        with open(out / f"sweep-maaxboard-twin-{setup}.csv") as f:
            reader = csv.DictReader(f)
            # the lab's columns, and the cpu_target_lukem target's counts
            assert tuple(reader.fieldnames) == (*WIDE_COLUMNS, "Idle_Cycles", "Total_Cycles")
            rows = list(reader)
        assert [float(r["Requested_Throughput"]) for r in rows] == [10e6, 50e6, 100e6, 200e6]
        for row in rows:
            assert all(row[c] != "" for c in WIDE_COLUMNS), row
            v = {c: float(row[c]) for c in WIDE_COLUMNS}
            # ipbench's: replies received in the window (of packets sent before it too) against packets
            # sent in it, so with no loss the received rate reads above the sent one by the replies in
            # flight when the window opened: a packet per client on a board, more on a loaded twin whose
            # RTTs reach a second (1.5 % above at 10 Mb/s seen in a full suite run)
            assert 0 < v["Receive_Throughput"] <= v["Send_Throughput"] * 1.1
            assert int(row["Idle_Cycles"]) <= int(row["Total_Cycles"])
            assert v["Packet_Size"] == 1472
            assert 0 < v["Minimum_RTT"] <= v["Median_RTT"] <= v["Maximum_RTT"]
            assert v["Minimum_RTT"] <= v["Average_RTT"] <= v["Maximum_RTT"]
            assert 0 <= v["CPU_Utilisation"] <= 100
    png = out / "plots" / "sweep-maaxboard-twin.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    boots = json.loads((out / "run.json").read_text())["targets"]["maaxboard-twin"]["boots"]
    assert [(b["setup"], b["cpus"]) for b in boots] == [("four-cores", 4), ("one-core", 1)]

    # people read it in units: the progress lines and summary.md (a row per sweep point, not 108 rows)
    assert re.search(r"sweep 10 Mbit/s: sent [\d.]+ [kM]bit/s, received [\d.]+ [kM]?bit/s, RTT median [\d.]+ [µm]?s",
                     proc.stderr), proc.stderr
    section = (out / "summary.md").read_text().split("### network.sweep")[1]
    assert len([line for line in section.splitlines() if line.startswith("| maaxboard-twin |")]) == 8
    assert "requested=10 Mbit/s" in section and "requested=10000000" not in section and " us |" not in section

    # the two setups compared: the sweep as curves, a colour per setup
    a, b = tmp_path / "a", tmp_path / "b"
    lines = (out / "results.csv").read_text().splitlines()
    for d, setup in ((a, "four-cores"), (b, "one-core")):
        d.mkdir()
        (d / "results.csv").write_text("\n".join([lines[0], *[l for l in lines[1:] if f",{setup}," in l]]) + "\n")
    proc = run_farm("compare", str(a), str(b), "--out", str(tmp_path / "cmp"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "cmp" / "compare-sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_crypto_suite_and_compare_between_setups(tmp_path):
    """pipelines/crypto.yaml's records, on a run of it recorded on the twin (tests/data/crypto-suite-twin,
    ISA-L's 3 s a function shortened to crypto-ci's 0.05 s): its twin path (openssl-speed and isal booted on
    the MaaXBoard twin, setups with boot arguments) is booted in every run by crypto-ci's test below and the
    network suite's; what this pipeline adds is its benchmarks' options (every ISA-L perf program, the lab's
    seven algorithms decrypted too, two setups compared), and those are in its records."""
    out = RECORDED_CRYPTO
    text = (ROOT / "pipelines" / "crypto.yaml").read_text()
    assert "  - isal: {seconds: 3}" in text  # the recording's only change (run.json has the pipeline it ran)
    ran = json.loads((out / "run.json").read_text())
    assert ran["pipeline_name"] == "crypto" and {s for s in ran["setups"]} == {"four-cores", "one-core"}
    records = read_records(out / "results.csv")
    assert {r.setup for r in records} == {"four-cores", "one-core"}
    four = [r for r in records if r.setup == "four-cores"]
    throughput = {(r.benchmark, identity_params(r.benchmark, r.params)) for r in four
                  if r.metric == "throughput" and r.unit == "bytes/s"}
    # a cycles/byte per throughput; isal's say how they were found (the twin's cycle counter: cycles=pmu)
    cycles = {(r.benchmark, format_params({k: v for k, v in parse_params(identity_params(r.benchmark, r.params)).items()
                                           if k not in ("cycles", "clock")}))
              for r in four if r.metric == "cycles_per_byte"}
    assert {parse_params(r.params)["cycles"] for r in four if r.metric == "cycles_per_byte" and r.benchmark == "isal"} \
        == {"pmu"}
    # openssl's at the run's clock (the env file's nominal 1.5 GHz: the twin has no cpufreq), all the twin's
    assert {parse_params(r.params)["cycles"] for r in four if r.metric == "cycles_per_byte"
            and r.benchmark == "openssl-speed"} == {"nominal"}
    assert {parse_params(r.params).get("clock") for r in four if r.metric == "cycles_per_byte"} == {"twin"}
    # the run's length is on the isal records, not in the key
    assert {parse_params(r.params).get("seconds") for r in four if r.benchmark == "isal"} == {"0.05"}
    assert not any("seconds=" in identity_params(r.benchmark, r.params) for r in four)
    functions = {p.split("function=")[1].split(";")[0] for b, p in throughput if b == "isal"}
    algorithms = {p.split("algorithm=")[1].split(";")[0] for b, p in throughput if b == "openssl-speed"}
    assert functions == {"crc16_t10dif", "crc32_ieee", "crc32_iscsi", "xor_gen", "pq_gen", "erasure_code_encode",
                         "erasure_code_decode", "igzip_file_perf", "igzip_stateless_file_perf",
                         "isal_stateful_inflate", "isal_stateless_inflate",
                         "aes_xts_128_dec", "aes_xts_256_dec", "md5", "sha1", "sha256", "sha512"}
    lab_crypto = [p for b, p in throughput if b == "isal" and ("function=aes_xts" in p or "function=sha" in p)]
    assert lab_crypto and all("impl=openssl-3.0" in p for p in lab_crypto)  # not isa-l_crypto
    assert sum("file=corpus-weighted" in p for b, p in throughput if b == "isal") == 4
    assert algorithms == {"aes-128-xts", "aes-256-xts", "aes-128-gcm", "sha1", "sha256", "sha512", "md5"}
    assert cycles == throughput
    assert any("direction=decrypt" in p for _, p in throughput)

    # the same records, split by setup, compare into a ratio table with one command
    a, b = tmp_path / "a", tmp_path / "b"
    for d, setup in ((a, "four-cores"), (b, "one-core")):
        d.mkdir()
        lines = (out / "results.csv").read_text().splitlines()
        (d / "results.csv").write_text("\n".join([lines[0], *[l for l in lines[1:] if f",{setup}," in l]]) + "\n")
    proc = run_farm("compare", str(a), str(b), "--out", str(tmp_path / "cmp"))
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "cmp" / "compare.csv") as f:
        rows = list(csv.DictReader(f))
    assert {"four-cores", "one-core", "ratio"} <= set(rows[0])
    ratios = [float(r["ratio_estimate"]) for r in rows if r["metric"] == "throughput" and r["ratio_estimate"]]
    assert len(ratios) >= 20 and all(r > 0 for r in ratios)
    assert (tmp_path / "cmp" / "compare.png").read_bytes()[:4] == b"\x89PNG"


def test_a_pinned_frequency_setup_runs_on_a_twin_at_its_nominal_value(maaxboard_image, tftp_root, tmp_path):
    """The twin has no cpufreq and no frequency to set (a board without cpufreq fails such a setup:
    tests/unit/test_setup_cpus.py): the setup runs, its frequency recorded as nominal, with why, and it is
    the run's frequency (no other: the twin reports none)."""
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"""name: pinned
image: {ROOT / 'images' / 'maaxboard-bench.yaml'}
targets: [{{env: {ROOT / 'env' / 'qemu-maaxboard.yaml'}}}]
setups: [{{name: 1GHz, cpu_frequency_khz: 1000000}}]
boot_attempts: 1
benchmarks: [{{iperf3: {{duration: 1}}}}]
""")
    out = tmp_path / "run"
    proc = run_farm("run", str(pipeline), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["setups"]["1GHz"]["cpu_frequency_khz"] == 1000000
    boot = run["targets"]["maaxboard-twin"]["boots"][0]
    assert boot["cpu_frequency"]["pinned"] is False and boot["cpu_frequency"]["nominal_hz"] == 1e9
    assert "MTTCG" in boot["cpu_frequency"]["why"]
    assert (boot["frequency_hz"], boot["frequency_source"]) == (1e9, "setup")


def test_crypto_ci_gives_every_function_n_cv_and_intervals(maaxboard_image, tftp_root, tmp_path):
    """pipelines/crypto-ci.yaml: 7 repeats in one boot, so summary.md gives every function n=7, a CV
    and the 95 % interval of its median, and compare of two such runs the interval of each ratio;
    cycles/byte from the twin's cycle counter (QEMU's PMUv3), not the env file's nominal clock."""
    import shutil
    import time

    out = tmp_path / "ci"
    started = time.monotonic()
    _run("pipelines/crypto-ci.yaml", out)
    took = time.monotonic() - started
    records = read_records(out / "results.csv")
    values: dict[tuple, list[float]] = {}
    for r in records:
        values.setdefault((r.benchmark, r.params, r.metric), []).append(r.value)
    isal = {p for b, p, m in values if b == "isal" and m == "throughput"}
    functions = {p.split("function=")[1].split(";")[0] for p in isal}
    assert functions == {"crc16_t10dif", "crc32_ieee", "crc32_iscsi", "xor_gen", "pq_gen", "erasure_code_encode",
                         "erasure_code_decode", "aes_xts_128_dec", "aes_xts_256_dec", "md5", "sha1", "sha256",
                         "sha512", "igzip_file_perf", "igzip_stateless_file_perf", "isal_stateful_inflate",
                         "isal_stateless_inflate"}
    assert len(isal) == 13 + 4 * 3  # warm tests; igzip per file (2) and weighted
    assert all(len(v) == 7 for v in values.values()), {k: len(v) for k, v in values.items() if len(v) != 7}
    cycles = [r for r in records if r.metric == "cycles_per_byte" and r.benchmark == "isal"]
    assert len(cycles) == 7 * len(isal) and {r.params.split("cycles=")[1].split(";")[0] for r in cycles} == {"pmu"}
    assert any("direction=decrypt" in p for b, p, m in values if b == "openssl-speed")

    # summary.md: every key figure has n=7, a CV and an interval
    rows = [line.split(" | ") for line in (out / "summary.md").read_text().splitlines()
            if line.startswith("| maaxboard-twin | default |")]
    assert len(rows) == len(values)
    for row in rows:
        n, cv, ci = row[5], row[7], row[8].rstrip(" |")  # target, setup, params, metric, median, n, min–max, CV, CI
        assert n == "7" and cv.endswith(" %") and " – " in ci, row

    # compare of this run with a copy of it: the 7 repeats of one boot are one value a side (the spread
    # that matters is between boots), so every ratio is 1 and inconclusive, never a bare number
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(out / "results.csv", copy / "results.csv")
    proc = run_farm("compare", str(out), str(copy), "--out", str(tmp_path / "cmp"))
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "cmp" / "compare.csv") as f:
        table = list(csv.DictReader(f))
    assert len(table) == len(values)
    for row in table:
        assert float(row["ratio_estimate"]) == 1.0 and row["ratio"] == row["ratio_verdict"] == "inconclusive"
        for column in ("default@ci", "default@copy"):  # both labelled by their directory: one setup name
            assert row[f"{column}_n"] == "1"
    assert took < 180, f"crypto-ci took {took:.0f} s on the twin"
