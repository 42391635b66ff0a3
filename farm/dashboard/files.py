"""The files of a run directory, as the dashboard links them: ``run/<run>/files/<path>``.

Only a file the store lists for the run (its ``artifacts``, or a console log it keeps) is ever read,
from the run directory the store names, as a regular file reached through no symbolic link: a path
from a URL can never leave the run directory. A console log that is not on disk any more (the run
directory was moved or cleaned) is answered from the store's copy of its end.

Text files are masked (``FARM_SECRET_*``, as every output of farm) and sent as ``text/plain`` (a
log, CSV, Markdown, junit.xml: shown, never run), images as themselves, anything else as a download.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath
from typing import Iterable

import attrs

from farm.secrets import mask_bytes

#: what a run directory holds, by suffix: (content type, text)
_TYPES = {".png": ("image/png", False), ".json": ("application/json; charset=utf-8", True),
          ".log": ("text/plain; charset=utf-8", True), ".txt": ("text/plain; charset=utf-8", True),
          ".csv": ("text/plain; charset=utf-8", True), ".md": ("text/plain; charset=utf-8", True),
          ".xml": ("text/plain; charset=utf-8", True), ".svg": ("text/plain; charset=utf-8", True)}
#: the largest file the dashboard reads into memory to send or copy
MAX_BYTES = 256 << 20


@attrs.frozen
class RunFile:
    path: str               # relative to the run directory
    data: bytes
    content_type: str
    attachment: bool        # a download (not text, not an image)


def content_type(path: str, head: bytes = b"") -> tuple[str, bool]:
    """``(content type, is text)`` of a run directory's file: by its suffix, else text when ``head``
    decodes as UTF-8."""
    known = _TYPES.get(PurePosixPath(path).suffix.lower())
    if known:
        return known
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not a character cut at the end of the head
            return "application/octet-stream", False
    return "text/plain; charset=utf-8", True


def relative(path: str) -> str | None:
    """``path`` when it is a plain relative path inside a directory (no ``..``, not absolute), else None."""
    parts = PurePosixPath(path).parts
    if not parts or path.startswith("/") or any(p in ("..", ".", "") for p in parts) or "\\" in path or "\0" in path:
        return None
    return "/".join(parts)


def open_inside(run_dir: str | os.PathLike[str], path: str) -> int | None:
    """A read-only descriptor of the regular file ``path`` in ``run_dir``, opened component by
    component with no symbolic link followed; None when there is no such file."""
    rel = relative(path)
    if rel is None:
        return None
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(run_dir, flags | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None
    try:
        *folders, name = rel.split("/")
        for folder in folders:
            nxt = os.open(folder, flags | getattr(os, "O_DIRECTORY", 0), dir_fd=fd)
            os.close(fd)
            fd = nxt
        file_fd = os.open(name, flags, dir_fd=fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(file_fd).st_mode):
        os.close(file_fd)
        return None
    return file_fd


def on_disk(run_dir: str | os.PathLike[str], paths: Iterable[str]) -> dict[str, bool]:
    """Path → whether it is a regular file in ``run_dir`` (reached through no symbolic link)."""
    out = {}
    for path in paths:
        fd = open_inside(run_dir, path)
        out[path] = fd is not None
        if fd is not None:
            os.close(fd)
    return out


def read(run_dir: str | os.PathLike[str], path: str) -> RunFile | None:
    """The file ``path`` of ``run_dir`` (see :func:`open_inside`), masked when it is text."""
    fd = open_inside(run_dir, path)
    if fd is None:
        return None
    with open(fd, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        data = data[:MAX_BYTES] + b"\n[farm dashboard: cut at 256 MiB; the run directory has the whole file]\n"
    return from_bytes(path, data)


def from_bytes(path: str, data: bytes) -> RunFile:
    kind, text = content_type(path, data[:8192])
    return RunFile(path, mask_bytes(data) if text else data, kind, not text and not kind.startswith("image/"))


def stored_console(path: str, consoles: Iterable) -> RunFile | None:
    """``console/<target>.log`` from the store's copy (its end), when the store keeps that console."""
    for c in consoles:
        if path == f"console/{c.target}.log":
            note = "[farm dashboard: the end of the log, as the results store keeps it]\n" if c.truncated else ""
            return from_bytes(path, (note + c.text).encode("utf-8"))
    return None


def run_dir_of(run) -> Path:
    return Path(run.path)
