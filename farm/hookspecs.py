"""farm's hooks on pluggy, pytest's own hook engine: what a plugin may implement, each with its arguments.

    from farm.hookspecs import hookimpl

    @hookimpl
    def farm_benchmarks():                        # a registration hook: what the plugin adds
        return [BenchmarkSpec("frob", "toy", run_frob, FrobParams, units={"bytes/s": HIGHER_IS_BETTER})]

    @hookimpl
    def run_ended(status, interrupted):           # a run hook: what the plugin hears of a run
        print("\\a")

Two kinds of hooks, on one plugin manager per process (farm.plugins): the registrations
(:class:`RegistrationSpec`: benchmarks, import kinds, boot flows), which farm's own builtin plugins and a
lab's package implement, and what a run tells its listeners (:class:`RunSpec`, farm.run.events). A plugin
implements only the hooks it needs, each with (a subset of) the spec's argument names; a hook
implementation of no spec, or with an argument the spec does not have, is refused when the plugin is
registered (:class:`pluggy.PluginValidationError`), so a misspelt hook fails at once instead of never
being called.

This module imports nothing of farm's (only pluggy), so a listener (the results store, the archive) or a
lab's plugin declares its hooks without loading the runner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pluggy

# the annotations name farm's classes as text: this module sits below them all (tests/unit/test_layering.py)

PROJECT = "farm"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class RegistrationSpec:
    """What a plugin adds to farm; each hook returns a sequence of registrations (empty: none)."""

    @hookspec
    def farm_benchmarks(self) -> "Sequence[farm.bench.registry.BenchmarkSpec]":
        """Benchmarks (farm.bench.registry.BenchmarkSpec): a pipeline names those with a ``run``, ``farm
        compare`` and ``farm qualify`` read their units' directions, records their run lengths."""

    @hookspec
    def farm_importers(self) -> "Sequence[farm.bench.registry.Importer]":
        """Import kinds (farm.bench.registry.Importer): ``farm import KIND FILE`` reads a captured output of
        the benchmark the importer names, with the options it declares."""

    @hookspec
    def farm_flows(self) -> "Sequence[farm.flows.FlowType]":
        """Boot flows (farm.flows.FlowType): a setup names one by ``flow:`` or by its settings field."""


class RunSpec:
    """What a run tells its listeners (farm.run.events: the runner calls these by keyword)."""

    @hookspec
    def stage_started(self, name: str) -> None:
        """A stage (build, reserve, boot, benchmark, publish) starts."""

    @hookspec
    def stage_ended(self, stage: "farm.run.rundir.Stage") -> None:
        """A stage ended: its testcase (pass, failure, error) and what it was."""

    @hookspec
    def say(self, text: str) -> None:
        """A line of progress (a sweep point, a retry, a place taken)."""

    @hookspec(firstresult=True)
    def before_board(self, label: str) -> str | None:
        """Before every boot and benchmark (``label``: the boot's): a reason why the run may not touch
        the board now (a veto: the first reason given stops it as an infrastructure error), or None."""

    @hookspec
    def image_built(self, name: str, entry: dict[str, Any]) -> None:
        """An image is built or given (``--image``): its directory and manifest."""

    @hookspec
    def program_built(self, name: str, entry: dict[str, Any]) -> None:
        """A benchmark built a program on the lab host and ran it on the target, outside any image (the
        exit-cost benchmark's ELF): its sha256, size and what it was built from (run.json's ``programs``)."""

    @hookspec
    def place_taken(self, place: dict[str, Any]) -> None:
        """With ``--farm``: the place the boots run on."""

    @hookspec
    def place_health(self, state: str) -> None:
        """With ``--farm``: the place's health changed (healthy, unhealthy)."""

    @hookspec
    def boot_recorded(self, target: str, env: str, arch: str, boot: dict[str, Any]) -> None:
        """What one boot was (facts, topology: the booted target's own record), or why it failed."""

    @hookspec
    def boot_outcome(self, label: str, booted: bool, infrastructure_failure: bool, power_ons: int) -> None:
        """A boot reached its shell (``booted``), or failed; ``infrastructure_failure``: the lab failed it
        after :meth:`before_board` let it start (the place's health counts these); ``power_ons``: how many
        attempts the boot took (a failed boot: how many failed)."""

    @hookspec
    def records(self, records: "Sequence[farm.results.record.Record]") -> None:
        """A benchmark measured these (or a ``failed`` row)."""

    @hookspec
    def benchmark_failed(self, failure: dict[str, Any]) -> None:
        """A benchmark failed: where, and the tool's words."""

    @hookspec
    def run_ended(self, status: int, interrupted: bool) -> None:
        """The run is over (before publishing); ``status``: its exit code, the runner's."""

    @hookspec
    def run_published(self, run_dir: Path, qualification: dict[str, Any] | None) -> None:
        """A result directory is complete: a run (published), an import, a pytest session, or
        ``farm qualify``'s candidate (``qualification``: its out directory, baseline, verdict). Every
        way results come in ends here, so the results store (farm.store.hook), the image archive
        (farm.archive.hook) and a lab's listeners listen to this one hook. The dashboard does not:
        ``farm serve`` reads the store live. A listener must not fail the run: it warns instead."""

    @hookspec
    def results_moved(self, old: Path, new: Path) -> None:
        """``--force`` moved the result directory ``old`` (a run, an import, qualify's ``--out``) aside to
        ``new`` before anything new was written there: what a listener knows of ``old`` is at ``new`` now
        (the results store follows it). A listener must not fail the run: it warns instead."""


#: the names of the run hooks (a plugin implementing one of them is a listener of every run)
RUN_HOOKS = frozenset(name for name in vars(RunSpec) if not name.startswith("_"))


def add_specs(manager: pluggy.PluginManager) -> pluggy.PluginManager:
    """``manager`` with every spec of farm's hooks (registrations and run hooks)."""
    manager.add_hookspecs(RegistrationSpec)
    manager.add_hookspecs(RunSpec)
    return manager
