"""The benchmarks a pipeline can name, with their suite and the parameters they accept."""

from __future__ import annotations

from typing import Any, Callable, Mapping

import attrs

from ..results.record import Measurement
from .context import BenchContext
from .crypto import isal_command, openssl_runs, run_isal, run_openssl_speed
from .network import check_sweep, iperf3_argv, run_iperf3, run_sweep


@attrs.frozen
class BenchmarkSpec:
    name: str
    suite: str
    run: Callable[[BenchContext, Mapping[str, Any]], list[Measurement]]
    params: Mapping[str, type | tuple[type, ...]]  # allowed parameters and their types
    check: Callable[[Mapping[str, Any]], object]  # raises JobError for a bad value, before any boot


BENCHMARKS: dict[str, BenchmarkSpec] = {spec.name: spec for spec in (
    BenchmarkSpec("iperf3", "network", run_iperf3, {
        "protocol": str, "duration": (int, float), "bitrate": str, "length": int, "reverse": bool,
        "omit": (int, float)}, iperf3_argv),
    BenchmarkSpec("sweep", "network", run_sweep, {
        "protocol": str, "loads": list, "packet_size": int, "duration": int, "warmup": int, "rtt_rate": int},
        check_sweep),
    BenchmarkSpec("openssl-speed", "crypto", run_openssl_speed, {
        "algorithms": list, "seconds": int, "block": int, "decrypt": bool, "multi": int}, openssl_runs),
    BenchmarkSpec("isal", "storage", run_isal, {"seconds": (int, float), "only": str}, isal_command),
)}
