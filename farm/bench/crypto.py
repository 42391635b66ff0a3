"""The crypto and storage suites: ``openssl speed`` and ISA-L functions on the target."""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..errors import JobError
from ..results.record import Measurement
from . import isal, openssl
from .context import BenchContext


_FILTER = re.compile(r"^[A-Za-z0-9_]+$")
_CIPHER_PREFIXES = ("aes", "aria", "camellia", "chacha", "des", "sm4", "bf-", "cast", "rc")
DEFAULT_OPENSSL = ("aes-128-xts", "aes-256-xts", "aes-128-gcm", "sha1", "sha256", "sha512", "md5")


def is_cipher(algorithm: str) -> bool:
    return algorithm.startswith(_CIPHER_PREFIXES)


def openssl_runs(params: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """(shell command, direction) per openssl invocation; checks every value (pure)."""
    algorithms = list(params.get("algorithms", DEFAULT_OPENSSL))
    commands = openssl.speed_command(algorithms, seconds=params.get("seconds", 1), block=params.get("block"),
                                     multi=params.get("multi"))
    runs = [(command, "encrypt" if is_cipher(alg) else None) for alg, command in zip(algorithms, commands)]
    if params.get("decrypt"):
        runs += [(command + " -decrypt", "decrypt") for alg, command in zip(algorithms, commands) if is_cipher(alg)]
    return runs


def run_openssl_speed(ctx: BenchContext, params: Mapping[str, Any]) -> list[Measurement]:
    """``openssl speed -mr -elapsed`` per algorithm (wall clock, not CPU time); with ``decrypt``,
    ciphers are measured decrypting too (params ``direction``)."""
    seconds, multi = params.get("seconds", 1), params.get("multi")
    measurements: list[Measurement] = []
    for command, direction in openssl_runs(params):
        lines = ctx.run(command, timeout=seconds * 10 + 60, tool="openssl")
        extra = {"seconds": seconds, **({"direction": direction} if direction else {}),
                 **({"multi": multi} if multi else {})}
        measurements += openssl.parse_speed_mr("\n".join(lines), params=extra)
    return measurements


def isal_command(params: Mapping[str, Any]) -> str:
    """The target's command line of our ISA-L program; checks every value (pure)."""
    seconds = params.get("seconds", 1)
    only = params.get("only", "")
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not 0 < seconds <= 60:
        raise JobError(f"isal seconds {seconds!r}: expected a number of seconds, 0 < s <= 60")
    if only and not _FILTER.fullmatch(only):
        raise JobError(f"isal only {only!r}: expected letters, digits and _")
    return f"isal_bench {seconds:g} {only}".strip()


def run_isal(ctx: BenchContext, params: Mapping[str, Any]) -> list[Measurement]:
    """Our ISA-L program (images/src/isal_bench.c), cold and warm, in ISA-L's perf line format."""
    seconds = params.get("seconds", 1)
    lines = ctx.run(isal_command(params), timeout=seconds * 40 + 120, tool="isal_bench")
    return isal.parse_perf("\n".join(lines), params={"seconds": seconds})
