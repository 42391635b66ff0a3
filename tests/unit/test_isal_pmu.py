"""isal_bench's cycle counter: a `pmu` line per test (real output of the MaaXBoard twin, whose
Debian kernel has QEMU's PMUv3) gives cycles/byte = cycles / bytes with `cycles=pmu`; without one,
the clock read around the test gives it (`cycles=cpufreq`); and the runner's clock adds none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from farm.errors import ParseError
from farm.measure.isal import (CORPUS_FILE, CycleCount, corpus_sizes, isal_measurements, parse_cycle_counts,
                               parse_perf, perf_name)
from farm.results.cycles import cycles_per_byte
from farm.results.identity import identity_params
from farm.results.record import RunContext, check_unique

DATA = Path(__file__).resolve().parent.parent / "data"
PMU = (DATA / "isal-maaxboard-twin-pmu.txt").read_text()
TWIN = (DATA / "isal-maaxboard-twin.txt").read_text()  # isal_bench before the cycle counter: no pmu lines


def test_the_twin_has_a_cycle_counter_and_every_test_a_count():
    assert "# isal_bench: pmu cycles (perf_event_open" in PMU
    counts = parse_cycle_counts(PMU)
    assert set(counts) == {perf_name(m) for m in parse_perf(PMU)}  # 26 + 4 igzip tests x 2 files
    assert len(counts) == 34
    assert not any(c.multiplexed for c in counts.values())


def test_cycles_per_byte_is_cycles_over_the_bytes_of_the_perf_line():
    ms = isal_measurements(PMU)
    by = {(m.metric, perf_name(m)): m for m in ms}
    line = next(l for l in PMU.splitlines() if l.startswith("crc16_t10dif_cold: pmu"))
    cycles, nbytes = (int(v) for v in re.findall(r"(?:cycles|bytes)=([0-9]+)", line))
    c = by["cycles_per_byte", "crc16_t10dif_cold"]
    assert c.value == pytest.approx(cycles / nbytes) and c.unit == "cycles/byte"
    assert c.params == {"function": "crc16_t10dif", "mode": "cold", "cycles": "pmu"}
    # the bytes the pmu line counts are the perf line's: its MB/s x its seconds
    t = by["throughput", "crc16_t10dif_cold"]
    elapsed = float(re.search(r"in ([0-9.]+) sec", next(l for l in PMU.splitlines()
                                                       if l.startswith("crc16_t10dif_cold: runtime"))).group(1))
    assert nbytes == pytest.approx(t.value * elapsed, rel=1e-3)
    # one cycles/byte per throughput, each from the counter
    throughput = [m for m in ms if m.metric == "throughput"]
    cpb = [m for m in ms if m.metric == "cycles_per_byte"]
    assert len(cpb) == len(throughput) == 34 + 4 and {m.params["cycles"] for m in cpb} == {"pmu"}


def test_the_corpus_average_is_weighted_by_file_size():
    ms = isal_measurements(PMU)
    counts, sizes = parse_cycle_counts(PMU), corpus_sizes(PMU)
    (avg,) = [m for m in ms if m.metric == "cycles_per_byte" and m.params.get("file") == CORPUS_FILE
              and m.params["function"] == "igzip_file_perf"]
    expect = sum(sizes[f] * counts[f"igzip_file_perf@{f}"].cycles_per_byte for f in sizes) / sum(sizes.values())
    assert avg.value == pytest.approx(expect) and avg.params["cycles"] == "pmu"


def test_a_multiplexed_count_is_scaled_and_warned_about():
    text = ("crc32_ieee_warm: pmu cycles=1000 bytes=500 enabled_ns=2000 running_ns=1000\n"
            "crc32_ieee_warm: runtime =       2000 usecs, bandwidth 0 MB in 0.0020 sec = 0.25 MB/s\n")
    assert parse_cycle_counts(text)["crc32_ieee_warm"] == CycleCount(1000, 500, 2000, 1000)
    (c,) = [m for m in isal_measurements(text) if m.metric == "cycles_per_byte"]
    assert c.value == pytest.approx(4.0) and c.params["warning"] == "pmu-multiplexed"


@pytest.mark.parametrize("line, message", [
    ("x_warm: pmu cycles=5 bytes=0 enabled_ns=1 running_ns=1", "not a cycle count"),
    ("x_warm: pmu cycles=5 bytes=9 enabled_ns=1 running_ns=2", "not a cycle count"),
])
def test_impossible_counts_are_refused_naming_the_line(line, message):
    with pytest.raises(ParseError, match=f"line 2: .*{message}"):
        parse_cycle_counts("# header\n" + line)


def test_the_counter_wins_over_the_clock_and_the_clock_is_named_when_it_gives_the_figure():
    both = ("crc32_ieee_warm: cpufreq cpu=0 before_khz=1500000 after_khz=1500000\n"
            "crc32_ieee_warm: pmu cycles=3000 bytes=1000 enabled_ns=10 running_ns=10\n"
            "crc32_ieee_warm: runtime =     600000 usecs, bandwidth 450 MB in 0.6000 sec = 750.00 MB/s\n"
            "xor_gen_warm: cpufreq cpu=0 before_khz=1500000 after_khz=1500000\n"
            "xor_gen_warm: runtime =     600000 usecs, bandwidth 450 MB in 0.6000 sec = 750.00 MB/s\n")
    cpb = {perf_name(m): m for m in isal_measurements(both) if m.metric == "cycles_per_byte"}
    assert cpb["crc32_ieee_warm"].value == 3.0 and cpb["crc32_ieee_warm"].params["cycles"] == "pmu"
    assert cpb["xor_gen_warm"].value == pytest.approx(2.0) and cpb["xor_gen_warm"].params["cycles"] == "cpufreq"


def test_the_runs_clock_adds_no_second_figure_where_the_counter_gave_one():
    ctx = RunContext(run_id="r", target="maaxboard-twin", arch="arm64", setup="s", image="i", suite="storage")
    records = [ctx.record(m) for m in isal_measurements(PMU)]
    assert cycles_per_byte(records, {"maaxboard-twin": 1.5e9}) == []
    check_unique(records + cycles_per_byte(records, {"maaxboard-twin": 1.5e9}), "run")
    # without the counter (the older capture) the run's clock gives them
    old = [ctx.record(m) for m in isal_measurements(TWIN)]
    assert len(cycles_per_byte(old, {"maaxboard-twin": 1.5e9})) == len(old)
    # how the cycles were found is part of what was measured: a counted figure never joins a clock-derived one
    assert identity_params("isal", "cycles=pmu;function=crc32_ieee;mode=warm;seconds=1") == \
        "cycles=pmu;function=crc32_ieee;mode=warm"
    assert identity_params("isal", "cycles=pmu;function=crc32_ieee") != identity_params("isal", "cycles=cpufreq;function=crc32_ieee")
