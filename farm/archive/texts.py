"""The pipeline files two runs ran, from the archive, side by side: ``farm diff`` shows their unified diff
when the runs' run.json record different pipeline sha256s (run.json keeps the pipeline by path and sha256
only; the archive keeps its text, masked as it was archived)."""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import FarmError
from ..results.rundiff import unified


def pipeline_text(archive: Any, run_id: str) -> str | None:
    """The pipeline file ``run_id`` ran, as the archive holds it; None when the archive has no record of the run
    or its record no pipeline."""
    record = archive.record(run_id)
    if record is None or record.pipeline is None:
        return None
    return archive.read(record.pipeline, f"run {run_id}: its pipeline file").decode("utf-8", errors="replace")


def pipeline_diff(archive: Any, a: tuple[str, Mapping[str, Any]], b: tuple[str, Mapping[str, Any]]
                  ) -> tuple[list[str], str]:
    """The unified diff of the pipeline files of runs ``a`` and ``b`` (each ``(run id, run.json)``) and a note on
    it: no lines when their sha256 is the same, or a run's text is not in the archive (the note says why)."""
    (id_a, info_a), (id_b, info_b) = a, b
    if info_a.get("pipeline_sha256") == info_b.get("pipeline_sha256"):
        return [], "the same pipeline file"
    if archive is None:
        return [], "the archive is off (FARM_ARCHIVE=none): no pipeline text to compare"
    texts = {}
    try:
        for run_id in (id_a, id_b):
            texts[run_id] = pipeline_text(archive, run_id)
    except FarmError as exc:
        return [], f"the pipeline files could not be read from the archive {archive.location}: {exc}"
    missing = [run_id for run_id, text in texts.items() if text is None]
    if missing:
        return [], f"run {missing[0]}'s pipeline file is not in the archive {archive.location}"
    return unified(texts[id_a], texts[id_b], f"{id_a}/{info_a.get('pipeline') or 'pipeline'}",
                   f"{id_b}/{info_b.get('pipeline') or 'pipeline'}"), "from the archive"
