"""A cold build says what it does, phase by phase (download, extract, programs, initrd), with a line
every EVERY_S seconds while a phase goes on: a CI log or a terminal never sits silent for minutes."""

from __future__ import annotations

from farm.images import build
from farm.images.debian import Package
from farm.images.progress import BuildProgress


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_phase_says_its_start_its_progress_and_its_end():
    lines, clock = [], Clock()
    p = BuildProgress("maaxboard-bench", lines.append, every=10, clock=clock)
    p.start("download", 3, "3 Debian packages")
    for seconds in (4, 11, 30):
        clock.now = seconds
        p.step(20_000_000)
    p.end()
    assert lines == ["build maaxboard-bench: download: 3 Debian packages ...",
                     "build maaxboard-bench: download: 2 of 3, 40.0 MB, 11s",
                     "build maaxboard-bench: download done: 3 (60.0 MB) in 30s"]


class FakePackages:
    """farm.images.debian.PackageCache's interface, with nothing fetched yet but one .deb."""

    def __init__(self, have_deb):
        self.debs, self.trees, self.calls = set(have_deb), set(), []

    def has_deb(self, p):
        return p.name in self.debs

    def has_tree(self, p):
        return p.name in self.trees

    def prefetch(self, pkgs):  # the one apt run: here it fetches nothing, download() fetches each
        self.calls.append(("prefetch", tuple(p.name for p in pkgs)))
        return []

    def download(self, p):
        self.calls.append(("download", p.name))
        self.debs.add(p.name)

        class Deb:
            def stat(self):
                return type("S", (), {"st_size": 1_000_000})()
        return Deb()

    def tree(self, p):
        self.calls.append(("extract", p.name))
        self.trees.add(p.name)


def test_packages_are_downloaded_then_extracted_each_phase_with_its_lines():
    packages = [Package(n, "1", "arm64", "") for n in ("linux-image", "busybox-static", "iperf3")]
    pkgs, lines = FakePackages(have_deb={"busybox-static"}), []
    build._fetch_packages(packages, pkgs, BuildProgress("x", lines.append))
    assert pkgs.calls == [("prefetch", ("linux-image", "iperf3")), ("download", "linux-image"), ("download", "iperf3"),
                          ("extract", "linux-image"), ("extract", "busybox-static"), ("extract", "iperf3")]
    assert [line.split(":")[1].strip() for line in lines] == ["download", "download done", "extract", "extract done"]
    lines.clear()
    build._fetch_packages(packages, pkgs, BuildProgress("x", lines.append))
    assert lines == []  # all there: a warm build says nothing of it
