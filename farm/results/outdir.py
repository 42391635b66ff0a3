"""Output directories (``--out``) are never silently reused.

A run, an import, a comparison or a qualification writes into a directory of its own: a directory
that does not exist yet, or an empty one. Anything else would mix two results (a new run.json over
an old results.csv, an old junit.xml beside new records) or overwrite what was measured:

- a non-empty directory is refused, unless ``--force``: its old content is then *moved aside*, to
  ``DIR.replaced-<UTC time>`` beside it (never removed: nothing measured is lost), and the command
  starts in an empty directory;
- a directory holding nothing but the command's own outputs (``compare.*``, ``qualify.*``) is that
  command's to regenerate: those files are removed first, as ``farm report`` rewrites its own;
- ``--out`` that is a symbolic link is refused: farm writes where it was told, not where a link
  points;
- ``farm compare`` and ``farm qualify`` never write into a run directory, even with ``--force``: a
  qualification's junit.xml would replace the run's (GitLab would show the gate instead of the
  run's stages), and moving the run aside would hide the very run being qualified.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import attrs

from farm.errors import JobError

PathLike = str | os.PathLike[str]

#: files that make a directory a run directory (or an import, or a saved baseline)
RUN_MARKERS = ("run.json", "results.csv")
#: what the messages suggest
RUN_HINT = "use --force to start it anew (the old content is moved aside) or --resume to finish that run"
FORCE_HINT = "use --force to start it anew (the old content is moved aside)"
#: the entries of a run directory farm writes into, which must be its own files, not links
RUN_ENTRIES = ("results.csv", "run.json", "junit.xml", "summary.md", "metrics.txt", "console", "plots")


@attrs.frozen
class OutDir:
    path: Path
    #: where the old content went (``--force`` on a non-empty directory), else None
    moved_to: Path | None = None


def is_run_dir(path: PathLike) -> bool:
    return any((Path(path) / name).exists() for name in RUN_MARKERS)


def prepare_out_dir(path: PathLike, *, force: bool = False, own: frozenset[str] = frozenset(),
                    hint: str = FORCE_HINT, refuse_run_dir: str | None = None) -> OutDir:
    """Make ``path`` an empty directory of the command's own, or raise JobError saying why not.

    ``own``: file names of the command's outputs; a directory holding only those is emptied.
    ``refuse_run_dir``: why a run directory may not be the output (refused even with ``force``).
    """
    path = Path(path)
    _refuse_symlink(path)
    if path.exists() and not path.is_dir():
        raise JobError(f"--out {path}: exists and is not a directory")
    entries = sorted(os.listdir(path)) if path.is_dir() else []
    moved_to = None
    if entries:
        if refuse_run_dir and is_run_dir(path):
            raise JobError(f"--out {path}: is a run directory ({_describe(path, entries)}): {refuse_run_dir}")
        if own and set(entries) <= own and all((path / e).is_file() or (path / e).is_symlink() for e in entries):
            for entry in entries:
                (path / entry).unlink()  # a symlink among them: the link goes, never its target
        elif not force:
            raise JobError(f"--out {path}: not empty ({_describe(path, entries)}): {hint}")
        else:
            moved_to = _move_aside(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise JobError(f"--out {path}: cannot create it: {exc.strerror}") from None
    _refuse_symlink(path)  # made a link between the check and mkdir
    return OutDir(path, moved_to)


def check_run_entries(run_dir: PathLike) -> None:
    """A run directory to write into again (``--resume``): neither it nor the files farm writes
    there may be symbolic links (appends and the console log would follow them)."""
    run_dir = Path(run_dir)
    if run_dir.is_symlink():
        raise JobError(f"{run_dir}: is a symbolic link (to {os.readlink(run_dir)}): give the run directory itself")
    links = [run_dir / e for e in RUN_ENTRIES if (run_dir / e).is_symlink()]
    if (run_dir / "console").is_dir() and not (run_dir / "console").is_symlink():
        links += [p for p in sorted((run_dir / "console").iterdir()) if p.is_symlink()]
    if links:
        raise JobError(f"{run_dir}: {', '.join(p.name for p in links)}: symbolic link(s) where farm writes its "
                       "own files; farm writes only files of its own")


def _refuse_symlink(path: Path) -> None:
    if path.is_symlink():
        raise JobError(f"--out {path}: is a symbolic link (to {os.readlink(path)}): give a directory, not a link")


def _describe(path: Path, entries: list[str]) -> str:
    run_json = path / "run.json"
    if run_json.is_file():
        from farm.config import load_json
        from farm.errors import FarmError

        try:
            run_id = load_json(run_json, "run.json", limit=64 << 20).get("run_id")
        except FarmError:  # unreadable, too deep: the listing below names the files
            run_id = None
        if run_id and isinstance(run_id, str):
            return f"it holds run {run_id}"
    shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
    return f"it holds {shown}"


def _move_aside(path: Path) -> Path:
    absolute = Path(os.path.abspath(path))
    cwd = Path(os.path.abspath(os.getcwd()))
    if cwd == absolute or absolute in cwd.parents:
        raise JobError(f"--out {path}: is the current directory or holds it; --force cannot move it aside")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    for n in range(100):
        aside = absolute.with_name(f"{absolute.name}.replaced-{stamp}" + (f"-{n}" if n else ""))
        if aside.exists() or aside.is_symlink():
            continue
        try:
            os.rename(absolute, aside)
        except OSError as exc:
            raise JobError(f"--out {path}: cannot move its old content aside to {aside}: {exc.strerror}; "
                           "move or remove it yourself") from None
        return aside
    raise JobError(f"--out {path}: too many {absolute.name}.replaced-{stamp}* beside it")
