"""The crypto suite: ``openssl speed`` on the target."""

from __future__ import annotations

from typing import Any, Mapping

from ..results.record import Measurement
from . import openssl
from .context import BenchContext


def run_openssl_speed(ctx: BenchContext, params: Mapping[str, Any]) -> list[Measurement]:
    seconds = params.get("seconds", 1)
    block = params.get("block")
    measurements: list[Measurement] = []
    for command in openssl.speed_command(list(params.get("algorithms", ["aes-128-gcm", "sha256"])),
                                         seconds=seconds, block=block):
        lines = ctx.run(command, timeout=seconds * 10 + 60, tool="openssl")
        measurements += openssl.parse_speed_mr("\n".join(lines), params={"seconds": seconds})
    return measurements
