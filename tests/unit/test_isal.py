"""farm.bench.isal against real isal_bench output (tests/data/isal-perf-host.txt) and upstream's
perf_print() line shapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.bench import ImpossibleValue
from farm.bench.isal import parse_perf
from farm.errors import ParseError

DATA = Path(__file__).resolve().parent.parent / "data"
HOST = (DATA / "isal-perf-host.txt").read_text()
# The example of the issue, in upstream's format (include/test.h perf_print, usecs build)
UPSTREAM = "crc32_ieee_cold: runtime =    3294168 usecs, bandwidth 97509 MB in 3.2942 sec = 29600.55 MB/s"


def test_host_capture_every_function_and_mode():
    ms = parse_perf(HOST)
    assert len(ms) == 16
    assert {m.benchmark for m in ms} == {"isal"}
    assert {(m.metric, m.unit) for m in ms} == {("throughput", "bytes/s")}
    functions = ["crc16_t10dif", "crc32_ieee", "crc32_iscsi", "xor_gen", "pq_gen",
                 "erasure_code_encode", "erasure_code_decode", "igzip_deflate_l1"]
    assert [(m.params["function"], m.params["mode"]) for m in ms] == [
        (f, mode) for f in functions for mode in ("cold", "warm")]


def test_host_capture_values_are_mb_times_a_million():
    by_name = {(m.params["function"], m.params["mode"]): m.value for m in parse_perf(HOST)}
    # crc32_ieee_cold: ... = 31899.22 MB/s ; xor_gen_warm: ... = 141913.26 MB/s
    assert by_name["crc32_ieee", "cold"] == pytest.approx(31899.22e6, rel=1e-12)
    assert by_name["xor_gen", "warm"] == pytest.approx(141913.26e6, rel=1e-12)
    assert by_name["igzip_deflate_l1", "warm"] == pytest.approx(671.35e6, rel=1e-12)


def test_rate_agrees_with_bandwidth_and_seconds_of_the_same_line():
    # "bandwidth <MB> MB in <s> sec": MB is floor(bytes / 10^6), so MB/s >= MB / s, within 1 MB
    for line, m in zip(HOST.splitlines(), parse_perf(HOST)):
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
