"""run.json as its readers (``farm report``, the store, baselines) rely on it: checked once, when read.

farm writes run.json (farm.run.rundir) and ``farm import`` writes a small one; either may have been
edited by hand or come from another tool. A value of the wrong type or shape (``targets`` a list, a
boot's ``repeat`` a word, a frequency of 400 digits) is a :class:`~farm.errors.JobError` naming the
file and the field, never a traceback in a reader. What the readers rely on is declared here
(farm.schema); fields farm does not know are left alone (each class is ``OPEN``), and the readers keep
the mapping as the file has it.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from ..schema import setting

#: a run.json farm wrote holds every stage's output and image manifest: far more than a recipe
MAX_RUN_JSON_BYTES = 64 << 20
#: integers farm keeps (repeats, cores, sizes) fit in 64 bits
INT64 = (1 << 63) - 1
#: what the classes below leave alone
OTHERS = "a field its readers do not rely on: left alone"


def _int64(value: int) -> str | None:
    return None if -INT64 <= value <= INT64 else "a whole number out of range"


def _finite(value: float) -> str | None:
    return None if math.isfinite(value) else f"expected a finite number, got {value!r}"


def _text(doc: str = "") -> Any:
    return setting(None, doc=doc)


def _whole(doc: str = "") -> Any:
    return setting(None, check=_int64, doc=doc)


def _number(doc: str = "") -> Any:
    return setting(None, check=_finite, doc=doc)


@attrs.frozen
class ArtifactFacts:
    """An artifact of an image the run booted."""

    OPEN = OTHERS

    sha256: str | None = _text()
    size: int | None = _whole()


@attrs.frozen
class ImageFacts:
    """An image the run booted: its manifest, and where it was."""

    OPEN = OTHERS

    key: str | None = _text()
    kernel_version: str | None = _text()
    name: str | None = _text()
    artifacts: dict[str, ArtifactFacts] | None = setting(None)


@attrs.frozen
class BootedFacts:
    """What a boot records: what it booted, how, and what the target said of itself."""

    OPEN = OTHERS

    setup: str | None = _text()
    kernel: str | None = _text()
    image: str | None = _text()
    image_key: str | None = _text()
    frequency_source: str | None = _text()
    cpus: int | None = _whole()
    frequency_hz: float | None = _number()
    boot_seconds: float | None = _number()


@attrs.frozen
class BootFacts(BootedFacts):
    """A boot of a target."""

    repeat: int | None = _whole()


@attrs.frozen
class TargetFacts(BootedFacts):
    """A target of the run: its env file, its architecture, its boots (and the facts of its last)."""

    env: str | None = _text()
    arch: str | None = _text()
    boots: list[BootFacts] | None = setting(None)


@attrs.frozen
class RunJson:
    """A run.json, as its readers rely on it."""

    OPEN = OTHERS

    run_id: str | None = _text()
    pipeline: str | None = _text()
    pipeline_name: str | None = _text()
    pipeline_sha256: str | None = _text()
    who: str | None = _text()
    started: str | None = _text()
    finished: str | None = _text()
    status: str | None = _text()
    current_stage: str | None = _text()
    stopped_at: str | None = _text()
    farm_version: str | None = _text()
    git_sha: str | None = _text()
    replaced: str | None = _text()
    imported_from: str | None = _text()
    sha256: str | None = _text()
    frequency_source: str | None = _text()
    #: a CI job's id: text, or a number some tools write
    ci_job: str | int | None = setting(None)
    setup: str | list[str] | None = setting(None)
    repeats_in_boot: int | None = _whole()
    frequency_hz: float | None = _number()
    setups: dict[str, Any] | None = setting(None)
    place: dict[str, Any] | None = setting(None)
    images: dict[str, ImageFacts] | None = setting(None)
    targets: dict[str, TargetFacts] | None = setting(None)
    envs: list[Any] | None = setting(None)
    stages: list[Any] | None = setting(None)
    failures: list[Any] | None = setting(None)
    resumed: list[Any] | None = setting(None)


def check_run_json(info: dict[str, Any], where: str) -> dict[str, Any]:
    """``info`` (a run.json's object) when what farm reads of it has the types it needs; else a
    JobError naming ``where`` (the file) and the field."""
    from ..config import json_node
    from ..schema.read import structure

    structure(json_node(info, where), RunJson)
    return info
