"""Debian packages for a foreign (or native) architecture: resolve, download, extract, all cached.

Resolution asks ``apt-cache show`` (about 0.8 s per call on these machines, as apt keeps no binary cache),
so its result is cached under a fingerprint of apt's package lists: the same lists and the same request
give the same answer, and a rebuild of an unchanged recipe never calls apt.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Iterable, Sequence

import attrs

from ..errors import JobError
from . import cachefs

APT_LISTS = Path("/var/lib/apt/lists")
APT_CONFIG = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"), Path("/var/lib/dpkg/arch"))
EXTRACT_PREFIX = ".extract-"  # private extraction dirs under pkgs/ (cleaned when abandoned)
DOWNLOAD_PREFIX = ".download-"  # private download dirs under debs/


@attrs.frozen
class Package:
    name: str
    version: str
    arch: str
    sha256: str  # of the .deb, from the archive's index
    depends: tuple[str, ...] = ()  # first alternative of Depends + Pre-Depends, names only

    @property
    def key(self) -> str:
        return f"{self.name}_{self.version.replace(':', '%3a')}_{self.arch}"


class PackageNotFound(LookupError):
    pass


def parse_control_stanzas(text: str) -> list[dict[str, str]]:
    """Parse ``apt-cache show`` / Packages text into one dict per stanza (continuation lines joined)."""
    stanzas: list[dict[str, str]] = []
    current: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        if not line.strip():
            if current:
                stanzas.append(current)
            current, last = {}, None
        elif line[0] in " \t" and last:
            current[last] += "\n" + line.strip()
        elif ":" in line:
            last, value = line.split(":", 1)
            current[last] = value.strip()
    if current:
        stanzas.append(current)
    return stanzas


_DEP_NAME = re.compile(r"^([a-z0-9][a-z0-9+.-]*)")


def first_alternatives(relation: str) -> list[str]:
    """``libc6 (>= 2.34), debconf (>= 0.5) | debconf-2.0`` -> ``['libc6', 'debconf']``."""
    names = []
    for clause in relation.split(","):
        clause = clause.strip()
        if not clause:
            continue
        match = _DEP_NAME.match(clause.split("|")[0].strip())
        if match:
            names.append(match.group(1))
    return names


def package_from_stanza(stanza: dict[str, str]) -> Package:
    deps = first_alternatives(stanza.get("Pre-Depends", "")) + first_alternatives(stanza.get("Depends", ""))
    return Package(stanza["Package"], stanza["Version"], stanza["Architecture"], stanza.get("SHA256", ""),
                   tuple(dict.fromkeys(deps)))


def apt_show(names: Iterable[str], arch: str) -> dict[str, Package]:
    """Candidate versions of ``names`` for ``arch``; names apt does not know are simply absent."""
    names = sorted(set(names))
    if not names:
        return {}
    proc = subprocess.run(["apt-cache", "show", "--no-all-versions", *[f"{n}:{arch}" for n in names]],
                          capture_output=True, text=True)
    found = {}
    for stanza in parse_control_stanzas(proc.stdout):
        if "Package" in stanza and "Version" in stanza:
            pkg = package_from_stanza(stanza)
            found[pkg.name] = pkg
    return found


def resolve(names: Sequence[str], arch: str) -> tuple[dict[str, Package], list[str]]:
    """The named packages and, recursively, the packages they depend on that are built for ``arch``.

    Architecture-independent dependencies (debconf, adduser, …) are skipped: they carry no code for the
    target, and an initrd takes only the files its programs need anyway. Returns (packages, missing)
    where missing lists requested names apt does not know for this architecture.
    """
    found: dict[str, Package] = {}
    wanted = list(dict.fromkeys(names))
    first = apt_show(wanted, arch)
    missing = [n for n in wanted if n not in first]
    frontier = first
    seen = set(wanted)
    while frontier:
        found.update({n: p for n, p in frontier.items() if p.arch == arch or n in wanted})
        nxt = {d for p in frontier.values() if p.arch == arch for d in p.depends} - seen
        seen |= nxt
        frontier = apt_show(nxt, arch) if nxt else {}
    return found, missing


def follow_metapackage(name: str, arch: str) -> Package:
    """``linux-image-arm64`` -> the versioned image package it depends on (``linux-image-6.1.0-57-arm64``)."""
    pkg = apt_show([name], arch).get(name)
    if pkg is None:
        raise PackageNotFound(name)
    for _ in range(5):
        nxt = [d for d in pkg.depends if d.startswith("linux-image-") and d != pkg.name]
        if not nxt:
            return pkg
        target = apt_show([nxt[0]], arch).get(nxt[0])
        if target is None:
            raise PackageNotFound(nxt[0])
        pkg = target
    return pkg


def apt_lists_fingerprint(arch: str) -> str:
    """Changes whenever apt's view of the archive changes (``apt-get update``, new sources, new arch)."""
    h = hashlib.sha256(arch.encode())
    paths: list[Path] = []
    if APT_LISTS.is_dir():
        paths += sorted(p for p in APT_LISTS.iterdir() if "Packages" in p.name or p.name.endswith("Release"))
    for p in APT_CONFIG:
        if p.is_dir():
            paths += sorted(p.iterdir())
        elif p.exists():
            paths.append(p)
    for p in paths:
        st = p.stat()
        h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


@attrs.define
class PackageCache:
    """Downloaded .debs and their extracted trees under ``root`` (default ``~/.cache/farm``)."""

    root: Path

    def clean_abandoned(self) -> None:
        """Remove what builds killed mid-way left: private download, extraction and trash directories."""
        for parent, prefix in ((self.root / "debs", DOWNLOAD_PREFIX), (self.root / "pkgs", EXTRACT_PREFIX),
                               (self.root / "pkgs", cachefs.TRASH_PREFIX)):
            for path in cachefs.clean_abandoned(parent, prefix):
                cachefs.say(f"removed {path}, left by a build that was killed")

    def has_tree(self, pkg: Package) -> bool:
        return (self.root / "pkgs" / pkg.key / ".farm-complete").exists()

    def has_deb(self, pkg: Package) -> bool:
        return self.deb_path(pkg).exists()

    def deb_path(self, pkg: Package) -> Path:
        return self.root / "debs" / f"{pkg.key}.deb"

    def tree(self, pkg: Package) -> Path:
        """The package's files, extracted once; returns the directory.

        Extraction holds the package's lock and goes into a private directory renamed into place when
        complete, so concurrent builds wait for one another and never see (or remove) a half tree.
        """
        pkgs = self.root / "pkgs"
        tree = pkgs / pkg.key
        if (tree / ".farm-complete").exists():
            return tree
        with cachefs.locked(pkgs / f".{pkg.key}.lock"):
            if (tree / ".farm-complete").exists():  # another build extracted it while we waited
                return tree
            deb = self.download(pkg)
            with cachefs.private_dir(pkgs, EXTRACT_PREFIX) as tmp:
                proc = subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], capture_output=True, text=True)
                if proc.returncode != 0:
                    raise JobError(f"cannot extract {deb}: {proc.stderr.strip()}")
                (tmp / ".farm-complete").write_text(pkg.sha256 + "\n")
                if tree.exists() or tree.is_symlink():  # a half tree left by an older farm
                    cachefs.discard(tree)
                os.replace(tmp, tree)
        return tree

    def prefetch(self, pkgs: Iterable[Package]) -> list[Package]:
        """Download, in one ``apt-get download``, every package of ``pkgs`` that has neither its tree nor its
        .deb in the cache: one apt run instead of one per package (each reads apt's lists of both
        architectures: ~1 s apiece, a minute or more of an image's first build). Each .deb is checked
        against the archive's sha256 like :meth:`download`'s; what this could not fetch is left to
        :meth:`download`, which fetches it alone and reports its error. Returns the packages fetched."""
        wanted = [p for p in dict.fromkeys(pkgs) if not (self.root / "pkgs" / p.key / ".farm-complete").exists()
                  and not self.deb_path(p).exists()]
        if len(wanted) < 2:
            return []
        debs = self.root / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        (self.root / "pkgs").mkdir(parents=True, exist_ok=True)
        cachefs.say(f"downloading {len(wanted)} Debian packages")
        fetched = []
        with cachefs.private_dir(debs, DOWNLOAD_PREFIX) as tmp:
            os.chmod(tmp, 0o755)  # apt-get download drops privileges to _apt, which must write here
            subprocess.run(["apt-get", "download", "-q", *(f"{p.name}:{p.arch}={p.version}" for p in wanted)],
                           cwd=tmp, capture_output=True, text=True)
            for pkg in wanted:
                got = tmp / f"{pkg.key}.deb"
                if got.is_file() and (not pkg.sha256 or sha256_file(got) == pkg.sha256):
                    os.replace(got, self.deb_path(pkg))
                    fetched.append(pkg)
        return fetched

    def download(self, pkg: Package) -> Path:
        deb = self.deb_path(pkg)
        if deb.exists():
            if not pkg.sha256 or sha256_file(deb) == pkg.sha256:
                return deb
            cachefs.say(f"{deb}: does not match the archive's sha256, downloading it again")
        deb.parent.mkdir(parents=True, exist_ok=True)
        (self.root / "pkgs").mkdir(parents=True, exist_ok=True)
        with cachefs.private_dir(deb.parent, DOWNLOAD_PREFIX) as tmp:
            os.chmod(tmp, 0o755)  # apt-get download drops privileges to _apt, which must write here
            proc = subprocess.run(["apt-get", "download", "-q", f"{pkg.name}:{pkg.arch}={pkg.version}"],
                                  cwd=tmp, capture_output=True, text=True)
            debs = list(Path(tmp).glob("*.deb"))
            if proc.returncode != 0 or len(debs) != 1:
                detail = (proc.stderr.strip().splitlines() or ["no .deb downloaded"])[-1]
                raise JobError(f"cannot download {pkg.name}:{pkg.arch}={pkg.version}: {detail}")
            if pkg.sha256 and sha256_file(debs[0]) != pkg.sha256:
                raise JobError(f"{pkg.name}:{pkg.arch}={pkg.version}: downloaded .deb does not match the archive's sha256")
            os.replace(debs[0], deb)
        return deb


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def package_to_json(pkg: Package) -> dict:
    return attrs.asdict(pkg, value_serializer=lambda _i, _a, v: list(v) if isinstance(v, tuple) else v)


_FIELD_PATTERNS = {  # a cached resolution becomes file names (pkg.key) and apt arguments: check it
    "name": re.compile(r"[a-z0-9][a-z0-9+.-]*"), "version": re.compile(r"[A-Za-z0-9.+~:-]+"),
    "arch": re.compile(r"[a-z0-9]+"), "sha256": re.compile(r"(?:[0-9a-f]{64})?"),
}


def package_from_json(data: dict) -> Package:
    """The inverse of :func:`package_to_json`; ValueError when ``data`` is not one (a corrupt cache file)."""
    if not isinstance(data, dict) or set(data) - {*_FIELD_PATTERNS, "depends"} or set(_FIELD_PATTERNS) - set(data):
        raise ValueError(f"not a package: {str(data)[:80]}")
    for name, pattern in _FIELD_PATTERNS.items():
        if not isinstance(data[name], str) or not pattern.fullmatch(data[name]):
            raise ValueError(f"package field {name}: {data[name]!r}")
    depends = data.get("depends", [])
    if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
        raise ValueError(f"package field depends: {depends!r}")
    return Package(**{**data, "depends": tuple(depends)})


def dumps(obj: object) -> str:
    return json.dumps(obj, indent=2, sort_keys=True)
