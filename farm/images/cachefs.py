"""File-system primitives of farm's cache: locks, private build directories, atomic writes, stat fingerprints.

Several ``farm build`` processes share one cache (a CI runner starts jobs side by side), and any of them may
be killed at any moment. So everything that fills the cache is built in a private directory and published
by one ``rename``, under an ``fcntl.flock`` on a lock file (the kernel drops the lock when the process dies,
however it dies); and a private directory whose lock nobody holds any more is known to be abandoned, and
removed by the next build.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import sys
import time
from pathlib import Path
from typing import Iterator

TRASH_PREFIX = ".trash-"
LEGACY_ABANDONED_S = 3600  # a private dir without a lock file (older farm): abandoned after an hour


def say(message: str) -> None:
    """A line for the user on stderr (the last line of stdout is reserved for the image directory)."""
    print(f"farm: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` (created if needed) for the block; waits for other holders."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


@contextlib.contextmanager
def private_dir(parent: Path, prefix: str) -> Iterator[Path]:
    """A new directory ``parent/<prefix><random>``, locked for the block through ``<dir>.lock``.

    The lock file is created and locked *before* the directory exists, so whoever sees the directory can
    tell by the lock whether its maker is still alive (:func:`clean_abandoned`). The directory is removed
    at the end unless the block renamed it away (published it).
    """
    parent.mkdir(parents=True, exist_ok=True)
    path = parent / f"{prefix}{secrets.token_hex(6)}"
    lock = path.with_name(path.name + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        path.mkdir()
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
            lock.unlink(missing_ok=True)
    finally:
        os.close(fd)


def clean_abandoned(parent: Path, prefix: str) -> list[Path]:
    """Remove the private directories under ``parent`` whose maker died (their lock is free); returns them."""
    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    for path in sorted(parent.iterdir()):
        if not path.name.startswith(prefix) or path.name.endswith(".lock") or path.is_symlink() or not path.is_dir():
            continue
        lock = path.with_name(path.name + ".lock")
        if not lock.exists():
            with contextlib.suppress(FileNotFoundError):
                if time.time() - path.stat().st_mtime > LEGACY_ABANDONED_S:
                    shutil.rmtree(path, ignore_errors=True)
                    removed.append(path)
            continue
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:  # its maker just finished
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # its maker is alive
                continue
            if path.exists():
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
            lock.unlink(missing_ok=True)
        finally:
            os.close(fd)
    return removed


def discard(path: Path) -> None:
    """Remove a cache entry without a moment where half of it is visible under its name: first renamed
    into a private directory beside it (cleaned by :func:`clean_abandoned` if we die before removing it)."""
    with private_dir(path.parent, TRASH_PREFIX) as trash:
        os.replace(path, trash / "old")


def atomic_write(path: Path, data: str) -> None:
    """Write ``path`` whole or not at all: a private temporary file, fsync'ed, renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def stat_fingerprint(path: Path) -> list[int]:
    """What changes when a file's bytes may have changed: size, mtime, ctime (not settable by users), inode."""
    st = os.stat(path, follow_symlinks=False)
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def tool_fingerprint(path: str | Path) -> str:
    """A program that goes into a cache key (a compiler, zstd): its real path, size and mtime, which change
    with its package, so nothing is run to ask its version."""
    real = Path(os.path.realpath(path))
    st = real.stat()
    return f"{real}:{st.st_size}:{st.st_mtime_ns}"


def is_inside(path: Path, root: Path) -> bool:
    """Whether ``path`` (which need not exist) is ``root`` or lies below it, symlinks resolved."""
    real, real_root = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    return real == real_root or real_root in real.parents
