"""What the runner tells its listeners: hooks on pluggy, pytest's own hook engine.

    from farm.hookspecs import hookimpl

    class Chime:                                  # a listener: any object with hook implementations
        @hookimpl
        def run_ended(self, status, interrupted):
            print("\\a")

The runner (farm.run.runner) walks the stages and calls these hooks (their specs: farm.hookspecs.RunSpec)
by keyword; pluggy calls every listener that implements one (the run directory first: what reaches disk
comes before what is said about it). A listener implements only the hooks it needs, each with (a subset
of) the spec's argument names; a hook implementation of no known hook, or with an argument the spec does
not have, is refused when the listener is registered (:class:`pluggy.PluginValidationError`), so a
misspelt hook fails at once instead of never being called.

Notifications return nothing; a listener of the run's own that raises stops what was about to start; a
lab's (by entry point) that raises is reported on stderr and the run goes on (farm.plugins.Isolated). The one veto,
:meth:`RunSpec.before_board`, is a ``firstresult`` hook apart from them: the first listener that
answers with a reason stops the boot or benchmark (the place's guard when its lock is lost).

A run's listeners are its own (the run directory, the progress lines, the place's guard) and the
process's plugins that implement a run hook (farm.plugins: farm's, :data:`FARM_LISTENERS`, the results
store and the image archive, and a lab's, registered by entry point in the group ``farm``,
:data:`ENTRY_POINT_GROUP`, of any installed distribution)::

    [project.entry-points.farm]
    archive = "mylab.farm_archive"        # a module (or an object) with @hookimpl functions

so a lab adds a listener (an archive, a chat notice) without touching farm; the same plugin may register
benchmarks, import kinds and flows (farm.hookspecs.RegistrationSpec). The dashboard is no listener:
``farm serve`` reads the results store live and ``farm dashboard`` reads it when it writes its pages, so a
run reaches both through the store's listener.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

import pluggy

from ..hookspecs import PROJECT, RunSpec, add_specs, hookimpl, hookspec  # noqa: F401  (farm.run.events.hookimpl, as before)
from ..plugins import ENTRY_POINT_GROUP, FARM_LISTENERS  # noqa: F401  (as before)


class Hooks:
    """The run's listeners in a pluggy plugin manager; ``hooks.say(text="...")`` calls a hook.

    Hooks are called by keyword only (pluggy refuses positional arguments); an unknown hook name is an
    AttributeError."""

    def __init__(self, listeners: Iterable[object] = (), *, farm_listeners: bool = False):
        # a manager of the run's own: two runs of one process (threads, farm reproduce) never hear each other
        self.manager = add_specs(pluggy.PluginManager(PROJECT))
        if farm_listeners:  # the process's plugins that listen (farm's and the lab's, found once: farm.plugins)
            from .. import plugins

            for listener in plugins.listeners():  # a lab's raises into stderr, not into the run
                self.add(listener if plugins.is_builtin(listener)
                         else plugins.Isolated(listener, plugins.named(listener)))
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


def published(run_dir: "Path", qualification: dict[str, Any] | None = None,
              listeners: Sequence[object] = ()) -> None:
    """Tell farm's and the lab's listeners that ``run_dir`` is complete (``farm import``, ``farm
    qualify``, the pytest plugin: the ways in that are no run of the runner)."""
    Hooks(listeners, farm_listeners=True).run_published(run_dir=run_dir, qualification=qualification)


def moved(old: "Path", new: "Path", listeners: Sequence[object] = ()) -> None:
    """Tell farm's and the lab's listeners that ``--force`` moved the result directory ``old`` to ``new``."""
    Hooks(listeners, farm_listeners=True).results_moved(old=old, new=new)
