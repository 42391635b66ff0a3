"""A run on GitHub Actions: its summary appended to the job summary (``$GITHUB_STEP_SUMMARY``), and an
``::error`` annotation per failed stage."""

from __future__ import annotations

from farm.errors import JobError
from farm.secrets import mask
from farm.results.rundata import PathLike, RunData


def _annotation_escape(text: str, *, prop: bool = False) -> str:
    """GitHub's workflow-command escaping: ``%``, CR, LF always; ``:`` and ``,`` in a property too."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def github_annotations(run: RunData) -> list[str]:
    """An ``::error`` workflow command per failed or errored stage (junit.xml testcase): GitHub shows them
    on the run's page and its checks, the JUnit results without a third-party action (pure)."""
    out = []
    for s in run.stages:
        if s.kind not in ("failure", "error"):
            continue
        kind = "test failure" if s.kind == "failure" else "error"
        title = _annotation_escape(f"farm {kind}: {s.name}", prop=True)
        out.append(f"::error title={title}::{_annotation_escape(mask(s.message) or s.kind)}")
    return out


def append_step_summary(path: PathLike, markdown: str) -> None:
    """Append to a GitHub job summary file (several reports in one job each add theirs); one that
    cannot be appended to (a directory, a missing folder, no permission) is a JobError naming
    ``$GITHUB_STEP_SUMMARY`` (the run's own files are written before)."""
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(mask(markdown.rstrip("\n")) + "\n\n")
    except OSError as exc:
        raise JobError(f"$GITHUB_STEP_SUMMARY={path}: cannot append the job summary to it: "
                       f"{exc.strerror or exc} (the run's files are written)") from None
