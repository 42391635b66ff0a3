"""What the runner tells its listeners: hooks on pluggy, pytest's own hook engine.

    from farm.run.events import hookimpl

    class Chime:                                  # a listener: any object with hook implementations
        @hookimpl
        def run_ended(self, status, interrupted):
            print("\\a")

The runner (farm.run.runner) walks the stages and calls these hooks by keyword; pluggy calls every
listener that implements one (the run directory first: what reaches disk comes before what is said
about it). A listener implements only the hooks it needs, each with (a subset of) the spec's
argument names; a hook implementation of no known hook, or with an argument the spec does not have,
is refused when the listener is registered (:class:`pluggy.PluginValidationError`), so a misspelt
hook fails at once instead of never being called.

Notifications return nothing; a listener that raises stops what was about to start. The one veto,
:meth:`RunSpec.before_board`, is a ``firstresult`` hook apart from them: the first listener that
answers with a reason stops the boot or benchmark (the place's guard when its lock is lost).

Listeners come from three places: the run's own (the run directory, the progress lines, the place's
guard), farm's (:data:`FARM_LISTENERS`: the results store, the image archive), and a lab's, registered by entry point
in the group ``farm`` (:data:`ENTRY_POINT_GROUP`) of any installed distribution::

    [project.entry-points.farm]
    archive = "mylab.farm_archive"        # a module (or an object) with @hookimpl functions

so a lab adds a listener (an archive, a chat notice) without touching farm. The dashboard is no listener:
``farm serve`` reads the results store live and ``farm dashboard`` reads it when it writes its pages, so a
run reaches both through the store's listener.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Sequence

import pluggy

if TYPE_CHECKING:
    from pathlib import Path

    from ..results.record import Record
    from .rundir import Stage

PROJECT = "farm"
#: the entry point group a lab's listeners are registered in
ENTRY_POINT_GROUP = "farm"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

#: farm's own listeners of every run and every way results come in ("module:attribute", loaded when a
#: run starts: the store's and the archive's code only then)
FARM_LISTENERS = ("farm.store.hook:STORE", "farm.archive.hook:ARCHIVE")


class RunSpec:
    """The hooks (their specs: names, arguments and what they mean)."""

    @hookspec
    def stage_started(self, name: str) -> None:
        """A stage (build, reserve, boot, benchmark, publish) starts."""

    @hookspec
    def stage_ended(self, stage: "Stage") -> None:
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
    def records(self, records: "Sequence[Record]") -> None:
        """A benchmark measured these (or a ``failed`` row)."""

    @hookspec
    def benchmark_failed(self, failure: dict[str, Any]) -> None:
        """A benchmark failed: where, and the tool's words."""

    @hookspec
    def run_ended(self, status: int, interrupted: bool) -> None:
        """The run is over (before publishing); ``status``: its exit code, the runner's."""

    @hookspec
    def run_published(self, run_dir: "Path", qualification: dict[str, Any] | None) -> None:
        """A result directory is complete: a run (published), an import, a pytest session, or
        ``farm qualify``'s candidate (``qualification``: its out directory, baseline, verdict). Every
        way results come in ends here, so the results store (farm.store.hook), the image archive
        (farm.archive.hook) and a lab's listeners listen to this one hook. The dashboard does not:
        ``farm serve`` reads the store live. A listener must not fail the run: it warns instead."""

    @hookspec
    def results_moved(self, old: "Path", new: "Path") -> None:
        """``--force`` moved the result directory ``old`` (a run, an import, qualify's ``--out``) aside to
        ``new`` before anything new was written there: what a listener knows of ``old`` is at ``new`` now
        (the results store follows it). A listener must not fail the run: it warns instead."""


class Hooks:
    """The run's listeners in a pluggy plugin manager; ``hooks.say(text="...")`` calls a hook.

    Hooks are called by keyword only (pluggy refuses positional arguments); an unknown hook name is an
    AttributeError."""

    def __init__(self, listeners: Iterable[object] = (), *, farm_listeners: bool = False):
        self.manager = pluggy.PluginManager(PROJECT)
        self.manager.add_hookspecs(RunSpec)
        if farm_listeners:
            for listener in default_listeners():
                self.add(listener)
        for listener in listeners:
            self.add(listener)

    def add(self, listener: object) -> None:
        """Register ``listener``; a hook implementation of no spec is refused (PluginValidationError)."""
        self.manager.register(listener)
        try:
            self.manager.check_pending()
        except pluggy.PluginValidationError:
            self.manager.unregister(listener)
            raise

    def remove(self, listener: object) -> None:
        self.manager.unregister(listener)

    def __getattr__(self, name: str):
        if name.startswith("_") or not hasattr(RunSpec, name):
            raise AttributeError(name)
        return getattr(self.manager.hook, name)


def default_listeners() -> list[object]:
    """farm's listeners (:data:`FARM_LISTENERS`) and the lab's, by entry point (:data:`ENTRY_POINT_GROUP`)."""
    import importlib
    from importlib.metadata import entry_points

    found: list[object] = []
    for ref in FARM_LISTENERS:
        module, _, attribute = ref.partition(":")
        found.append(getattr(importlib.import_module(module), attribute))
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        found.append(entry.load())
    return found


def published(run_dir: "Path", qualification: dict[str, Any] | None = None,
              listeners: Sequence[object] = ()) -> None:
    """Tell farm's and the lab's listeners that ``run_dir`` is complete (``farm import``, ``farm
    qualify``, the pytest plugin: the ways in that are no run of the runner)."""
    Hooks(listeners, farm_listeners=True).run_published(run_dir=run_dir, qualification=qualification)


def moved(old: "Path", new: "Path", listeners: Sequence[object] = ()) -> None:
    """Tell farm's and the lab's listeners that ``--force`` moved the result directory ``old`` to ``new``."""
    Hooks(listeners, farm_listeners=True).results_moved(old=old, new=new)
