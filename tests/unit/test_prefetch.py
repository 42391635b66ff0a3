"""An image's missing Debian packages come in one ``apt-get download`` (a fake apt-get on PATH here: the real
one is exercised by every cold build of the suite), each checked against the archive's sha256; what that
run did not bring is left to the one-package download, which reports its own error."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from farm.images.debian import Package, PackageCache

FAKE_APT = """#!/bin/sh
# apt-get download -q NAME:ARCH=VERSION...: writes NAME_VERSION_ARCH.deb (epoch as %3a) for each, but none for
# 'absent'; every call is logged
echo "$@" >> "{log}"
shift 2
for spec in "$@"; do
    name=${{spec%%:*}}; rest=${{spec#*:}}; arch=${{rest%%=*}}; version=${{rest#*=}}
    [ "$name" = absent ] && continue
    printf 'deb of %s' "$name" > "${{name}}_$(echo "$version" | sed 's/:/%3a/')_${{arch}}.deb"
done
"""


def _pkg(name: str, version: str = "1.0", sha: str | None = None) -> Package:
    return Package(name, version, "arm64", sha if sha is not None else hashlib.sha256(f"deb of {name}".encode()).hexdigest())


def test_prefetch_downloads_what_is_missing_in_one_apt_run(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "apt.log"
    (bin_dir / "apt-get").write_text(FAKE_APT.format(log=log))
    (bin_dir / "apt-get").chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    cache = PackageCache(tmp_path / "cache")
    have, extracted = _pkg("have"), _pkg("extracted")
    (tmp_path / "cache" / "debs").mkdir(parents=True)
    cache.deb_path(have).write_bytes(b"deb of have")
    (tmp_path / "cache" / "pkgs" / extracted.key).mkdir(parents=True)
    (tmp_path / "cache" / "pkgs" / extracted.key / ".farm-complete").write_text("x\n")
    a, b, epoch = _pkg("a"), _pkg("b"), _pkg("c", "2:1.5-1")
    bad, absent = _pkg("bad", sha="0" * 64), _pkg("absent")
    fetched = cache.prefetch([have, extracted, a, b, epoch, bad, absent, a])
    assert fetched == [a, b, epoch]
    assert log.read_text().splitlines() == ["download -q a:arm64=1.0 b:arm64=1.0 c:arm64=2:1.5-1 bad:arm64=1.0 absent:arm64=1.0"]
    assert cache.deb_path(epoch).name == "c_2%3a1.5-1_arm64.deb" and cache.deb_path(epoch).read_bytes() == b"deb of c"
    assert not cache.deb_path(bad).exists() and not cache.deb_path(absent).exists()  # left to download(), which says why
    assert sorted(p.name for p in (tmp_path / "cache" / "debs").iterdir()) == sorted(
        cache.deb_path(p).name for p in (have, a, b, epoch))  # no private download directory left behind
    assert cache.prefetch([a, have]) == [] and len(log.read_text().splitlines()) == 1  # nothing missing: no apt run
