"""Import benchmark output captured by hand (a board outside the farm, a colleague's laptop, a
mailing-list post, the lab's old ipbench CSVs) as farm records, so that ``farm compare`` and
``farm qualify`` can put it beside a farm run.

One path for every kind: the kind names a registered importer (farm.bench.registry.importers: farm's, and
a lab's plugin's), whose pure ``read`` turns the text into measurements of its benchmark, with the options
it declares; this module reads the file, names it in every error, and stamps the measurements into records.

An import is reproducible and recognisable: its ``run_id`` is ``import-`` + 16 hex digits of the
SHA-256 of what makes it (the file's content, the importer, the setup, the target and the options:
:func:`run_id`), so importing the same file the same way twice gives the same id, and a changed
file, or the same file for another target or setup, a new one (two runs, never one replacing the other),
its timestamp is the file's modification time (when it was captured, as near as we know), and
what farm cannot know is said so: arch ``unknown``, target ``unknown`` unless given, image empty.
A value no measurement can have (NaN, infinite, negative) is refused as a
:class:`~farm.errors.ParseError` naming the file and line, never imported.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping

import attrs

from farm.bench.registry import ImportOptions, import_options, importer, importers
from farm.errors import JobError, ParseError
from farm.measure import BenchmarkError, ImpossibleValue, check_measurements
from farm.results.csvout import write_records
from farm.results.record import Record, RunContext, to_json, write_text_atomic

PathLike = str | os.PathLike[str]
UNKNOWN = "unknown"


#: the options of the imports made before importers declared their options: always part of an import's identity
#: (False unless given), so that importing a file again gives the id it was given then
LEGACY_ID_OPTIONS = {"cpu_fraction": False, "decrypt": False}


def import_file(kind: str, path: PathLike, *, setup: str, target: str = UNKNOWN,
                options: Mapping[str, Any] | None = None, warn: Callable[[str], None] | None = None) -> list[Record]:
    """Records from the captured output ``path`` of importer ``kind`` (``farm import KIND``), as a
    live run of its benchmark would have written them: its suite and benchmark, ``repeat`` as the
    importer numbers the runs in the capture. ``options``: the values given of the options importers
    declare (farm.bench.registry.ImportOption: ``{"cpu_fraction": True}`` of the ipbench importer, ``decrypt``
    of the openssl one), an option another kind declares refused; ``warn`` gets each warning, the file
    named (default: stderr).

    Errors name the file: it cannot be read, is not UTF-8 (a leading BOM is dropped), its text is
    not the tool's output (:class:`~farm.errors.ParseError`, exit 2) or holds no measurement, or
    is the capture of a failed run (the tool's own message, :class:`~farm.measure.BenchmarkError`)."""
    spec, imp = importer(kind)
    path = Path(path)
    for name, value in (("setup", setup), ("target", target)):
        if not isinstance(value, str) or not value.strip():
            raise JobError(f"import {path}: {name} {value!r}: expected a non-empty name")
    known = import_options()
    if (unknown := sorted(set(options or {}) - set(known))):
        raise JobError(f"import {kind}: no import option {unknown[0]!r} (options: {', '.join(known) or 'none'})")
    given = {name: value for name, value in (options or {}).items() if value != known[name][0].default}
    declared = {o.name: o for o in imp.options}
    for name in given:
        if name not in declared:  # another kind's: it would be ignored here
            option, kinds = known[name]
            raise JobError(f"import {kind}: {option.flag} applies to {' and '.join(kinds)} imports only")
    data = _read(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ParseError(f"{path}: not UTF-8 text ({e})") from None
    say = warn or ImportOptions().warn
    values = {name: given.get(name, option.default) for name, option in declared.items()}
    try:
        captured = list(imp.read(text, ImportOptions(values, warn=lambda text: say(f"{path}: {text}"))))
        check_measurements(spec.name, (m for _, m in captured))
    except ParseError as e:
        raise ParseError(f"{path}: {e}") from None
    except JobError as e:  # a header the importer cannot use (ipbench: a missing column)
        raise JobError(f"{path}: {e}") from None
    except ImpossibleValue as e:  # bad input, not a failed benchmark: exit 2 naming file and line
        raise ParseError(f"{path}: {e.message}") from None
    except BenchmarkError as e:  # the capture is of a failed run, e.g. openssl's "speed: ..."
        raise BenchmarkError(e.tool, f"{path}: {e.message}") from None
    if not captured:
        raise ParseError(f"{path}: no {spec.suite}.{spec.name} measurement found in it")
    identity = {"importer": kind, "setup": setup, "target": target, **LEGACY_ID_OPTIONS, **given}
    context = RunContext(run_id=run_id(data, identity), target=target, arch=UNKNOWN, setup=setup, image="",
                         suite=spec.suite)
    timestamp = mtime_iso(path)
    return [attrs.evolve(context, repeat=repeat).record(m, timestamp) for repeat, m in captured]


def with_cycles(records: list[Record], frequency_hz: float, kind: str) -> list[Record]:
    """``records`` and their cycles/byte siblings at ``frequency_hz`` (per process for ``multi``),
    as a live run adds them, for a kind whose benchmark's registration has ``cycles_per_byte``;
    for another kind, :class:`~farm.errors.JobError`."""
    from farm.results.cycles import cycles_per_byte

    spec, _ = importer(kind)
    if not spec.cycles_per_byte:
        with_cycles_kinds = [name for name in importers() if importer(name)[0].cycles_per_byte]
        raise JobError(f"import {kind}: --frequency gives cycles/byte of {' and '.join(with_cycles_kinds)} "
                       "imports only")
    from farm.results.identity import with_cycle_source

    targets = {r.target for r in records}
    # the frequency given is a nominal clock (farm.results.identity: the cycle source is identity)
    siblings = cycles_per_byte(records, {target: frequency_hz for target in targets})
    records = records + with_cycle_source(siblings, "nominal")
    # another frequency gives other cycles/byte: another import, of its own run id
    ids = {old: "import-" + hashlib.sha256(f"{old};frequency_hz={frequency_hz!r}".encode()).hexdigest()[:ID_HEX]
           for old in {r.run_id for r in records}}
    return [attrs.evolve(r, run_id=ids[r.run_id]) for r in records]


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


#: hex digits of an import's run id after ``import-`` (64 bits)
ID_HEX = 16


def run_id(data: bytes, identity: dict[str, object] | None = None) -> str:
    """``import-`` + :data:`ID_HEX` hex digits of the SHA-256 of ``data``'s SHA-256 and ``identity``
    (importer, setup, target, options: what else makes the records), in a canonical text."""
    made_of = {"sha256": hashlib.sha256(data).hexdigest(), **(identity or {})}
    canonical = json.dumps(made_of, sort_keys=True, separators=(",", ":"))
    return f"import-{hashlib.sha256(canonical.encode()).hexdigest()[:ID_HEX]}"


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
