"""The cache's file-system primitives: locks that die with their holder, abandoned private dirs, containment;
and the local includes a program's cache key hashes."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time

from farm.images import cachefs
from farm.images.programs import CFLAGS, Program, local_includes

HOLD = "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); fcntl.flock(fd, fcntl.LOCK_EX); " \
       "print('held', flush=True); time.sleep(60)"


def test_abandoned_private_dir_is_removed_and_a_live_one_kept(tmp_path):
    with cachefs.private_dir(tmp_path, ".build-") as live:
        dead = tmp_path / ".build-dead"
        dead.mkdir()
        (dead / "Image").write_bytes(b"x" * 1000)
        (tmp_path / ".build-dead.lock").touch()  # its maker died: nobody holds the lock
        assert cachefs.clean_abandoned(tmp_path, ".build-") == [dead]
        assert live.is_dir() and not dead.exists() and not (tmp_path / ".build-dead.lock").exists()
    assert not live.exists() and list(tmp_path.iterdir()) == []


def test_a_dir_whose_lock_another_process_holds_is_kept(tmp_path):
    busy = tmp_path / ".build-busy"
    busy.mkdir()
    lock = tmp_path / ".build-busy.lock"
    lock.touch()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert cachefs.clean_abandoned(tmp_path, ".build-") == []
        assert busy.is_dir()
    finally:
        holder.kill()
        holder.wait()
    assert cachefs.clean_abandoned(tmp_path, ".build-") == [busy]  # the kernel dropped the dead holder's lock


def test_legacy_dir_without_lock_is_removed_only_when_old(tmp_path):
    young, old = tmp_path / ".build-young", tmp_path / ".build-old"
    young.mkdir()
    old.mkdir()
    past = time.time() - cachefs.LEGACY_ABANDONED_S - 60
    os.utime(old, (past, past))
    assert cachefs.clean_abandoned(tmp_path, ".build-") == [old]
    assert young.is_dir()


def test_is_inside_resolves_symlinks_and_missing_paths(tmp_path):
    cache = tmp_path / "cache"
    (cache / "images" / "x").mkdir(parents=True)
    os.symlink(cache / "images" / "x", tmp_path / "link")
    assert cachefs.is_inside(cache, cache)
    assert cachefs.is_inside(tmp_path / "link", cache)
    assert cachefs.is_inside(tmp_path / "link" / "new" / "deeper", cache)
    assert not cachefs.is_inside(tmp_path / "cache-other", cache)
    assert not cachefs.is_inside(tmp_path, cache)


def test_atomic_write_leaves_no_temporary(tmp_path):
    cachefs.atomic_write(tmp_path / "r.json", "{}\n")
    cachefs.atomic_write(tmp_path / "r.json", "[]\n")
    assert (tmp_path / "r.json").read_text() == "[]\n"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_local_includes_are_followed_recursively(tmp_path):
    (tmp_path / "inc").mkdir()
    main = tmp_path / "main.c"
    main.write_text('#include <stdio.h>\n#include "inc/a.h"\n  #  include "gen.h"\n/* #include <x.h> */\n')
    (tmp_path / "inc" / "a.h").write_text('#include "b.h"\n#include "common.h"\n')  # b.h beside a.h
    (tmp_path / "inc" / "b.h").write_text('#include "a.h"\n')  # a cycle
    (tmp_path / "common.h").write_text('#include "main.c"\n')  # found relative to the main source's dir
    assert local_includes(main) == [tmp_path / "common.h", tmp_path / "inc" / "a.h", tmp_path / "inc" / "b.h"]


def test_program_fingerprint_changes_with_a_nested_header_only(tmp_path):
    main = tmp_path / "p.c"
    main.write_text('#include "p.h"\nint main(void) { return X; }\n')
    (tmp_path / "p.h").write_text('#include "q.h"\n')
    (tmp_path / "q.h").write_text("#define X 0\n")
    program = Program("p", main, (), ())
    before = program.fingerprint()
    (tmp_path / "q.h").write_text("#define X 1\n")
    assert program.fingerprint() != before
    assert set(program.fingerprint()["includes"]) == {"p.h", "q.h"}


def test_a_program_without_local_includes_keeps_its_old_fingerprint(tmp_path):
    """Images cached before include hashing keep their keys (no rebuild for nothing)."""
    main = tmp_path / "p.c"
    main.write_text("#include <stdio.h>\nint main(void) { return 0; }\n")
    assert Program("p", main, ("libx-dev",), ("x",)).fingerprint() == {
        "name": "p", "source_sha256": hashlib.sha256(main.read_bytes()).hexdigest(),
        "packages": ["libx-dev"], "libs": ["x"], "cflags": list(CFLAGS)}
