"""The crypto suite's openssl runs read every CPU's clock around each invocation (a fake shell)."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.bench.crypto import CPUFREQ_COMMAND, OpensslParams, parse_cpufreq_line, run_openssl_speed

from ..fakes import FakeContext

DATA = Path(__file__).resolve().parent.parent / "data"
MULTI = (DATA / "openssl-multi2-aes-128-gcm-mr.txt").read_text().splitlines()


def target(clocks: list[list[str]]) -> FakeContext:
    """The target's cpufreq reads give ``clocks`` in turn; its openssl prints the captured MULTI."""
    return FakeContext(lambda command: clocks.pop(0) if command == CPUFREQ_COMMAND else MULTI)


def test_clock_read_around_openssl_gives_per_process_cycles():
    ctx = target([["1500000 1500000 "], ["1500000 1500000 "]])
    ms = run_openssl_speed(ctx, OpensslParams.of({"algorithms": ["aes-128-gcm"], "multi": 2, "block": 16384}))
    assert ctx.commands[0] == ctx.commands[2] == CPUFREQ_COMMAND and ctx.commands[1].startswith("openssl speed")
    (thr,) = [m for m in ms if m.metric == "throughput"]
    (cyc,) = [m for m in ms if m.metric == "cycles_per_byte"]
    assert thr.value == 8443854848.0
    assert cyc.value == pytest.approx(1.5e9 * 2 / 8443854848.0)  # per process: 0.355... cycles/byte
    assert "warning" not in cyc.params


def test_no_cpufreq_no_measured_cycles():
    ctx = target([[""], [""]])
    ms = run_openssl_speed(ctx, OpensslParams.of({"algorithms": ["aes-128-gcm"]}))
    assert [m.metric for m in ms] == ["throughput"]  # the runner's boot clock gives cycles/byte then


def test_cpufreq_line():
    assert parse_cpufreq_line(["1500000 1000000 "]) == [1500000, 1000000]
    assert parse_cpufreq_line([""]) == []
