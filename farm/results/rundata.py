"""A run directory read back from its files alone: ``results.csv`` (its CPU figures saying their CPU),
``run.json`` (checked as farm's readers need it) and ``junit.xml``'s stages, whichever exist (a run that
died early is still read)."""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import attrs

from farm.errors import JobError, ParseError
from farm.results.csvout import read_records
from farm.results.identity import with_cpu_scope_of_run
from farm.results.record import Record
from farm.results.runjson import MAX_RUN_JSON_BYTES, check_run_json

PathLike = str | os.PathLike[str]


@attrs.frozen
class StageResult:
    """One ``<testcase>`` of junit.xml."""

    name: str
    classname: str
    seconds: float
    kind: str  # pass, failure, error, skipped
    message: str


@attrs.frozen
class RunData:
    """What a run directory holds, read back."""

    path: Path
    records: tuple[Record, ...]
    info: dict[str, Any]          # run.json ({} when absent)
    stages: tuple[StageResult, ...]  # junit.xml (() when absent)
    missing: tuple[str, ...]      # which of results.csv, run.json, junit.xml were not there


def load_run(run_dir: PathLike) -> RunData:
    """Read a run directory; JobError when it is not one (none of the three files)."""
    path = Path(run_dir)
    if not path.is_dir():
        raise JobError(f"{path}: no such run directory")
    missing = []
    records: list[Record] = []
    if (path / "results.csv").is_file():
        records = read_records(path / "results.csv")
    else:
        missing.append("results.csv")
    info: dict[str, Any] = {}
    if (path / "run.json").is_file():
        info = read_run_json(path / "run.json")
    else:
        missing.append("run.json")
    stages: tuple[StageResult, ...] = ()
    if (path / "junit.xml").is_file():
        stages = read_stages(path / "junit.xml")
    else:
        missing.append("junit.xml")
    if len(missing) == 3:
        raise JobError(f"{path}: not a run directory (no results.csv, run.json or junit.xml)")
    # CPU figures written before records said their CPU: a guest setup's were its vCPUs' (run.json's flow)
    records = with_cpu_scope_of_run(records, info)
    return RunData(path, tuple(records), info, stages, tuple(missing))


def read_run_records(run_dir: PathLike) -> list[Record]:
    """``run_dir``'s results.csv, its CPU figures saying their CPU: one written before records said it is
    what its run.json says its setup's shell was (a guest's: its vCPUs'; farm.results.identity)."""
    path = Path(run_dir)
    records = read_records(path / "results.csv")
    if (path / "run.json").is_file():
        records = with_cpu_scope_of_run(records, read_run_json(path / "run.json"))
    return records


def read_run_json(path: Path) -> dict[str, Any]:
    """A run.json: at most :data:`MAX_RUN_JSON_BYTES`, nested at most as deep as farm's files
    (farm.config.load_json), and of the types its readers need (farm.results.runjson); a JobError
    names the file and field."""
    from farm.config import load_json

    return check_run_json(load_json(path, "run.json", limit=MAX_RUN_JSON_BYTES), str(path))


def read_stages(path: PathLike) -> tuple[StageResult, ...]:
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise ParseError(f"{path}: not XML ({e})") from None
    stages = []
    for case in root.iter("testcase"):
        kind, message = "pass", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                kind, message = child.tag, child.get("message") or (child.text or "")
                break
        try:
            seconds = float(case.get("time") or 0)
        except ValueError:
            seconds = math.nan
        stages.append(StageResult(case.get("name", ""), case.get("classname", ""), seconds, kind, message))
    return tuple(stages)
