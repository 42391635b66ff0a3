"""Named baselines: the runs a release is qualified against, kept in a store the lab shares.

The store is a directory, ``$FARM_BASELINES`` or ``~/.local/share/farm/baselines``; in a lab it is
a shared (e.g. NFS) path set in every runner's environment, so a baseline saved by one lab host is
seen by all. Each baseline is a sub-directory named after it holding copies of the run's
``results.csv`` and ``run.json``, its ``summary.md`` (made from the run when the run has none)
and ``baseline.json`` (who saved it, when, from where). A saved baseline is a plain run directory
for every reader: ``farm qualify`` and ``farm report`` read it like any other.

Saving writes a hidden temporary directory and renames it into place, so a reader never sees half
a baseline; replacing one needs ``force``.
"""

from __future__ import annotations

import getpass
import os
import re
import secrets
import shutil
from pathlib import Path
from typing import Mapping

import attrs

from farm.errors import JobError
from farm.results.record import now_iso, to_json, write_text_atomic
from farm.results.rundata import load_run, read_run_records
from farm.results.summary import summary_markdown

STORE_ENV = "FARM_BASELINES"
DEFAULT_STORE = Path("~/.local/share/farm/baselines")
META = "baseline.json"
COPIED = ("results.csv", "run.json", "summary.md", "metrics.txt")

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")


def store_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The store; one that exists but is not a directory is a job error naming $FARM_BASELINES."""
    environ = os.environ if environ is None else environ
    path = Path(environ.get(STORE_ENV) or DEFAULT_STORE).expanduser()
    if (path.exists() or path.is_symlink()) and not path.is_dir():
        source = f"${STORE_ENV}={path}" if environ.get(STORE_ENV) else str(path)
        raise JobError(f"{source}: the baseline store is not a directory")
    return path


def check_name(name: str) -> str:
    """A baseline name is one path component: letters, digits, ``. _ + -``, not starting with a
    dot (so never ``.``/``..`` or a hidden file), no ``..`` anywhere, at most 100 characters."""
    if not _NAME.fullmatch(name) or ".." in name:
        raise JobError(f"baseline name {name!r}: use letters, digits and . _ + - (not first), no '/' "
                       "or '..', at most 100 characters, e.g. release-1.2")
    return name


@attrs.frozen
class Baseline:
    name: str
    path: Path
    run_id: str
    saved: str
    saved_by: str
    source: str
    records: int
    status: str


def _read_meta(path: Path) -> dict:
    from farm.config import load_json
    from farm.errors import FarmError

    try:
        return load_json(path / META, META)
    except FarmError:  # missing, unreadable, too deep: its fields show as '?'
        return {}


def _baseline(path: Path) -> Baseline:
    meta = _read_meta(path)
    return Baseline(name=path.name, path=path, run_id=str(meta.get("run_id", "?")),
                    saved=str(meta.get("saved", "?")), saved_by=str(meta.get("saved_by", "?")),
                    source=str(meta.get("source", "?")),
                    records=meta["records"] if type(meta.get("records")) is int else 0,
                    status=str(meta.get("status", "?")))


def failures(run) -> list[str]:
    """Why a run (farm.results.rundata.RunData) is not one that passed, or []: its status, failed or
    errored stages, failed benchmarks (pure)."""
    from farm.results.record import FAILED_METRIC

    why = []
    status = run.info.get("status")
    if status not in (None, "passed", "imported"):
        why.append(f"its status is {status}")
    bad = [s for s in run.stages if s.kind in ("failure", "error")]
    if bad:
        why.append(f"{len(bad)} stage(s) failed ({', '.join(s.name for s in bad[:3])}"
                   + (", ..." if len(bad) > 3 else "") + ")")
    failed = sorted({f"{r.suite}.{r.benchmark}" for r in run.records if r.metric == FAILED_METRIC})
    if failed:
        why.append(f"benchmark(s) {', '.join(failed)} failed")
    return why


def save_baseline(run_dir: str | os.PathLike[str], name: str, *, store: Path | None = None,
                  force: bool = False, allow_failed: bool = False) -> Baseline:
    """Copy a run's records into the store under ``name``; JobError if the name is taken (unless
    ``force``), the run has no measurements, or it did not pass (a baseline is what passed before:
    unless ``allow_failed``, :func:`failures` are refused)."""
    check_name(name)
    run_dir = Path(run_dir)
    run = load_run(run_dir)
    if not run.records:
        raise JobError(f"{run_dir}: no measurements in results.csv, nothing to keep as a baseline")
    if not allow_failed and (why := failures(run)):
        raise JobError(f"{run_dir}: did not pass ({'; '.join(why)}): a baseline is what passed before; "
                       "pass --allow-failed to save it all the same")
    store = store or store_dir()
    try:
        store.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise JobError(f"baseline store {store} (${STORE_ENV}): cannot create it: {exc.strerror}") from None
    final = store / name
    if final.exists() and not force:
        raise JobError(f"baseline {name!r} already exists in {store} (saved {_baseline(final).saved}); "
                       "pass --force to replace it")
    tmp = store / f".tmp-{name}-{secrets.token_hex(4)}"
    tmp.mkdir()
    try:
        for file in COPIED:
            if (run_dir / file).is_file():
                shutil.copy2(run_dir / file, tmp / file)
        if not (tmp / "summary.md").exists():
            write_text_atomic(tmp / "summary.md", summary_markdown(run))
        write_text_atomic(tmp / META, to_json({
            "name": name, "saved": now_iso(), "saved_by": getpass.getuser(),
            "source": str(run_dir.resolve()), "run_id": run.info.get("run_id") or run.records[0].run_id,
            "status": run.info.get("status", "unknown"), "records": len(run.records),
            "git_sha": run.info.get("git_sha"), "pipeline": run.info.get("pipeline_name"),
        }) + "\n")
        if final.exists():
            old = store / f".old-{name}-{secrets.token_hex(4)}"
            os.rename(final, old)
            os.rename(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return _baseline(final)


def run_ids(baseline: Baseline) -> set[str]:
    """Every run id farm would take ``baseline`` for: its baseline.json's (``farm baseline list``), its
    run.json's (``farm qualify``'s description of it, which a stored qualification keeps) and the run ids of
    its records (``qualify --baseline`` reads them); a JobError naming the directory when none can be read
    (a baseline.json damaged or missing beside a run.json and results.csv that say nothing: which archived run
    it needs cannot be told, and ``farm archive gc`` must not guess)."""
    import csv

    from farm.errors import FarmError
    from farm.results.rundata import read_run_json
    from farm.values import name_problem

    found = {baseline.run_id} if baseline.run_id != "?" else set()
    try:
        if isinstance(run_id := read_run_json(baseline.path / "run.json").get("run_id"), str):
            found.add(run_id)
    except FarmError:  # none, or damaged: the records may still say
        pass
    try:
        with open(baseline.path / "results.csv", newline="", encoding="utf-8") as f:
            found.update(row.get("run_id") or "" for row in csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error):
        pass
    found = {run_id for run_id in found if not name_problem(run_id)}
    if not found:
        raise JobError(f"{baseline.path}: baseline {baseline.name}: no run id can be read from its {META}, run.json "
                       "or results.csv: which archived run it needs cannot be told (mend or remove the baseline)")
    return found


def list_baselines(store: Path | None = None) -> list[Baseline]:
    store = store or store_dir()
    if not store.is_dir():
        return []
    return [_baseline(p) for p in sorted(store.iterdir())
            if p.is_dir() and not p.name.startswith(".") and (p / "results.csv").is_file()]


def resolve(spec: str, store: Path | None = None) -> Path:
    """``spec`` as a directory when one exists at that path, else as a baseline name in the store."""
    path = Path(spec)
    if path.is_dir():
        return path
    store = store or store_dir()
    if _NAME.fullmatch(spec) and ".." not in spec and (store / spec / "results.csv").is_file():
        return store / spec
    known = ", ".join(b.name for b in list_baselines(store)) or "none"
    raise JobError(f"{spec}: neither a directory nor a baseline in {store} (baselines: {known})")


def load_records(spec: str, store: Path | None = None):
    """The run directory ``spec`` resolves to and its records; JobError when it has none."""
    path = resolve(spec, store)
    csv_path = path / "results.csv"
    if not csv_path.is_file():
        raise JobError(f"{path}: no results.csv (a run directory or a saved baseline is needed)")
    return path, read_run_records(path)  # CPU figures of before read as what they were


def describe(spec: str, path: Path) -> str:
    """How a report names a side: what the user typed, and the run behind it."""
    from farm.errors import FarmError
    from farm.results.rundata import read_run_json

    info: dict = {}
    try:
        info = read_run_json(path / "run.json")
    except FarmError:  # none, or unreadable: the side is named by its path alone
        pass
    where = spec if Path(spec) == path else f"{spec} ({path})"
    facts = [f"run {info['run_id']}" if info.get("run_id") else "",
             str(info["status"]) if info.get("status") else "",
             f"git {str(info['git_sha'])[:12]}" if info.get("git_sha") else "",
             f"image {info['image'].get('name')} {str(info['image'].get('key', ''))[:12]}".rstrip()
             if isinstance(info.get("image"), dict) else ""]
    facts = [f for f in facts if f]
    return where + (f": {', '.join(facts)}" if facts else "")
