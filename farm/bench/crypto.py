"""The crypto and storage suites: ``openssl speed`` and ISA-L functions on the target."""

from __future__ import annotations

import re
import shlex
from typing import Any, Mapping

import attrs

from ..errors import JobError
from ..measure import Measurement, isal, openssl
from ..measure.clock import cpufreq_clock, measured_cycles_per_byte
from .context import BenchContext


_FILTER = re.compile(r"^[A-Za-z0-9_@]+$")
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


#: every CPU's clock in kHz on one line (nothing where there is no cpufreq)
CPUFREQ_COMMAND = "cat /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq 2>/dev/null | tr '\\n' ' '; echo"


def parse_cpufreq_line(lines: list[str]) -> list[int]:
    """The kHz figures :data:`CPUFREQ_COMMAND` printed (pure); [] when there were none."""
    return [int(word) for line in lines for word in line.split() if word.isdigit()]


def with_direction(measurements: list[Measurement], decrypt: bool) -> list[Measurement]:
    """Ciphers' measurements with ``direction=encrypt`` (openssl speed's default) or ``decrypt``:
    ``-mr`` output does not say which, so the caller does (pure)."""
    direction = "decrypt" if decrypt else "encrypt"
    return [Measurement(m.benchmark, m.metric, m.value, m.unit, {**m.params, "direction": direction})
            if is_cipher(str(m.params.get("algorithm", ""))) else m for m in measurements]


def import_openssl(text: str, decrypt: bool = False) -> list[Measurement]:
    """``farm import openssl``: a capture of ``openssl speed -mr`` as a live run records it (the
    same params, so that the two join): ciphers ``direction=encrypt``, or ``decrypt`` for a
    capture of ``-decrypt``."""
    return with_direction(openssl.parse_speed_mr(text), decrypt)


def run_openssl_speed(ctx: BenchContext, params: Mapping[str, Any]) -> list[Measurement]:
    """``openssl speed -mr -elapsed`` per algorithm (wall clock, not CPU time); with ``decrypt``,
    ciphers are measured decrypting too (params ``direction``). Every CPU's clock is read right
    before and after each invocation; where cpufreq has them, each throughput gets its
    cycles/byte at that clock (per process with ``multi``; a clock that moved is warned about).
    ``seconds`` is the run's length, not what was measured: it is in the pipeline (whose path and
    sha256 run.json records), not in the records' params, so that a live run and an imported
    capture of another length join in ``farm compare``."""
    seconds, multi = params.get("seconds", 1), params.get("multi")
    measurements: list[Measurement] = []
    for command, direction in openssl_runs(params):
        before = parse_cpufreq_line(ctx.run(CPUFREQ_COMMAND, timeout=30, tool="cpufreq"))
        lines = ctx.run(command, timeout=seconds * 10 + 60, tool="openssl")
        after = parse_cpufreq_line(ctx.run(CPUFREQ_COMMAND, timeout=30, tool="cpufreq"))
        found = openssl.parse_speed_mr("\n".join(lines), params={"multi": multi} if multi else None)
        if direction:
            found = with_direction(found, direction == "decrypt")
        clock = cpufreq_clock(before, after)
        measurements += found
        measurements += [c for m in found if clock and (c := measured_cycles_per_byte(m, clock))]
    return measurements


#: the igzip corpus in the benchmark images: real files of the Debian packages in them, text and
#: binary (Debian 12 ships no Calgary or Canterbury corpus: `apt-cache search corpus` finds neither);
#: the recipes list them (base-files, openssl, busybox-static), README.md says what they are
DEFAULT_CORPUS = ("/usr/share/common-licenses/GPL-3", "/usr/lib/ssl/openssl.cnf", "/usr/lib/ssl/misc/CA.pl",
                  "/usr/bin/openssl", "/bin/busybox")
_TARGET_PATH = re.compile(r"^(/[A-Za-z0-9_+-][A-Za-z0-9_.+-]*)+$")
_TESTS_PER_FILE = len(isal.IGZIP_TESTS)
_TESTS_FIXED = 26  # 7 ISA-L functions and 6 crypto ones, cold and warm


#: seconds per function: ISA-L's perf programs' BENCHMARK_TIME (include/test.h)
ISAL_SECONDS = 3


def isal_command(params: Mapping[str, Any]) -> str:
    """The target's command line of our ISA-L program; checks every value (pure)."""
    seconds = params.get("seconds", ISAL_SECONDS)
    only = params.get("only", "")
    corpus = params.get("corpus", DEFAULT_CORPUS)
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not 0 < seconds <= 60:
        raise JobError(f"isal seconds {seconds!r}: expected a number of seconds, 0 < s <= 60")
    if isinstance(only, (list, tuple)):  # several filters: a test runs when its name contains one
        if not only or not all(isinstance(f, str) and _FILTER.fullmatch(f) for f in only):
            raise JobError(f"isal only {only!r}: expected a name part or a list of them, each letters, digits, _ and @")
        only = ",".join(only)
    elif not isinstance(only, str) or only and not _FILTER.fullmatch(only):
        raise JobError(f"isal only {only!r}: expected letters, digits, _ and @ (or a list of such parts)")
    if isinstance(corpus, str) or not isinstance(corpus, (list, tuple)):
        raise JobError(f"isal corpus {corpus!r}: expected a list of absolute paths on the target")
    for path in corpus:
        if not isinstance(path, str) or not _TARGET_PATH.fullmatch(path) or "/../" in f"{path}/":
            raise JobError(f"isal corpus {path!r}: expected an absolute path of letters, digits and _ . + -")
    names = [path.rsplit("/", 1)[1] for path in corpus]
    if len(set(names)) != len(names):
        raise JobError(f"isal corpus {list(corpus)}: two files of one name (records are named by it)")
    return shlex.join(["isal_bench", f"{seconds:g}", only, *corpus])


def run_isal(ctx: BenchContext, params: Mapping[str, Any]) -> list[Measurement]:
    """Our ISA-L program (images/src/isal_bench.c): ISA-L's perf tests, cold and warm, and igzip
    over a corpus (per file and the weighted average), with cycles/byte at the clock read around
    each test where the target has cpufreq. Params of the records are the function's (and
    ``mode``, ``file``) and ``seconds``, which does not split keys, so that they join an imported
    ``perf_report`` in ``farm compare``. ``seconds`` defaults to ISA-L's BENCHMARK_TIME (3 s,
    ``include/test.h``), the time its perf programs give each function."""
    seconds = params.get("seconds", ISAL_SECONDS)
    command = isal_command(params)
    tests = _TESTS_FIXED + _TESTS_PER_FILE * len(params.get("corpus", DEFAULT_CORPUS))
    lines = ctx.run(command, timeout=tests * (seconds * 3 + 10) + 120, tool="isal_bench")
    # how long each function was timed is on the record (a run length: it does not split keys)
    return [attrs.evolve(m, params={**m.params, "seconds": seconds})
            for m in isal.isal_measurements("\n".join(lines))]
