"""The record: one measured value, the unit of every result farm writes.

Parsers return :class:`Measurement` (what was measured, nothing about the run); the runner stamps
each with a :class:`RunContext` into a :class:`Record`, which is one row of ``results.csv``.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Mapping

import attrs

from farm.errors import JobError
from farm.measure import Measurement, impossible  # noqa: F401  (older callers import them from here)
from farm.measure.params import format_params, parse_params  # noqa: F401  (a record's params text)
from farm.results.identity import MetricKey
from farm.secrets import mask

RECORD_FIELDS = (
    "run_id", "timestamp", "target", "arch", "setup", "image", "suite",
    "benchmark", "params", "repeat", "metric", "value", "unit",
)

#: the metric of the record a failed benchmark leaves in results.csv (value 1, unit count)
FAILED_METRIC = "failed"


def check_unique(records: Iterable["Record"], what: str) -> None:
    """Refuse two records of one run for the same target, setup, measurement and repeat.

    Each repeat of a setup measures a metric once, so such a pair can only be two *different*
    experiments under one name (two setups of one name, written before pipelines refused them, or
    one benchmark listed twice with the same parameters); pooled, they would give a median of
    neither. :class:`~farm.errors.JobError` names both."""
    seen: dict[tuple, Record] = {}
    for r in records:
        key = (r.run_id, MetricKey.of(r), r.repeat)
        first = seen.setdefault(key, r)
        if first is not r:
            raise JobError(
                f"{what}: run {r.run_id} has two records of {r.suite}.{r.benchmark} {r.metric}"
                f"{f'[{r.params}]' if r.params else ''} for target {r.target}, setup {r.setup!r}, repeat "
                f"{r.repeat} ({first.value:g} and {r.value:g} {r.unit}): two setups of one name, or one "
                "benchmark listed twice with the same parameters; they are not pooled into one median")


@attrs.frozen
class RunContext:
    """Where and how a measurement was taken; shared by every record of one benchmark run."""

    run_id: str
    target: str
    arch: str
    setup: str
    image: str
    suite: str
    repeat: int = 0

    def record(self, m: Measurement, timestamp: str | None = None) -> "Record":
        return Record(
            run_id=self.run_id, timestamp=timestamp or now_iso(), target=self.target, arch=self.arch,
            setup=self.setup, image=self.image, suite=self.suite, benchmark=m.benchmark,
            params=format_params(m.params), repeat=self.repeat, metric=m.metric,
            value=float(m.value), unit=m.unit,
        )


@attrs.frozen
class Record:
    run_id: str
    timestamp: str
    target: str
    arch: str
    setup: str
    image: str
    suite: str
    benchmark: str
    params: str
    repeat: int
    metric: str
    value: float
    unit: str

    def as_row(self) -> dict[str, Any]:
        """The CSV row; its text fields masked (a secret in a setup name or a parameter)."""
        return {k: mask(v) if isinstance(v, str) else v for k, v in attrs.asdict(self).items()}

    @classmethod
    def from_row(cls, row: Mapping[str, str]) -> "Record":
        return cls(**{**{k: row[k] for k in RECORD_FIELDS},
                      "repeat": int(row["repeat"]), "value": float(row["value"])})


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def to_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, default=str)


def _file_mode() -> int:
    """The mode ``open()`` would give a new file (0o666 less the umask): ``mkstemp`` makes 0o600.
    Read from /proc (setting the umask to read it is not thread-safe), else by setting it."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            umask = next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        umask = os.umask(0o022)
        os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def open_atomic(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """A file object whose content replaces ``path`` in one step when the block ends (fsync, then
    rename); nothing is replaced when the block raises.

    The temporary file is created exclusively (``mkstemp``: O_CREAT|O_EXCL, a random name) beside
    ``path``, never at a predictable name a symlink could be planted at; the rename replaces
    ``path`` itself, never what a symlink at ``path`` points to.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _file_mode())
        with open(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": ""})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Replace ``path`` with ``text`` in one step (see :func:`open_atomic`): a reader, or a run
    that dies half way, sees the old file or the new one, never a truncated one. Every file
    farm writes comes through here, so secrets are masked here (:mod:`farm.secrets`)."""
    text = mask(text)
    with open_atomic(path) as f:
        f.write(text)
