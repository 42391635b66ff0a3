"""A reproducible cpio "newc" writer, the format the Linux kernel unpacks as an initramfs.

Reproducible means: entries sorted by path, inode numbers assigned in that order, every mtime 0,
owner root:root. Given the same entries, the bytes are the same.
"""

from __future__ import annotations

import posixpath
import stat
from typing import Iterable

import attrs

MAGIC = b"070701"
TRAILER = "TRAILER!!!"


@attrs.frozen
class Entry:
    """One file in the archive. ``path`` is relative ("bin/busybox"), without a leading slash."""

    path: str
    mode: int  # full st_mode: type bits | permission bits
    data: bytes = b""
    rdev: tuple[int, int] = (0, 0)

    @classmethod
    def directory(cls, path: str, perm: int = 0o755) -> "Entry":
        return cls(path, stat.S_IFDIR | perm)

    @classmethod
    def file(cls, path: str, data: bytes, perm: int = 0o644) -> "Entry":
        return cls(path, stat.S_IFREG | perm, data)

    @classmethod
    def symlink(cls, path: str, target: str) -> "Entry":
        return cls(path, stat.S_IFLNK | 0o777, target.encode())

    @classmethod
    def chardev(cls, path: str, major: int, minor: int, perm: int = 0o600) -> "Entry":
        return cls(path, stat.S_IFCHR | perm, b"", (major, minor))


def _pad4(n: int) -> bytes:
    return b"\0" * (-n % 4)


def _header(ino: int, entry: Entry, name: bytes) -> bytes:
    nlink = 2 if stat.S_ISDIR(entry.mode) else 1
    fields = (ino, entry.mode, 0, 0, nlink, 0, len(entry.data), 0, 0, entry.rdev[0], entry.rdev[1],
              len(name) + 1, 0)
    return MAGIC + b"".join(b"%08X" % f for f in fields)


def write_newc(entries: Iterable[Entry]) -> bytes:
    """The archive bytes. Duplicate paths are an error: the kernel would silently keep the last one."""
    by_path: dict[str, Entry] = {}
    for entry in entries:
        path = posixpath.normpath("/" + entry.path).lstrip("/")  # ./bin//sh and bin/sh are one file
        if not path or ".." in entry.path.split("/"):
            raise ValueError(f"invalid cpio path {entry.path!r}")
        if path in by_path and by_path[path] != attrs.evolve(entry, path=path):
            raise ValueError(f"two different entries for {path!r}")
        by_path[path] = attrs.evolve(entry, path=path)
    out = bytearray()
    for ino, path in enumerate(sorted(by_path, key=lambda p: p.encode()), start=1):
        entry = by_path[path]
        name = path.encode()
        head = _header(ino, entry, name)
        out += head + name + b"\0" + _pad4(len(head) + len(name) + 1)
        out += entry.data + _pad4(len(entry.data))
    name = TRAILER.encode()
    head = _header(0, Entry(TRAILER, 0), name)
    out += head + name + b"\0" + _pad4(len(head) + len(name) + 1)
    return bytes(out)


def read_newc(data: bytes) -> list[Entry]:
    """Parse a newc archive (for tests and for inspecting images)."""
    entries: list[Entry] = []
    pos = 0
    while True:
        if data[pos:pos + 6] != MAGIC:
            raise ValueError(f"bad cpio magic at offset {pos}")
        fields = [int(data[pos + 6 + 8 * i: pos + 14 + 8 * i], 16) for i in range(13)]
        mode, size, rmaj, rmin, namesize = fields[1], fields[6], fields[9], fields[10], fields[11]
        pos += 110
        name = data[pos:pos + namesize - 1].decode()
        pos += namesize + (-(110 + namesize) % 4)
        body = data[pos:pos + size]
        pos += size + (-size % 4)
        if name == TRAILER:
            return entries
        entries.append(Entry(name, mode, body, (rmaj, rmin)))
