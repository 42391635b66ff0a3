"""The benchmarks a pipeline can name, with their suite and the parameters they accept."""

from __future__ import annotations

from typing import Any, Callable, Mapping

import attrs

from ..measure import Measurement
from . import check_measurements
from .context import BenchContext
from .crypto import isal_command, openssl_runs, run_isal, run_openssl_speed
from .network import check_sweep, iperf3_argv, run_iperf3, run_sweep


def _checked(name: str, run: Callable[[BenchContext, Mapping[str, Any]], list[Measurement]]):
    """``run``, whose measurements are all checked: an impossible value (NaN, infinite, negative)
    is an :class:`~farm.bench.ImpossibleValue`, so the runner records a failed benchmark, not the value."""
    def checked(ctx: BenchContext, params: Mapping[str, Any]) -> list[Measurement]:
        return check_measurements(name, run(ctx, params))
    checked.__doc__ = run.__doc__
    return checked


@attrs.frozen
class BenchmarkSpec:
    name: str
    suite: str
    run: Callable[[BenchContext, Mapping[str, Any]], list[Measurement]] = attrs.field(
        converter=attrs.Converter(lambda run, self_: _checked(self_.name, run), takes_self=True))  # type: ignore[misc]
    params: Mapping[str, type | tuple[type, ...]]  # allowed parameters and their types
    check: Callable[[Mapping[str, Any]], object]  # raises JobError for a bad value, before any boot


BENCHMARKS: dict[str, BenchmarkSpec] = {spec.name: spec for spec in (
    BenchmarkSpec("iperf3", "network", run_iperf3, {
        "protocol": str, "duration": (int, float), "bitrate": str, "length": int, "reverse": bool,
        "omit": (int, float)}, iperf3_argv),
    BenchmarkSpec("sweep", "network", run_sweep, {
        "method": str, "protocol": str, "loads": list, "packet_size": int, "duration": (int, float),
        "samples": int, "warmup": (int, float), "cooldown": (int, float), "clients": int, "echo_priority": int,
        "echo_cpu": int, "rtt_rate": int},
        check_sweep),
    BenchmarkSpec("openssl-speed", "crypto", run_openssl_speed, {
        "algorithms": list, "seconds": int, "block": int, "decrypt": bool, "multi": int}, openssl_runs),
    BenchmarkSpec("isal", "storage", run_isal, {"seconds": (int, float), "only": str, "corpus": list}, isal_command),
)}
