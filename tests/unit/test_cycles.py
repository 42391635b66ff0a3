"""farm.results.cycles: cycles per byte from throughput records and a clock per target."""

from __future__ import annotations

import math

import pytest

from farm.errors import JobError
from farm.results.cycles import cycles_per_byte, metric_for
from farm.results.record import Record


def record(value: float, unit: str = "bytes/s", *, target: str = "maaxboard",
           metric: str = "throughput", params: str = "algorithm=aes-128-gcm;block=16384") -> Record:
    return Record(run_id="r1", timestamp="2024-05-01T10:00:00.000+00:00", target=target,
                  arch="arm64", setup="default", image="img", suite="crypto",
                  benchmark="openssl-speed", params=params, repeat=2, metric=metric,
                  value=value, unit=unit)


def test_bytes_per_second():
    # 1.5 GHz core, 500 MB/s -> 3 cycles per byte
    (out,) = cycles_per_byte([record(500e6)], {"maaxboard": 1.5e9})
    assert out == record(3.0, "cycles/byte", metric="cycles_per_byte")


def test_every_other_field_is_kept():
    src = record(4480221184.0)
    (out,) = cycles_per_byte([src], {"maaxboard": 1.3e9})
    for field in ("run_id", "timestamp", "target", "arch", "setup", "image", "suite",
                  "benchmark", "params", "repeat"):
        assert getattr(out, field) == getattr(src, field)
    assert out.value == pytest.approx(1.3e9 / 4480221184.0, rel=1e-15)  # 0.290164...


def test_bits_per_second_are_divided_by_eight():
    # iperf3: 941 Mbit/s received at 1.8 GHz = 117.625e6 bytes/s -> 15.30...
    src = record(941e6, "bit/s", metric="received_throughput", params="protocol=tcp")
    (out,) = cycles_per_byte([src], {"maaxboard": 1.8e9})
    assert out.metric == "received_cycles_per_byte"
    assert out.value == pytest.approx(1.8e9 / (941e6 / 8), rel=1e-15)
    assert out.value == pytest.approx(15.302869287991498)


def test_zero_negative_and_non_finite_throughput_are_skipped():
    rs = [record(0.0), record(-5.0), record(math.inf), record(math.nan), record(2e9)]
    out = cycles_per_byte(rs, {"maaxboard": 1e9})
    assert [r.value for r in out] == [0.5]


def test_other_units_and_targets_without_frequency_are_skipped():
    rs = [record(3374.0, "cycles", metric="cycles"), record(1e9, target="qemu-maaxboard"),
          record(2e9, target="maaxboard")]
    out = cycles_per_byte(rs, {"maaxboard": 1e9})
    assert [(r.target, r.value) for r in out] == [("maaxboard", 0.5)]


def test_frequency_must_be_positive():
    with pytest.raises(JobError, match="target 'maaxboard': 0 is not a positive number of Hz"):
        cycles_per_byte([record(1e9)], {"maaxboard": 0})


def test_metric_names():
    assert metric_for("throughput") == "cycles_per_byte"
    assert metric_for("sent_throughput") == "sent_cycles_per_byte"
    assert metric_for("rate") == "rate_cycles_per_byte"


# --- per process, and the clock read around each measurement ---------------------------------

from farm.measure import Measurement  # noqa: E402
from farm.measure.clock import Clock, measured_cycles_per_byte, processes  # noqa: E402


def test_multi_process_throughput_is_per_process():
    # openssl speed -multi 4: 4 processes summed to 2 GB/s at 1 GHz: each did 0.5 GB/s on its own
    # core, 2 cycles per byte (not 0.5, which would be four cores' cycles counted as one)
    src = record(2e9, params="algorithm=aes-128-xts;block=16384;multi=4")
    (out,) = cycles_per_byte([src], {"maaxboard": 1e9})
    assert out.value == pytest.approx(2.0, rel=1e-15)
    assert processes({"multi": "4"}) == 4 and processes({}) == 1
    with pytest.raises(JobError, match="multi='0'"):
        processes({"multi": "0"})


def test_measured_clock_gives_the_cycles_of_that_measurement():
    m = Measurement("isal", "throughput", 750e6, "bytes/s", {"function": "crc32_ieee", "mode": "warm"})
    out = measured_cycles_per_byte(m, Clock(1.5e9, 1.5e9))
    assert out == Measurement("isal", "cycles_per_byte", 2.0, "cycles/byte",
                              {"function": "crc32_ieee", "mode": "warm"})


def test_a_clock_that_moved_is_averaged_and_warned():
    m = Measurement("isal", "throughput", 600e6, "bytes/s", {"function": "xor_gen", "mode": "cold"})
    out = measured_cycles_per_byte(m, Clock(1.2e9, 1.5e9))
    assert out.value == pytest.approx(1.35e9 / 600e6, rel=1e-15)  # 2.25
    assert out.params["warning"] == "frequency-changed"
    # within 1 %: no warning (cpufreq reports the OPP; a rounding of it is not a change)
    assert "warning" not in measured_cycles_per_byte(m, Clock(1.5e9, 1.4999e9)).params
    migrated = measured_cycles_per_byte(m, Clock(1.5e9, 1.5e9, migrated=True))
    assert migrated.params["warning"] == "cpu-migrated"


def test_measured_siblings_are_not_made_again_from_the_boot_clock():
    thr = record(750e6, params="function=crc32_ieee;mode=warm")
    measured = record(2.1, "cycles/byte", metric="cycles_per_byte",
                      params="function=crc32_ieee;mode=warm;warning=frequency-changed")
    other = record(1e9, params="function=xor_gen;mode=warm")
    out = cycles_per_byte([thr, measured, other], {"maaxboard": 1e9})
    assert [(r.params, r.value) for r in out] == [("function=xor_gen;mode=warm", 1.0)]


def test_measured_clock_must_be_positive():
    m = Measurement("isal", "throughput", 1e9, "bytes/s", {})
    with pytest.raises(JobError, match="measured clock: 0"):
        measured_cycles_per_byte(m, Clock(0, 1e9))
    assert measured_cycles_per_byte(Measurement("isal", "cycles", 5, "cycles", {}), Clock(1e9, 1e9)) is None


def test_cpufreq_of_every_cpu_before_and_after():
    from farm.measure.clock import cpufreq_clock

    same = cpufreq_clock([1500000] * 4, [1500000] * 4)
    assert (same.hz, same.changed) == (1.5e9, False)
    # one core dropped to 1.2 GHz during the run: the figure is warned about, hz the midpoint
    moved = cpufreq_clock([1500000] * 4, [1500000, 1500000, 1200000, 1500000])
    assert moved.changed and (moved.before_hz, moved.after_hz) == (1.2e9, 1.5e9)
    assert cpufreq_clock([], []) is None  # no cpufreq (the twins)
    assert cpufreq_clock([1500000] * 4, [1500000] * 3) is None  # a CPU went offline: not comparable
