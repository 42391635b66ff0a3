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
