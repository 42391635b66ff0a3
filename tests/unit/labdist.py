"""A lab's package as pip would install it, for the tests of farm's entry points: a dist-info with an
``entry_points.txt`` and the lab's module, on sys.path; and a lab's plugin object, for the tests that
register one in the process (farm.plugins.add)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from farm import plugins
from farm.hookspecs import hookimpl


def installed(site: Path, monkeypatch: pytest.MonkeyPatch, *, dist: str, group: str, entry: str,
              module: str, source: str) -> Iterator[None]:
    """Install distribution ``dist`` (version 1.0) declaring ``entry`` in entry-point ``group``, with its
    module ``module`` of ``source``; yield; then forget the module (a fixture's body). farm finds its plugins
    again on either side (farm.plugins: found once per process)."""
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry}\n")
    (site / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(site))
    plugins.forget()
    yield
    sys.modules.pop(module, None)
    if str(site) in sys.path:  # off sys.path before farm looks again (monkeypatch restores it all later)
        sys.path.remove(str(site))
    plugins.forget()


class LabPlugin:
    """A lab's plugin registering ``benchmarks``, import ``kinds`` and ``flows`` (farm.hookspecs)."""

    def __init__(self, benchmarks=(), kinds=(), flows=()):
        self.benchmarks, self.kinds, self.flows = benchmarks, kinds, flows

    @hookimpl
    def farm_benchmarks(self):
        return self.benchmarks

    @hookimpl
    def farm_importers(self):
        return self.kinds

    @hookimpl
    def farm_flows(self):
        return self.flows


@contextlib.contextmanager
def added(plugin: object, name: str | None = None) -> Iterator[object]:
    """``plugin`` registered in this process for the block (farm.plugins.add), then removed."""
    plugins.add(plugin, name=name)
    try:
        yield plugin
    finally:
        plugins.remove(plugin)
