"""farm.measure.isal against real isal_bench output (tests/data/isal-perf-host.txt) and upstream's
perf_print() line shapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import ParseError
from farm.measure import ImpossibleValue
from farm.measure.isal import (CORPUS_FILE, IGZIP_TESTS, clock_of, corpus_average, corpus_sizes,
                             parse_clocks, parse_perf, perf_name)

DATA = Path(__file__).resolve().parent.parent / "data"
HOST = (DATA / "isal-perf-host.txt").read_text()
TWIN = (DATA / "isal-maaxboard-twin.txt").read_text()
# The example of the issue, in upstream's format (include/test.h perf_print, usecs build)
UPSTREAM = "crc32_ieee_cold: runtime =    3294168 usecs, bandwidth 97509 MB in 3.2942 sec = 29600.55 MB/s"


FUNCTIONS = ["crc16_t10dif", "crc32_ieee", "crc32_iscsi", "xor_gen", "pq_gen", "erasure_code_encode",
             "erasure_code_decode", "aes_xts_128_dec", "aes_xts_256_dec", "md5", "sha1", "sha256", "sha512"]
CORPUS = ["GPL-3", "openssl.cnf", "CA.pl", "openssl", "busybox"]


def test_host_capture_every_function_and_mode():
    ms = parse_perf(HOST)
    assert len(ms) == 26 + 4 * 5
    assert {m.benchmark for m in ms} == {"isal"}
    assert {(m.metric, m.unit) for m in ms} == {("throughput", "bytes/s")}
    assert [(m.params["function"], m.params["mode"]) for m in ms[:26]] == [
        (f, mode) for mode in ("cold", "warm") for f in FUNCTIONS]
    assert [(m.params["function"], m.params["file"]) for m in ms[26:]] == [
        (t, f) for f in CORPUS for t in IGZIP_TESTS]
    assert all("mode" not in m.params for m in ms[26:])  # igzip's perfs have no cold/warm


def test_host_capture_values_are_mb_times_a_million():
    by_name = {perf_name(m): m.value for m in parse_perf(HOST)}
    # crc32_ieee_cold: ... = 9524.11 MB/s ; xor_gen_warm: ... = 50165.46 MB/s
    assert by_name["crc32_ieee_cold"] == pytest.approx(9524.11e6, rel=1e-12)
    assert by_name["xor_gen_warm"] == pytest.approx(50165.46e6, rel=1e-12)
    assert by_name["igzip_file_perf@GPL-3"] == pytest.approx(264.81e6, rel=1e-12)
    assert by_name["isal_stateless_inflate@busybox"] == pytest.approx(142.80e6, rel=1e-12)


def test_rate_agrees_with_bandwidth_and_seconds_of_the_same_line():
    # "bandwidth <MB> MB in <s> sec": MB is floor(bytes / 10^6), so MB/s >= MB / s, within 1 MB
    perf_lines = [line for line in HOST.splitlines() if "runtime =" in line]
    for line, m in zip(perf_lines, parse_perf(HOST), strict=True):
        mb = int(line.split("bandwidth ")[1].split(" MB")[0])
        seconds = float(line.split(" MB in ")[1].split(" sec")[0])
        assert mb / seconds <= m.value / 1e6 * (1 + 1e-4)
        assert m.value / 1e6 < (mb + 1) / seconds * (1 + 1e-4)


def test_upstream_example_and_params_merge():
    (m,) = parse_perf(UPSTREAM, params={"target": "rpi4", "mode": "ignored"})
    assert m.value == pytest.approx(29600.55e6, rel=1e-12)
    assert m.params == {"target": "rpi4", "function": "crc32_ieee", "mode": "cold"}


def test_upstream_name_shapes():
    text = "\n".join([
        "crc32_ieee_perf:",
        "Start timed tests",
        # crc_funcs_perf prints "%s%s : " before perf_print
        "crc32_iscsi : runtime =    3000007 usecs, bandwidth 34000 MB in 3.0000 sec = 11333.30 MB/s",
        # igzip_perf prints "    isal_stateless_deflate-> "
        "    isal_stateless_deflate-> runtime =    3000012 usecs, bandwidth 3000 MB in 3.0000 sec = 1000.00 MB/s",
        "erasure_code_decode_warm: runtime =    3000214 usecs, bandwidth 73113 MB in 3.0002 sec = 24369.01 MB/s",
        "finish 0x5b9d1c2e",
        "done all: Pass",
    ])
    ms = parse_perf(text)
    assert [m.params for m in ms] == [
        {"function": "crc32_iscsi"},
        {"function": "isal_stateless_deflate"},
        {"function": "erasure_code_decode", "mode": "warm"},
    ]
    assert [m.value for m in ms] == pytest.approx([11333.30e6, 1000.00e6, 24369.01e6])


def test_rdtsc_build_gives_ticks_per_byte():
    # perf_print() of a USE_RDTSC build: "runtime = %10lld ticks, bandwidth %lld MB in %.4f GC = %.2f ticks/byte"
    line = "xor_gen_warm: runtime = 3000000000 ticks, bandwidth 60000 MB in 3.0000 GC = 0.05 ticks/byte"
    (m,) = parse_perf(line)
    assert (m.metric, m.value, m.unit) == ("ticks_per_byte", 0.05, "ticks/byte")
    assert m.params == {"function": "xor_gen", "mode": "warm"}


def test_runtime_without_bandwidth_gives_nothing():
    assert parse_perf("mem_zero_detect_warm: runtime =       1234 usecs") == []


def test_prefixed_perf_line_is_read():
    (m,) = parse_perf(f"[   12.345678] {UPSTREAM}")
    assert m.params == {"function": "crc32_ieee", "mode": "cold"}


def test_other_lines_are_ignored_and_crlf_is_fine():
    text = "isal_bench on rpi4\r\n" + UPSTREAM + "\r\n" + "runtime is long: yes\r\n"
    assert len(parse_perf(text)) == 1
    assert parse_perf("") == []


@pytest.mark.parametrize("bad", [
    "crc32_ieee_cold: runtime =    3294168 usecs, bandwidth 97509 MB in 3.2942 sec = 29600.55 GB/s",
    "crc32_ieee_cold: runtime =    3294168 usecs, bandwidth 97509 MB in 3.2942 sec = x MB/s",
    "crc32_ieee_cold: runtime = 3294168 usecs, bandwidth",
    "crc32_ieee_cold: runtime = lots",
    "crc32_ieee_cold: runtime =    3294168 usecs, bandwidth 97509 MB in 3.2942 GC = 29600.55 MB/s",
])
def test_malformed_perf_line_names_the_line(bad):
    with pytest.raises(ParseError, match=r"ISA-L perf output line 3: cannot parse"):
        parse_perf(f"header\n{UPSTREAM.replace('cold', 'warm')}\n{bad}\n")


def test_zero_rate_is_refused():
    line = "pq_gen_cold: runtime =          0 usecs, bandwidth 0 MB in 0.0000 sec = inf MB/s"
    with pytest.raises(ImpossibleValue, match="line 1: .*rate inf is not a positive number"):
        parse_perf(line)


def test_duplicate_names_both_lines():
    with pytest.raises(ParseError, match="line 4: crc32_ieee_cold already measured on line 2"):
        parse_perf(f"x\n{UPSTREAM}\ny\n{UPSTREAM}\n")


def test_the_same_test_on_two_files_is_not_a_duplicate_but_twice_on_one_is():
    a = "igzip_file_perf@a: runtime = 1000 usecs, bandwidth 1 MB in 0.0010 sec = 1000.00 MB/s"
    b = a.replace("@a:", "@b:")
    assert [m.params["file"] for m in parse_perf(f"{a}\n{b}")] == ["a", "b"]
    with pytest.raises(ParseError, match="line 2: igzip_file_perf@a already measured on line 1"):
        parse_perf(f"{a}\n{a}")


# --- the corpus's weighted average --------------------------------------------------------------

def test_corpus_average_is_weighted_by_file_size_on_the_twin_capture():
    ms = parse_perf(TWIN)
    sizes = corpus_sizes(TWIN)
    assert sizes == {"GPL-3": 35149, "openssl.cnf": 12332, "CA.pl": 13397, "openssl": 1016744,
                     "busybox": 1846504}
    averages = {m.params["function"]: m for m in corpus_average(ms, sizes)}
    assert set(averages) == set(IGZIP_TESTS)
    # igzip_file_perf on the twin: 21.60, 31.09, 26.58, 18.48, 17.66 MB/s
    rates = [21.60, 31.09, 26.58, 18.48, 17.66]
    weights = [35149, 12332, 13397, 1016744, 1846504]
    expected = sum(w * r for w, r in zip(weights, rates)) / sum(weights) * 1e6  # 18.0900 MB/s
    assert averages["igzip_file_perf"].value == pytest.approx(expected, rel=1e-12)
    assert averages["igzip_file_perf"].value == pytest.approx(18.0900e6, rel=1e-4)
    assert averages["igzip_file_perf"].params == {"function": "igzip_file_perf", "file": CORPUS_FILE, "files": 5}


def test_corpus_average_needs_every_size_and_two_files():
    ms = parse_perf(TWIN)
    sizes = corpus_sizes(TWIN)
    del sizes["CA.pl"]
    with pytest.raises(ParseError, match="igzip CA.pl: in_size="):
        corpus_average(ms, sizes)
    one = [m for m in ms if m.params.get("file") == "GPL-3"]
    assert corpus_average(one, corpus_sizes(TWIN)) == []
    assert corpus_average(parse_perf(UPSTREAM), {}) == []


# --- the clock around each test -----------------------------------------------------------------

CLOCKED = """\
# crc32_ieee_warm: vects=1 len=8192 bytes_per_call=8192
crc32_ieee_warm: cpufreq cpu=2 before_khz=1500000 after_khz=1500000
crc32_ieee_warm: runtime =     600000 usecs, bandwidth 450 MB in 0.6000 sec = 750.00 MB/s
xor_gen_cold: cpufreq cpu=0 before_khz=1200000 after_khz=1500000 migrated=1
xor_gen_cold: runtime =     600000 usecs, bandwidth 360 MB in 0.6000 sec = 600.00 MB/s
pq_gen_cold: runtime =     600000 usecs, bandwidth 360 MB in 0.6000 sec = 600.00 MB/s
"""


def test_clock_lines_are_read_by_test_name():
    clocks = parse_clocks(CLOCKED)
    assert set(clocks) == {"crc32_ieee_warm", "xor_gen_cold"}
    assert (clocks["crc32_ieee_warm"].before_hz, clocks["crc32_ieee_warm"].after_hz) == (1.5e9, 1.5e9)
    assert clocks["xor_gen_cold"].changed and clocks["xor_gen_cold"].migrated
    ms = parse_perf(CLOCKED)
    assert [clock_of(m, clocks) is not None for m in ms] == [True, True, False]
    assert parse_clocks(TWIN) == {}  # the twin has no cpufreq
    with pytest.raises(ParseError, match="line 3: a second cpufreq line for crc32_ieee_warm"):
        parse_clocks(CLOCKED.splitlines()[1] + "\n\n" + CLOCKED.splitlines()[1])


# --- the suite: command line and records ---------------------------------------------------------

from farm.bench.crypto import DEFAULT_CORPUS, IsalParams  # noqa: E402


def isal_command(given):
    """The command line of the params a pipeline file gives (checked as the file is)."""
    from farm.bench.crypto import isal_command as command

    return command(IsalParams.of(given))
from farm.errors import JobError  # noqa: E402
from farm.measure.isal import isal_measurements  # noqa: E402


def test_command_names_the_corpus_and_quotes_an_empty_filter():
    assert isal_command({"seconds": 0.5}) == "isal_bench 0.5 '' " + " ".join(DEFAULT_CORPUS)
    assert isal_command({"seconds": 2, "only": "crc32", "corpus": []}) == "isal_bench 2 crc32"


@pytest.mark.parametrize("corpus, message", [
    ("/bin/busybox", "expected a list"),
    (["bin/busybox"], "expected an absolute path"),
    (["/usr/../etc/shadow"], "expected an absolute path"),
    (["/tmp/a b"], "expected an absolute path"),
    (["/tmp/x;reboot"], "expected an absolute path"),
    (["/a/GPL-3", "/b/GPL-3"], "two files of one name"),
])
def test_bad_corpus_is_a_job_error(corpus, message):
    with pytest.raises(JobError, match=message):
        isal_command({"corpus": corpus})


def test_records_have_no_run_length_so_they_join_imports_and_carry_measured_cycles():
    ms = isal_measurements(CLOCKED)
    assert all("seconds" not in m.params for m in ms)
    cycles = {perf_name(m): m for m in ms if m.metric == "cycles_per_byte"}
    assert set(cycles) == {"crc32_ieee_warm", "xor_gen_cold"}  # pq_gen_cold has no clock line
    assert cycles["crc32_ieee_warm"].value == pytest.approx(1.5e9 / 750e6)  # 2.0
    assert "warning" not in cycles["crc32_ieee_warm"].params
    assert cycles["xor_gen_cold"].value == pytest.approx(1.35e9 / 600e6)  # mean clock: 2.25
    assert cycles["xor_gen_cold"].params["warning"] == "frequency-changed,cpu-migrated"


def test_twin_capture_gives_throughput_and_averages_but_no_invented_clock():
    ms = isal_measurements(TWIN)
    assert len(ms) == 26 + 20 + 4
    assert {m.metric for m in ms} == {"throughput"}  # no cpufreq: cycles/byte from the boot's clock


def test_live_records_join_an_imported_perf_report_in_compare(tmp_path):
    """The lab's `make perf_report` lines (upstream's names and perf_print format) and a live
    isal_bench run share (suite, benchmark, params, metric, unit), so compare puts them in one row."""
    from farm.results.compare import compare
    from farm.results.importers import import_file
    from farm.results.record import RunContext

    report = tmp_path / "perf_report_lab_241101.perf"
    report.write_text("\n".join([
        "Results for perf_report_lab_241101.perf",
        "crc32_ieee_perf:",
        "crc32_ieee_warm: runtime =    3000092 usecs, bandwidth 19662 MB in 3.0001 sec = 6553.80 MB/s",
        "erasure_code_decode_cold: runtime =    3000405 usecs, bandwidth 1637 MB in 3.0004 sec = 545.60 MB/s",
    ]) + "\n")
    lab = import_file("isal", report, setup="lab-2024", target="maaxboard")
    context = RunContext(run_id="r1", target="maaxboard-twin", arch="arm64", setup="twin", image="img",
                         suite="storage")
    live = [context.record(m) for m in isal_measurements(TWIN)]
    rows = {(r.key.params, r.key.metric): r for r in compare([("lab", lab), ("live", live)]).rows}
    row = rows["function=crc32_ieee;mode=warm", "throughput"]
    assert row.medians == (6553.80e6, 40.02e6) and row.ratio == pytest.approx(40.02 / 6553.80)  # twin: 40.02 MB/s
    assert rows["function=erasure_code_decode;mode=cold", "throughput"].ratio is not None


def test_only_takes_several_name_parts():
    """crypto-ci.yaml's `only: [_warm, "@"]`: isal_bench runs a test whose name contains one of them."""
    assert isal_command({"seconds": 0.05, "only": ["_warm", "@"], "corpus": ["/usr/lib/ssl/openssl.cnf"]}) == \
        "isal_bench 0.05 _warm,@ /usr/lib/ssl/openssl.cnf"
    for bad in ([], ["_warm", "a,b"], ["x y"], [3], 3):
        with pytest.raises(JobError, match="isal only"):
            isal_command({"only": bad})
