"""openssl speed: symmetric cipher and digest throughput on the target's CPU.

We run ``openssl speed -mr`` (machine readable) rather than scraping the human table: the table's
columns and its ``k`` suffix change with the algorithm list, the ``-mr`` lines do not.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Mapping, Sequence

from farm.errors import JobError, ParseError
from farm.measure import BenchmarkError, Measurement, check_value, merge_params

BENCHMARK = "openssl-speed"
_ALGORITHM = re.compile(r"^[a-z0-9-]+$")
#: farm's bounds: a benchmark of an hour, a process per core of a big machine, a 64 MiB buffer
MAX_SECONDS, MAX_MULTI, MAX_BLOCK = 3600, 1024, 64 << 20
_PUBLIC_KEY_RESULT = re.compile(r"^\+F\d+:")  # +F2 rsa, +F3 dsa, +F4 ecdsa, +F5 ecdh, ...
_CHILD = re.compile(r"^Got: (\S+) from (\d+)$")
_TOOL_ERROR = "speed: "  # e.g. "speed: foo is an unknown cipher or digest"


def parse_speed_mr(text: str, *, params: Mapping[str, Any] | None = None) -> list[Measurement]:
    """Measurements from ``openssl speed -mr`` output (OpenSSL 3.0), one per (algorithm, block).

    The lines that matter (stdout; ``+DT``/``+R`` progress lines go to stderr and may be mixed in):

    - ``+H:16:64:256:...`` -- the block sizes in bytes of the ``+F`` lines that follow;
    - ``+F:<index>:<ALG>:<v1>:<v2>:...`` -- one value per block size of the last ``+H``;
    - with ``-multi N``: ``Got: +H:...``/``Got: +F:... from <child>`` per child, then the sum of the
      children as a plain ``+F`` line, which is the one measured (tests/data/openssl-multi2-*), with
      ``multi`` = the number of children in its params (a sum of that many processes).

    Units, checked on OpenSSL 3.0 (tests/data/openssl-aes-128-gcm-mr.txt): the ``+F`` values are
    **bytes per second**, i.e. ``count * block / seconds`` from the ``+R:<count>:<ALG>:<seconds>``
    line (273451 * 16384 / 1.0 = 4480221184.00, exactly the ``+F`` value). The human table of the
    same run shows ``4467212.29k`` with "The 'numbers' are in 1000s of bytes per second": the
    table is the ``+F`` value divided by 1000, ``-mr`` is not scaled.

    Metric ``throughput`` in ``bytes/s``, params ``algorithm`` (as printed, lowercased) and
    ``block`` (bytes) merged over ``params``. ``+F2``/``+F3``/``+F4``... (sign/verify or derive
    operations per second of rsa, dsa, ecdsa, ecdh, eddsa, sm2, ffdh) are skipped: they are ops/s
    per key size, not throughput per block, and the benchmarks here use ``-evp`` ciphers and
    digests only. Other ``+`` lines are ignored. A malformed ``+H``/``+F`` line raises
    :class:`~farm.errors.ParseError` naming its line; output with no result line at all raises
    :class:`~farm.measure.BenchmarkError` with openssl's ``speed: ...`` message if there is one.
    """
    blocks: list[int] | None = None
    seen: dict[tuple[str, int], int] = {}  # (algorithm, block) -> line, to refuse duplicates
    measurements: list[Measurement] = []
    found_results = False
    tool_error = ""
    children: set[int] = set()  # -multi N: the processes whose sum the plain +F lines are
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        child = _CHILD.match(line)
        if child:
            # -multi N: each child reports "Got: +H:... from <n>" and "Got: +F:... from <n>"; the
            # parent then prints the sum as a plain +F line. Only the children's +H is kept.
            if child.group(1).startswith("+H:"):
                blocks = _parse_header(number, child.group(1))
            children.add(int(child.group(2)))
            continue
        if line.startswith("+H:"):
            blocks = _parse_header(number, line)
        elif line.startswith("+F:"):
            found_results = True
            if blocks is None:
                raise ParseError(f"openssl output line {number}: {line!r} before any +H: header line")
            for algorithm, block, value in _parse_result(number, line, blocks):
                if (algorithm, block) in seen:
                    raise ParseError(f"openssl output line {number}: {algorithm} block {block} "
                                     f"already measured on line {seen[algorithm, block]}")
                seen[algorithm, block] = number
                measurements.append(Measurement(
                    BENCHMARK, "throughput", value, "bytes/s",
                    merge_params(params, {"algorithm": algorithm, "block": block})))
        elif _PUBLIC_KEY_RESULT.match(line):
            found_results = True  # ops/s per key size, see docstring
        elif line.startswith(_TOOL_ERROR) and not tool_error:
            tool_error = line[len(_TOOL_ERROR):]
    if not found_results:
        if tool_error:
            raise BenchmarkError("openssl", tool_error)
        raise ParseError("openssl output: no +F result line found (was -mr given?)")
    if children:  # the sum of N processes: cycles/byte divides by N (farm.results.cycles)
        measurements = [Measurement(m.benchmark, m.metric, m.value, m.unit, {**m.params, "multi": len(children)})
                        for m in measurements]
    return measurements


def _parse_header(number: int, line: str) -> list[int]:
    try:
        blocks = [int(field) for field in line.split(":")[1:]]
    except ValueError as e:
        raise ParseError(f"openssl output line {number}: cannot parse {line!r}: {e}") from None
    if not blocks or min(blocks) <= 0:
        raise ParseError(f"openssl output line {number}: cannot parse {line!r}: no positive block sizes")
    return blocks


def _parse_result(number: int, line: str, blocks: Sequence[int]) -> list[tuple[str, int, float]]:
    """``+F:<index>:<ALG>:<v1>:...`` -> (algorithm, block, bytes/s) for each block of ``+H``."""
    fields = line.split(":")
    try:
        if len(fields) < 4 or not fields[2]:
            raise ValueError("expected +F:<index>:<algorithm>:<value>...")
        int(fields[1])
        values = [float(field) for field in fields[3:]]
    except ValueError as e:
        raise ParseError(f"openssl output line {number}: cannot parse {line!r}: {e}") from None
    if len(values) != len(blocks):
        raise ParseError(f"openssl output line {number}: cannot parse {line!r}: {len(values)} values "
                         f"for {len(blocks)} block sizes of the +H line")
    return [(fields[2].lower(), block, check_value("openssl", f"openssl output line {number}: {fields[2]} "
                                                   f"block {block}: {value!r} bytes/s", value))
            for block, value in zip(blocks, values)]


def speed_command(algorithms: Sequence[str], *, seconds: int, block: int | None,
                  multi: int | None = None) -> list[str]:
    """Shell commands to run on the target, one per algorithm.

    OpenSSL 3 refuses a second ``-evp`` ("-evp option cannot be used more than once"), so each
    algorithm needs its own invocation. A list rather than one ``a; b`` string lets the caller
    check each exit status (with ``;`` only the last survives) and attribute a failure to its
    algorithm. ``-elapsed`` times by the wall clock: openssl's default, the process's CPU time,
    leaves out work done in the kernel or an offload engine and so can overstate throughput.
    ``block`` None means openssl's default sizes (16 .. 16384 bytes).
    Algorithm names go to a target shell, so they must match ``^[a-z0-9-]+$`` (and every value is
    shlex-quoted anyway); bad input raises :class:`~farm.errors.JobError`.
    """
    if isinstance(algorithms, str):
        raise JobError(f"openssl algorithms {algorithms!r}: expected a list of names, not a string")
    if not algorithms:
        raise JobError("openssl algorithms: expected at least one")
    for algorithm in algorithms:
        if not isinstance(algorithm, str) or not _ALGORITHM.match(algorithm):
            raise JobError(f"openssl algorithm {algorithm!r}: expected lowercase letters, digits and '-'")
    if len(set(algorithms)) != len(algorithms):
        raise JobError(f"openssl algorithms {list(algorithms)}: listed twice")
    options = ["-seconds", str(_positive("seconds", seconds, MAX_SECONDS))]
    if multi is not None:  # N processes at once: the throughput of N cores, summed by openssl
        options += ["-multi", str(_positive("multi", multi, MAX_MULTI))]
    if block is not None:
        options += ["-bytes", str(_positive("block", block, MAX_BLOCK))]
    return [shlex.join(["openssl", "speed", "-mr", "-elapsed", *options, "-evp", algorithm])
            for algorithm in algorithms]


def _positive(name: str, value: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= maximum:
        raise JobError(f"openssl {name} {value!r}: expected a whole number, 1-{maximum}")
    return value
