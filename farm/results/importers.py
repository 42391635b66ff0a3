"""Import benchmark output captured by hand (a board outside the farm, a colleague's laptop, a
mailing-list post) as farm records, so that ``farm compare`` can put it beside a farm run.

An import is reproducible and recognisable: its ``run_id`` is ``import-`` + the first 12 hex digits
of the file's SHA-256 (importing the same file twice gives the same id; a changed file a new one),
its timestamp is the file's modification time (when it was captured, as near as we know), and
what farm cannot know is said so: arch ``unknown``, target ``unknown`` unless given, image empty.
A value no measurement can have (NaN, infinite, negative) is refused as a
:class:`~farm.errors.ParseError` naming the file and line, never imported.
"""

from __future__ import annotations

import hashlib
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from farm.measure import BenchmarkError, ImpossibleValue, check_measurements
from farm.measure.isal import corpus_average, corpus_sizes, parse_perf
from farm.measure.openssl import parse_speed_mr
from farm.measure.vmexit import parse_vmexit
from farm.errors import JobError, ParseError
from farm.results.csvout import write_records
from farm.results.record import Measurement, Record, RunContext, to_json, write_text_atomic

PathLike = str | os.PathLike[str]
UNKNOWN = "unknown"
# suite of each importer: what the farm's own suites call these benchmarks
SUITE_OPENSSL = "crypto"
SUITE_ISAL = "storage"
SUITE_VMEXIT = "virt"


def import_openssl(path: PathLike, setup: str, target: str = UNKNOWN) -> list[Record]:
    """Records from a saved ``openssl speed -mr`` output
    (:func:`~farm.measure.openssl.parse_speed_mr`)."""
    return _import(path, setup, target, SUITE_OPENSSL, parse_speed_mr)


def import_isal(path: PathLike, setup: str, target: str = UNKNOWN) -> list[Record]:
    """Records from saved ISA-L perf lines (:func:`~farm.measure.isal.parse_perf`): isal_bench's
    output or an upstream ``perf_report_*.perf`` file; isal_bench's igzip corpus averages too."""
    return _import(path, setup, target, SUITE_ISAL, parse_isal)


def parse_isal(text: str) -> list[Measurement]:
    """ISA-L perf lines and, for isal_bench's igzip corpus, its weighted averages."""
    measurements = parse_perf(text)
    return measurements + corpus_average(measurements, corpus_sizes(text))


def import_vmexit(path: PathLike, setup: str, target: str = UNKNOWN) -> list[Record]:
    """Records from a saved kvm-unit-tests vmexit console
    (:func:`~farm.measure.vmexit.parse_vmexit`)."""
    return _import(path, setup, target, SUITE_VMEXIT, parse_vmexit)


def _import(path: PathLike, setup: str, target: str, suite: str,
            parse: Callable[[str], list[Measurement]]) -> list[Record]:
    path = Path(path)
    for name, value in (("setup", setup), ("target", target)):
        if not isinstance(value, str) or not value.strip():
            raise JobError(f"import {path}: {name} {value!r}: expected a non-empty name")
    data = _read(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ParseError(f"{path}: not UTF-8 text ({e})") from None
    try:
        measurements = check_measurements(suite, parse(text))
    except ParseError as e:
        raise ParseError(f"{path}: {e}") from None
    except ImpossibleValue as e:  # bad input, not a failed benchmark: exit 2 naming file and line
        raise ParseError(f"{path}: {e.message}") from None
    except BenchmarkError as e:  # the capture is of a failed run, e.g. openssl's "speed: ..."
        raise BenchmarkError(e.tool, f"{path}: {e.message}") from None
    if not measurements:
        raise ParseError(f"{path}: no {suite} measurement found in it")
    context = RunContext(run_id=run_id(data), target=target, arch=UNKNOWN, setup=setup, image="",
                         suite=suite, repeat=0)
    timestamp = mtime_iso(path)
    return [context.record(m, timestamp) for m in measurements]


#: the importers whose throughputs get cycles/byte with ``farm import --frequency`` (the suites a
#: live run gives cycles/byte: crypto and storage)
CYCLES_KINDS = ("openssl", "isal")


def with_cycles(records: list[Record], frequency_hz: float, kind: str) -> list[Record]:
    """``records`` and their cycles/byte siblings at ``frequency_hz`` (per process for ``multi``),
    as a live run adds them; for a kind without cycles/byte, :class:`~farm.errors.JobError`."""
    from farm.results.cycles import cycles_per_byte

    if kind not in CYCLES_KINDS:
        raise JobError(f"import {kind}: --frequency gives cycles/byte of {' and '.join(CYCLES_KINDS)} imports only")
    targets = {r.target for r in records}
    return records + cycles_per_byte(records, {target: frequency_hz for target in targets})


def write_import(records: list[Record], out_dir: PathLike, source_path: PathLike, *,
                 frequency_hz: float | None = None) -> Path:
    """Make ``out_dir`` a result directory holding ``records``: ``results.csv`` and ``run.json``
    (``imported_from``: the source's absolute path, ``sha256`` of its content, ``setup``:
    the records' setup(s); ``frequency_hz`` and its source ``given`` when one was given).
    Returns ``out_dir``. Both files are replaced atomically."""
    if not records:
        raise JobError(f"import {source_path}: no records to write")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    source = Path(source_path)
    setups = sorted({r.setup for r in records})
    write_records(out / "results.csv", records)
    write_text_atomic(out / "run.json", to_json({
        "imported_from": str(source.resolve()),
        "sha256": hashlib.sha256(_read(source)).hexdigest(),
        "setup": setups[0] if len(setups) == 1 else setups,
        **({"frequency_hz": frequency_hz, "frequency_source": "given"} if frequency_hz else {}),
    }) + "\n")
    return out


def run_id(data: bytes) -> str:
    """``import-`` + the first 12 hex digits of the SHA-256 of ``data``."""
    return f"import-{hashlib.sha256(data).hexdigest()[:12]}"


def mtime_iso(path: PathLike) -> str:
    """The file's modification time, UTC, ISO 8601 with milliseconds (as
    :func:`~farm.results.record.now_iso`)."""
    mtime = os.stat(path).st_mtime
    return datetime.fromtimestamp(mtime, timezone.utc).isoformat(timespec="milliseconds")


def _read(path: Path) -> bytes:
    from ..config import read_bytes

    return read_bytes(path, "captured output", MAX_IMPORT_BYTES)


#: a captured tool output (iperf3 -J of a long run, a year of ipbench sweeps) is far smaller
MAX_IMPORT_BYTES = 256 << 20
