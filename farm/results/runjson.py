"""run.json as its readers (``farm report``, the store, baselines) rely on it: checked once, when read.

farm writes run.json (farm.run.rundir) and ``farm import`` writes a small one; either may have been
edited by hand or come from another tool. A value of the wrong type or shape (``targets`` a list, a
boot's ``repeat`` a word, a frequency of 400 digits) is a :class:`~farm.errors.JobError` naming the
file and the field, never a traceback in a reader. Fields farm does not know are left alone.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from farm.errors import JobError

#: a run.json farm wrote holds every stage's output and image manifest: far more than a recipe
MAX_RUN_JSON_BYTES = 64 << 20
#: integers farm keeps (repeats, cores, sizes) fit in 64 bits
INT64 = (1 << 63) - 1

Check = Callable[[Any], str | None]


def _text(value: Any) -> str | None:
    return None if value is None or isinstance(value, str) else f"expected text, got {_kind(value)}"


def _whole(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        return f"expected a whole number, got {_kind(value)}"
    return None if -INT64 <= value <= INT64 else "a whole number out of range"


def _number(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected a number, got {_kind(value)}"
    try:
        return None if math.isfinite(float(value)) else f"expected a finite number, got {value!r}"
    except OverflowError:
        return "a number out of range"


def _text_or_list(value: Any) -> str | None:
    if isinstance(value, list):
        return next((f"item {i}: {p}" for i, v in enumerate(value) if (p := _text(v))), None)
    return _text(value)


def _id(value: Any) -> str | None:  # a CI job id: text, or a number some tools write
    return None if value is None or isinstance(value, (str, int)) and not isinstance(value, bool) \
        else f"expected text, got {_kind(value)}"


_TOP: dict[str, Check] = {
    **{name: _text for name in ("run_id", "pipeline", "pipeline_name", "pipeline_sha256", "who", "started",
                                "finished", "status", "current_stage", "stopped_at", "farm_version", "git_sha",
                                "replaced", "imported_from", "sha256", "frequency_source")},
    "ci_job": _id, "setup": _text_or_list, "repeats_in_boot": _whole, "frequency_hz": _number,
}
_BOOT: dict[str, Check] = {
    **{name: _text for name in ("setup", "kernel", "image", "image_key", "frequency_source")},
    "repeat": _whole, "cpus": _whole, "frequency_hz": _number, "boot_seconds": _number,
}
_TARGET: dict[str, Check] = {"env": _text, "arch": _text, **{k: v for k, v in _BOOT.items() if k != "repeat"}}
_IMAGE: dict[str, Check] = {"key": _text, "kernel_version": _text, "name": _text}
_ARTIFACT: dict[str, Check] = {"sha256": _text, "size": _whole}


def check_run_json(info: dict[str, Any], where: str) -> dict[str, Any]:
    """``info`` (a run.json's object) when what farm reads of it has the types it needs; else a
    JobError naming ``where`` (the file) and the field."""
    _fields(info, _TOP, where, "")
    for name in ("setups", "images", "targets", "place"):
        _mapping(info.get(name), where, name, optional=True)
    for name in ("envs", "stages", "failures", "resumed"):
        if info.get(name) is not None and not isinstance(info[name], list):
            raise JobError(f"{where}: {name}: expected a list, got {_kind(info[name])}")
    for image, manifest in (info.get("images") or {}).items():
        _mapping(manifest, where, f"images.{image}")
        _fields(manifest, _IMAGE, where, f"images.{image}.")
        _mapping(manifest.get("artifacts"), where, f"images.{image}.artifacts", optional=True)
        for artifact, facts in (manifest.get("artifacts") or {}).items():
            field = f"images.{image}.artifacts.{artifact}"
            _mapping(facts, where, field)
            _fields(facts, _ARTIFACT, where, f"{field}.")
    for target, facts in (info.get("targets") or {}).items():
        _mapping(facts, where, f"targets.{target}")
        _fields(facts, _TARGET, where, f"targets.{target}.")
        boots = facts.get("boots")
        if boots is None:
            continue
        if not isinstance(boots, list):
            raise JobError(f"{where}: targets.{target}.boots: expected a list, got {_kind(boots)}")
        for i, boot in enumerate(boots):
            _mapping(boot, where, f"targets.{target}.boots[{i}]")
            _fields(boot, _BOOT, where, f"targets.{target}.boots[{i}].")
    return info


def _fields(data: dict[str, Any], checks: dict[str, Check], where: str, prefix: str) -> None:
    for name, check in checks.items():
        if name in data and (problem := check(data[name])):
            raise JobError(f"{where}: {prefix}{name}: {problem}")


def _mapping(value: Any, where: str, field: str, *, optional: bool = False) -> None:
    if (value is None and optional) or isinstance(value, dict):
        return
    raise JobError(f"{where}: {field}: expected a mapping, got {_kind(value)}")


def _kind(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return f"a {'mapping' if isinstance(value, dict) else 'list'}"
    try:
        text = repr(value)
    except ValueError:
        text = "a number of thousands of digits"
    return f"{type(value).__name__} {text[:40]}"
