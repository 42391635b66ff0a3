"""The crypto and storage suites: ``openssl speed`` and ISA-L functions on the target."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import attrs

from ..errors import JobError
from ..images.needs import Needs
from ..images.programs import Program
from ..measure import Measurement, isal, openssl
from ..measure.clock import cpufreq_clock, measured_cycles_per_byte
from .context import BenchContext
from .params import Params, a_bool, param


_FILTER = re.compile(r"^[A-Za-z0-9_@]+$")
_CIPHER_PREFIXES = ("aes", "aria", "camellia", "chacha", "des", "sm4", "bf-", "cast", "rc")
DEFAULT_OPENSSL = ("aes-128-xts", "aes-256-xts", "aes-128-gcm", "sha1", "sha256", "sha512", "md5")


def is_cipher(algorithm: str) -> bool:
    return algorithm.startswith(_CIPHER_PREFIXES)


OPENSSL = Needs(packages=("openssl",), files=("/usr/bin/openssl", "/usr/lib/ssl/openssl.cnf"))


@attrs.frozen(kw_only=True)
class OpensslParams(Params):
    """``openssl-speed: {...}`` of a pipeline: ``openssl speed -mr -elapsed -evp`` per algorithm."""

    LABEL = "openssl"

    algorithms: tuple[str, ...] = param(DEFAULT_OPENSSL, kind=list, identity=True)
    seconds: int = param(1, kind=int, run_length=True, doc="per algorithm and block size (-seconds)")
    block: int | None = param(None, kind=int, identity=True, doc="one block size, bytes (-bytes); default openssl's")
    decrypt: bool = param(False, kind=bool, identity=True, check=a_bool, doc="ciphers decrypting too")
    multi: int | None = param(None, kind=int, identity=True, doc="processes at once (-multi)")

    def check(self) -> None:
        openssl_runs(self)

    def needs(self) -> Needs:
        return OPENSSL


def openssl_runs(params: OpensslParams) -> list[tuple[str, str | None]]:
    """(shell command, direction) per openssl invocation; checks every value (pure)."""
    algorithms = list(params.algorithms)
    commands = openssl.speed_command(algorithms, seconds=params.seconds, block=params.block, multi=params.multi)
    runs = [(command, "encrypt" if is_cipher(alg) else None) for alg, command in zip(algorithms, commands)]
    if params.decrypt:
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


def run_openssl_speed(ctx: BenchContext, params: OpensslParams) -> list[Measurement]:
    """``openssl speed -mr -elapsed`` per algorithm (wall clock, not CPU time); with ``decrypt``,
    ciphers are measured decrypting too (params ``direction``). Every CPU's clock is read right
    before and after each invocation; where cpufreq has them, each throughput gets its
    cycles/byte at that clock (per process with ``multi``; a clock that moved is warned about).
    ``seconds`` is the run's length, not what was measured: it is in the pipeline (whose path and
    sha256 run.json records), not in the records' params, so that a live run and an imported
    capture of another length join in ``farm compare``."""
    seconds, multi = params.seconds, params.multi
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
        measurements += [attrs.evolve(c, params={**c.params, "cycles": isal.CYCLES_CPUFREQ})  # the clock read around it
                         for m in found if clock and (c := measured_cycles_per_byte(m, clock))]
    return measurements


#: the igzip corpus in the benchmark images: real files of the Debian packages in them, text and
#: binary (Debian 12 ships no Calgary or Canterbury corpus: `apt-cache search corpus` finds neither);
#: the recipes list them (base-files, openssl, busybox-static), README.md says what they are
DEFAULT_CORPUS = ("/usr/share/common-licenses/GPL-3", "/usr/lib/ssl/openssl.cnf", "/usr/lib/ssl/misc/CA.pl",
                  "/usr/bin/openssl", "/bin/busybox")
#: the packages the default corpus's files are of
CORPUS_PACKAGES = ("base-files", "openssl", "busybox-static")
ISAL_BENCH = Program("isal_bench", Path(__file__).resolve().parents[2] / "images" / "src" / "isal_bench.c",
                     ("libisal-dev", "libssl-dev"), ("isal", "crypto"))
_TARGET_PATH = re.compile(r"^(/[A-Za-z0-9_+-][A-Za-z0-9_.+-]*)+$")
_TESTS_PER_FILE = len(isal.IGZIP_TESTS)
_TESTS_FIXED = 26  # 7 ISA-L functions and 6 crypto ones, cold and warm


#: seconds per function: ISA-L's perf programs' BENCHMARK_TIME (include/test.h)
ISAL_SECONDS = 3


@attrs.frozen(kw_only=True)
class IsalParams(Params):
    """``isal: {...}`` of a pipeline: ISA-L's perf tests and igzip over a corpus (images/src/isal_bench.c)."""

    LABEL = "isal"

    seconds: int | float = param(ISAL_SECONDS, kind=(int, float), run_length=True,
                                 doc="per test, 0 < s <= 60 (default ISA-L's BENCHMARK_TIME, 3 s)")
    only: str | tuple[str, ...] = param("", kind=(str, list), doc="run the tests whose names contain one of these")
    corpus: tuple[str, ...] = param(DEFAULT_CORPUS, kind=list, doc="igzip's files on the target (absolute paths)")

    def check(self) -> None:
        isal_command(self)

    def needs(self) -> Needs:
        """The program; and the default corpus's packages (a corpus of its own is the recipe's)."""
        corpus = Needs(packages=CORPUS_PACKAGES, files=DEFAULT_CORPUS) if self.corpus == DEFAULT_CORPUS else Needs()
        return Needs(programs=(ISAL_BENCH,)) | corpus


def isal_command(params: IsalParams) -> str:
    """The target's command line of our ISA-L program; checks every value (pure)."""
    seconds, only, corpus = params.seconds, params.only, params.corpus
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


def run_isal(ctx: BenchContext, params: IsalParams) -> list[Measurement]:
    """Our ISA-L program (images/src/isal_bench.c): ISA-L's perf tests, cold and warm, and igzip
    over a corpus (per file and the weighted average), with cycles/byte at the clock read around
    each test where the target has cpufreq. Params of the records are the function's (and
    ``mode``, ``file``) and ``seconds``, a run length that does not split keys, so that they join an
    imported ``perf_report`` in ``farm compare``. ``seconds`` defaults to ISA-L's BENCHMARK_TIME (3 s,
    ``include/test.h``), the time its perf programs give each function."""
    command = isal_command(params)
    tests = _TESTS_FIXED + _TESTS_PER_FILE * len(params.corpus)
    lines = ctx.run(command, timeout=tests * (params.seconds * 3 + 10) + 120, tool="isal_bench")
    # how long each function was timed is on the record (a run length: it does not split keys)
    return [attrs.evolve(m, params={**m.params, "seconds": params.seconds})
            for m in isal.isal_measurements("\n".join(lines))]
