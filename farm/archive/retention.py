"""``farm archive gc --keep …``: which archived runs stay, and the objects that go with the rest.

    --keep 20        the newest 20 runs (by when they started)
    --keep 90d       every run that started in the last 90 days (``h``, ``d``, ``w`` too)

A run stays when any ``--keep`` rule keeps it, and always when something the lab relies on names it
(:func:`protected`): a saved baseline (``farm baseline save``: by every run id farm takes it for, its
baseline.json's, its run.json's, its records'; one of which none can be read stops gc, exit 2), or a qualification the
results store keeps (``farm qualify``: its candidate and the baseline it was judged against). Then
every object no remaining run names is removed, and every write whose writer died. The rule is pure
(:func:`runs_to_keep`); ``gc`` holds the archive's lock exclusively while it removes, so no run is
archived half way through (writers hold it shared).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Iterable, Mapping

import attrs

from ..errors import JobError
from .record import RunRecord

_AGE = re.compile(r"(\d+)([hdw])")
_UNIT = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}
#: how qualify's stored baseline text names its run (farm.results.baselines.describe)
_BASELINE_RUN = re.compile(r"\brun ([A-Za-z0-9][A-Za-z0-9._-]{0,63})")


@attrs.frozen
class Keep:
    """One ``--keep`` rule: the newest ``count`` runs, or those younger than ``age``."""

    count: int | None = None
    age: timedelta | None = None

    @classmethod
    def parse(cls, text: str) -> "Keep":
        value = text.strip()
        if value.isdigit():
            return cls(count=int(value))
        match = _AGE.fullmatch(value)
        if not match:
            raise JobError(f"--keep {text!r}: expected a number of runs (20) or an age (90d, 12w, 36h)")
        try:
            return cls(age=int(match.group(1)) * _UNIT[match.group(2)])
        except OverflowError:
            raise JobError(f"--keep {text!r}: an age of at most {timedelta.max.days // 7} weeks") from None


def _started(record: RunRecord) -> datetime:
    try:
        when = datetime.fromisoformat(record.started or record.archived)
    except ValueError:
        return datetime.min.replace(tzinfo=timezone.utc)
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def runs_to_keep(records: Iterable[RunRecord], rules: Iterable[Keep], protected: Iterable[str],
                 now: datetime) -> set[str]:
    """The run ids that stay: kept by a rule, or protected."""
    records = sorted(records, key=_started, reverse=True)
    keep = set(protected) & {r.run_id for r in records}
    for rule in rules:
        if rule.count is not None:
            keep |= {r.run_id for r in records[:rule.count]}
        if rule.age is not None:
            keep |= {r.run_id for r in records if now - _started(r) <= rule.age}
    return keep


def unreferenced(objects: Iterable[str], kept: Iterable[RunRecord]) -> set[str]:
    """The objects (sha256) no kept record names."""
    named = {sha for record in kept for sha in record.objects()}
    return set(objects) - named


def protected(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Run id -> why it must stay: the saved baselines' runs, and the runs of every qualification the
    results store keeps (its candidate, and its baseline's run)."""
    from ..results.baselines import list_baselines, run_ids

    why: dict[str, str] = {}
    for b in list_baselines():  # by every run id farm takes it for: a hand-copied one has no baseline.json
        for run_id in sorted(run_ids(b)):
            why.setdefault(run_id, f"baseline {b.name}")
    try:
        from ..store.db import open_store
        from ..store.schema import qualifications

        eng = open_store(environ)
    except Exception as exc:  # noqa: BLE001 - without the store gc must not guess: refuse
        raise JobError(f"farm archive gc: the results store cannot be read ({exc}); its qualifications say which "
                       "runs must stay (FARM_DB=none to go by the baselines alone)") from None
    if eng is None:
        return why
    try:
        import sqlalchemy as sa

        with eng.connect() as c:
            for candidate, baseline in c.execute(sa.select(qualifications.c.candidate_run_id,
                                                           qualifications.c.baseline)):
                why.setdefault(candidate, "a stored qualification's candidate")
                if (found := _BASELINE_RUN.search(baseline or "")):
                    why.setdefault(found.group(1), "a stored qualification's baseline")
    finally:
        eng.dispose()
    return why


@attrs.frozen
class Collected:
    """What ``gc`` removed (or, with ``dry_run``, would remove)."""

    runs: tuple[str, ...]
    kept: tuple[str, ...]
    protected: dict[str, str]     # of the kept runs: why each must stay
    objects: int
    bytes: int
    abandoned: int                # writes whose writer died
    unreadable: tuple[str, ...]   # records that could not be read: kept, and their objects with them


def collect(archive, rules: Iterable[Keep], protect: Mapping[str, str], now: datetime | None = None, *,
            dry_run: bool = False) -> Collected:
    """Remove the runs the rules let go and every object no remaining run names (module docstring).
    A record that cannot be read stops nothing but keeps every object: gc never guesses."""
    now = now or datetime.now(timezone.utc)
    with archive.locked(exclusive=True):
        abandoned = len(archive.clean_abandoned()) if not dry_run else 0
        records, unreadable = archive.records()
        keep = runs_to_keep(records, list(rules), protect, now)
        going = sorted(r.run_id for r in records if r.run_id not in keep)
        staying = [r for r in records if r.run_id in keep]
        objects = sorted(unreferenced(archive.object_shas(), staying)) if not unreadable else []
        if not dry_run:
            for run_id in going:  # before their objects: no record ever names an object that is gone
                archive.remove_record(run_id)
        freed = 0
        for sha in objects:
            freed += archive.object_path(sha).stat().st_size if dry_run else archive.remove_object(sha)
    return Collected(tuple(going), tuple(sorted(keep)), {k: v for k, v in protect.items() if k in keep},
                     len(objects), freed, abandoned, tuple(unreadable))
