"""farm.images.cpio: the reproducible newc writer, checked against itself and against GNU cpio."""

from __future__ import annotations

import os
import random
import re
import shutil
import stat
import subprocess

import pytest

from farm.images.cpio import MAGIC, TRAILER, Entry, read_newc, write_newc

BUSYBOX = b"\x7fELF" + bytes(range(256)) * 3 + b"odd"  # 775 bytes: data needs padding
INIT = b"#!/bin/sh\nmount -t proc proc /proc\nexec sh\n"


def _tree(with_dev: bool = True) -> list[Entry]:
    entries = [
        Entry.directory("bin"),
        Entry.file("bin/busybox", BUSYBOX, 0o755),
        Entry.symlink("bin/sh", "busybox"),
        Entry.directory("etc"),
        Entry.file("etc/hostname", b"farm-target\n"),
        Entry.file("etc/empty", b""),
        Entry.file("init", INIT, 0o755),
        Entry.directory("lib"),
        Entry.symlink("lib/ld-linux-aarch64.so.1", "/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1"),
        Entry.directory("proc", 0o555),
    ]
    if with_dev:
        entries += [Entry.directory("dev"), Entry.chardev("dev/console", 5, 1)]
    return entries


def _headers(archive: bytes) -> list[tuple[int, str, list[int], int]]:
    """(header offset, name, the 13 header fields, data offset) of every record, the trailer included."""
    out, pos = [], 0
    while True:
        assert archive[pos:pos + 6] == MAGIC, f"no magic at {pos}"
        fields = [int(archive[pos + 6 + 8 * i: pos + 14 + 8 * i], 16) for i in range(13)]
        namesize, size = fields[11], fields[6]
        name = archive[pos + 110: pos + 110 + namesize - 1].decode()
        assert archive[pos + 110 + namesize - 1] == 0  # NUL-terminated name
        data = pos + 110 + namesize + (-(110 + namesize) % 4)
        out.append((pos, name, fields, data))
        if name == TRAILER:
            return out
        pos = data + size + (-size % 4)


# --- round trip and reproducibility ---

def test_round_trip_gives_the_entries_sorted_by_path():
    entries = _tree()
    back = read_newc(write_newc(entries))
    assert back == sorted(entries, key=lambda e: e.path)
    assert [e.path for e in back] == [
        "bin", "bin/busybox", "bin/sh", "dev", "dev/console", "etc", "etc/empty", "etc/hostname", "init",
        "lib", "lib/ld-linux-aarch64.so.1", "proc"]
    by_path = {e.path: e for e in back}
    assert by_path["bin/busybox"].data == BUSYBOX
    assert by_path["bin/busybox"].mode == 0o100755
    assert by_path["bin/sh"].mode == 0o120777 and by_path["bin/sh"].data == b"busybox"
    assert by_path["proc"].mode == 0o040555
    assert by_path["etc/empty"].data == b""


def test_leading_slash_is_dropped():
    (entry,) = read_newc(write_newc([Entry.file("/etc/motd", b"hi\n")]))
    assert entry == Entry.file("etc/motd", b"hi\n")


def test_same_bytes_whatever_the_input_order():
    entries = _tree()
    reference = write_newc(entries)
    rng = random.Random(1234)
    for _ in range(20):
        shuffled = entries[:]
        rng.shuffle(shuffled)
        assert write_newc(shuffled) == reference
    assert write_newc(reversed(entries)) == reference


def test_inode_numbers_follow_the_sorted_paths():
    records = _headers(write_newc(reversed(_tree())))
    names = [name for _, name, _, _ in records]
    inodes = [fields[0] for _, _, fields, _ in records]
    assert names[-1] == TRAILER and inodes[-1] == 0
    assert names[:-1] == sorted(names[:-1], key=str.encode)
    assert inodes[:-1] == list(range(1, len(names)))


def test_paths_sort_by_bytes():
    # '-' (0x2d) sorts before '/' (0x2f) and 'B' before 'a': byte order, not a locale's
    paths = [e.path for e in read_newc(write_newc(
        [Entry.directory("a"), Entry.file("a/x", b""), Entry.file("a-b", b""), Entry.file("B", b"")]))]
    assert paths == ["B", "a", "a-b", "a/x"]


def test_owner_mtime_nlink_fields():
    for _, name, fields, _ in _headers(write_newc(_tree()))[:-1]:
        ino, mode, uid, gid, nlink, mtime, size, devmaj, devmin, rmaj, rmin, namesize, check = fields
        assert (uid, gid, mtime, devmaj, devmin, check) == (0, 0, 0, 0, 0, 0), name
        assert nlink == (2 if stat.S_ISDIR(mode) else 1), name
        assert namesize == len(name.encode()) + 1


def test_headers_and_data_are_4_byte_aligned():
    archive = write_newc(_tree())
    records = _headers(archive)
    assert len(records) == 13  # 12 entries and the trailer
    for header, name, fields, data in records:
        assert header % 4 == 0, name
        assert data % 4 == 0, name
    # the padding is NUL bytes, and the archive ends 4-aligned right after the trailer's name
    busybox = next(r for r in records if r[1] == "bin/busybox")
    end = busybox[3] + len(BUSYBOX)
    assert archive[end:end + (-len(BUSYBOX) % 4)] == b"\0" * (-len(BUSYBOX) % 4)
    assert len(archive) % 4 == 0
    assert archive.endswith(b"TRAILER!!!\0" + b"\0" * (-(110 + 11) % 4))


def test_chardev_keeps_its_rdev():
    records = _headers(write_newc(_tree()))
    fields = next(f for _, name, f, _ in records if name == "dev/console")
    assert stat.S_ISCHR(fields[1]) and stat.S_IMODE(fields[1]) == 0o600
    assert (fields[9], fields[10]) == (5, 1)  # rdevmajor, rdevminor
    assert fields[6] == 0
    back = {e.path: e for e in read_newc(write_newc(_tree()))}
    assert back["dev/console"].rdev == (5, 1)
    assert back["dev/console"].mode == stat.S_IFCHR | 0o600


# --- refused input ---

def test_identical_duplicates_collapse():
    once = write_newc([Entry.directory("bin"), Entry.file("bin/sh", b"x")])
    assert write_newc([Entry.directory("bin"), Entry.file("bin/sh", b"x"),
                       Entry.directory("/bin/"), Entry.file("/bin/sh", b"x")]) == once


@pytest.mark.parametrize("second", [
    Entry.file("bin/sh", b"other"),
    Entry.file("bin/sh", b"x", 0o755),
    Entry.symlink("bin/sh", "busybox"),
    Entry.file("/bin/sh", b"y"),
])
def test_conflicting_duplicates_raise(second):
    with pytest.raises(ValueError, match="two different entries for 'bin/sh'"):
        write_newc([Entry.file("bin/sh", b"x"), second])


@pytest.mark.parametrize("path", ["..", "../etc/passwd", "bin/../../etc/passwd", "/../x", "a/..", "", "/", "//"])
def test_dotdot_and_empty_paths_raise(path):
    with pytest.raises(ValueError, match="invalid cpio path"):
        write_newc([Entry.file("ok", b""), Entry.file(path, b"x")])


def test_dots_inside_a_name_are_fine():
    (entry,) = read_newc(write_newc([Entry.file("lib/..so..", b"x")]))
    assert entry.path == "lib/..so.."


def test_read_rejects_bad_magic_and_truncation():
    archive = write_newc(_tree())
    with pytest.raises(ValueError, match="bad cpio magic at offset 0"):
        read_newc(b"070707" + archive[6:])  # the old portable format's magic
    cut = _headers(archive)[-1][0]  # drop the trailer record
    with pytest.raises(ValueError, match=f"bad cpio magic at offset {cut}"):
        read_newc(archive[:cut])


# --- against GNU cpio ---

def _gnu_cpio() -> str:
    path = shutil.which("cpio")
    if path is None:
        pytest.skip("GNU cpio is not installed (scripts/setup.sh installs it)")
    return path


_LISTING = re.compile(
    r"^(?P<mode>[-dlcbps][-rwxsStT]{9})\s+(?P<nlink>\d+)\s+(?P<user>\S+)\s+(?P<group>\S+)\s+"
    r"(?P<size>\d+|\d+,\s*\d+)\s+(?P<date>[A-Z][a-z]{2}\s+\d+\s+\d{4})\s(?P<name>.*)$")


def test_gnu_cpio_lists_what_was_written():
    cpio = _gnu_cpio()
    proc = subprocess.run([cpio, "-t", "-v"], input=write_newc(_tree()), capture_output=True, check=True,
                          env={**os.environ, "LC_ALL": "C", "TZ": "UTC"})
    rows = {}
    for line in proc.stdout.decode().splitlines():
        m = _LISTING.match(line)
        assert m, f"unexpected cpio -tv line {line!r}"
        name, _, target = m["name"].partition(" -> ")
        rows[name] = (m["mode"], int(m["nlink"]), m["user"], m["group"], re.sub(r"\s+", " ", m["size"]),
                      m["date"].split(), target)
    epoch = ["Jan", "1", "1970"]
    assert rows == {
        "bin": ("drwxr-xr-x", 2, "root", "root", "0", epoch, ""),
        "bin/busybox": ("-rwxr-xr-x", 1, "root", "root", str(len(BUSYBOX)), epoch, ""),
        "bin/sh": ("lrwxrwxrwx", 1, "root", "root", "7", epoch, "busybox"),
        "dev": ("drwxr-xr-x", 2, "root", "root", "0", epoch, ""),
        "dev/console": ("crw-------", 1, "root", "root", "5, 1", epoch, ""),
        "etc": ("drwxr-xr-x", 2, "root", "root", "0", epoch, ""),
        "etc/empty": ("-rw-r--r--", 1, "root", "root", "0", epoch, ""),
        "etc/hostname": ("-rw-r--r--", 1, "root", "root", "12", epoch, ""),
        "init": ("-rwxr-xr-x", 1, "root", "root", str(len(INIT)), epoch, ""),
        "lib": ("drwxr-xr-x", 2, "root", "root", "0", epoch, ""),
        "lib/ld-linux-aarch64.so.1": ("lrwxrwxrwx", 1, "root", "root", "44", epoch,
                                      "/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1"),
        "proc": ("dr-xr-xr-x", 2, "root", "root", "0", epoch, ""),
    }
    # the listing is in archive order, which is the sorted order
    names = [(_LISTING.match(l)["name"].partition(" -> ")[0]) for l in proc.stdout.decode().splitlines()]
    assert names == sorted(names)


def test_gnu_cpio_extracts_contents_and_symlinks(tmp_path):
    cpio = _gnu_cpio()
    out = tmp_path / "root"
    out.mkdir()
    proc = subprocess.run([cpio, "-i", "-d", "--quiet"], input=write_newc(_tree(with_dev=False)), cwd=out,
                          capture_output=True, env={**os.environ, "LC_ALL": "C"})
    assert proc.returncode == 0, proc.stderr.decode()
    assert (out / "bin/busybox").read_bytes() == BUSYBOX
    assert (out / "init").read_bytes() == INIT
    assert (out / "etc/hostname").read_text() == "farm-target\n"
    assert (out / "etc/empty").read_bytes() == b""
    assert os.readlink(out / "bin/sh") == "busybox"
    assert (out / "bin/sh").resolve() == (out / "bin/busybox").resolve()
    assert os.readlink(out / "lib/ld-linux-aarch64.so.1") == "/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1"
    assert stat.S_IMODE((out / "bin/busybox").stat().st_mode) == 0o755
    assert stat.S_IMODE((out / "etc/hostname").stat().st_mode) == 0o644
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "bin", "bin/busybox", "bin/sh", "etc", "etc/empty", "etc/hostname", "init", "lib",
        "lib/ld-linux-aarch64.so.1", "proc"]


def test_reads_an_archive_gnu_cpio_wrote(tmp_path):
    """read_newc on real `cpio -o -H newc` output (which pads to 512-byte blocks after the trailer)."""
    cpio = _gnu_cpio()
    src = tmp_path / "src"
    (src / "bin").mkdir(parents=True)
    (src / "bin/busybox").write_bytes(BUSYBOX)
    (src / "bin/busybox").chmod(0o755)
    (src / "bin/sh").symlink_to("busybox")
    (src / "etc").mkdir()
    (src / "etc/hostname").write_text("farm-target\n")
    names = b"bin\nbin/busybox\nbin/sh\netc\netc/hostname\n"
    proc = subprocess.run([cpio, "-o", "-H", "newc", "--quiet"], input=names, cwd=src, capture_output=True,
                          check=True)
    assert len(proc.stdout) % 512 == 0
    entries = {e.path: e for e in read_newc(proc.stdout)}
    assert list(entries) == ["bin", "bin/busybox", "bin/sh", "etc", "etc/hostname"]
    assert entries["bin/busybox"].data == BUSYBOX
    assert entries["bin/busybox"].mode == stat.S_IFREG | 0o755
    assert stat.S_ISLNK(entries["bin/sh"].mode) and entries["bin/sh"].data == b"busybox"
    assert entries["etc/hostname"].data == b"farm-target\n"
    assert stat.S_ISDIR(entries["etc"].mode)
