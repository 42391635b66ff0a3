"""farm's plugins: one pluggy plugin manager per process, found once, as pytest finds its own.

    # a lab's package: pyproject.toml
    [project.entry-points.farm]
    mylab = "mylab.farm_plugin"          # a module (or an object) with farm.hookspecs.hookimpl functions

    # mylab/farm_plugin.py
    @hookimpl
    def farm_benchmarks():               # `farm run` names it in a pipeline, `farm compare` reads its units
        return [BenchmarkSpec("frob", "toy", run_frob, FrobParams, units={"bytes/s": HIGHER_IS_BETTER})]

    @hookimpl
    def farm_importers():                # `farm import frob FILE`
        return [Importer("frob", "frob", "frob's text output", once(parse_frob))]

    @hookimpl
    def run_published(run_dir):          # a listener of every run, import and qualification (farm.run.events)
        ...

The manager holds farm's builtin plugins (:data:`BUILTIN`: its benchmarks and import kinds, its flows, the
results store and the archive as listeners), then every plugin an installed distribution declares in the
entry-point group ``farm`` (:data:`ENTRY_POINT_GROUP`), found by pluggy's ``load_setuptools_entrypoints``
in one scan. Nothing is scanned or loaded until a command asks for a registration or a run's listeners
(``farm --help`` and ``farm boot`` never do), and then once for the process.

What the registration hooks return is indexed by name (:func:`benchmarks`, :func:`importers`,
:func:`flows`), each once: a name registered twice, an importer of no registered benchmark, or an import
option declared twice with another type is a :class:`~farm.errors.JobError` naming both plugins, as a
plugin that fails to load or implements a hook no spec names (farm.hookspecs) is.

Flows a lab registered in the older group ``farm.flows`` (:data:`OLD_FLOWS_GROUP`: a ``FlowType`` per
entry point) still work, with a warning: that group is read, by a second scan, only when flows are asked for.
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
from typing import Any, Callable, Iterable, Mapping

import pluggy

from .errors import JobError
from .hookspecs import PROJECT, RUN_HOOKS, add_specs

# the registrations' classes are named as text: farm.bench.registry's and farm.flows' floors are above this one

#: seconds a lab's listener may take over one run hook before the run goes on without it (Isolated)
LISTENER_TIMEOUT_S = 120.0
#: the entry-point group of a lab's plugins (its listeners, benchmarks, import kinds, flows)
ENTRY_POINT_GROUP = "farm"
#: the group a lab's flows were registered in before flows were plugins: a FlowType per entry point
OLD_FLOWS_GROUP = "farm.flows"
#: farm's own listeners of every run and every way results come in ("module:attribute")
FARM_LISTENERS = ("farm.store.hook:STORE", "farm.archive.hook:ARCHIVE")
#: farm's own plugins ("module" or "module:attribute"), registered before the lab's, in this order: its
#: benchmarks and import kinds, its flows, its listeners (their modules loaded when the plugins are found)
BUILTIN = ("farm.bench.registry", "farm.flows", *FARM_LISTENERS)

_lock = threading.RLock()
_manager: pluggy.PluginManager | None = None
_indexes: dict[str, Any] = {}


def manager() -> pluggy.PluginManager:
    """The process's plugin manager: farm's builtin plugins and the lab's (entry points), found the first time."""
    global _manager
    with _lock:
        if _manager is None:
            found = add_specs(pluggy.PluginManager(PROJECT))
            for ref in BUILTIN:
                found.register(_load(ref), name=ref)
            try:
                found.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
                found.check_pending()
            except pluggy.PluginValidationError as exc:
                raise JobError(f"the farm plugin {_named(found, exc.plugin)}: {str(exc).split(' in plugin ')[0]} "
                               "(farm.hookspecs names the hooks)") from None
            except Exception as exc:  # the lab's code failed to import: say which group, not farm's traceback
                raise JobError(f"a plugin of the entry-point group {ENTRY_POINT_GROUP} failed to load: "
                               f"{type(exc).__name__}: {exc}") from exc
            _manager = found
        return _manager


def _named(pm: pluggy.PluginManager, plugin: object) -> str:
    """A plugin as a lab knows it: its entry point's name and distribution."""
    dists = {id(p): d for p, d in pm.list_plugin_distributions()}
    dist = dists.get(id(plugin))
    return f"{pm.get_name(plugin)!r}" + (f" ({dist.metadata['Name']} {dist.version}, entry-point group "
                                         f"{ENTRY_POINT_GROUP})" if dist is not None else "")


def _load(ref: str) -> object:
    module, _, attribute = ref.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, attribute) if attribute else loaded


def add(plugin: object, name: str | None = None) -> None:
    """Register ``plugin`` in this process besides the ones found (a test's, a program embedding farm); a hook
    implementation of no spec is refused (:class:`pluggy.PluginValidationError`)."""
    with _lock:
        pm = manager()
        pm.register(plugin, name=name)
        try:
            pm.check_pending()
        except pluggy.PluginValidationError:
            pm.unregister(plugin)
            raise
        _indexes.clear()


def remove(plugin: object) -> None:
    """Unregister a plugin :func:`add` registered."""
    with _lock:
        manager().unregister(plugin)
        _indexes.clear()


def forget() -> None:
    """Find the plugins again at the next request (a test that installed a distribution)."""
    global _manager
    with _lock:
        _manager = None
        _indexes.clear()


def listeners() -> list[object]:
    """The plugins that implement a run hook (farm.hookspecs.RunSpec), in the order they were registered:
    every run's listeners besides its own (farm.run.events.Hooks)."""
    pm = manager()
    return [plugin for _, plugin in pm.list_name_plugin()
            if plugin is not None and any(caller.name in RUN_HOOKS for caller in pm.get_hookcallers(plugin) or ())]


def is_builtin(plugin: object) -> bool:
    """Whether ``plugin`` is one of farm's own (:data:`BUILTIN`), not a lab's."""
    return manager().get_name(plugin) in BUILTIN


def named(plugin: object) -> str:
    """A plugin of the process as a lab knows it: its name, and its distribution when it came by entry point."""
    return _named(manager(), plugin)


class Isolated:
    """A lab's listener as a run hears it: each of its run hooks (farm.hookspecs.RunSpec) called as the lab
    wrote it, but an exception it raises is reported on stderr (the plugin, its distribution, the hook, the
    error) instead of reaching the run: the run's own listeners (its directory, the store, the archive) are
    called all the same, and the exit code is the run's. A lab's listener is a convenience beside the run,
    as farm's store and archive are (they warn instead of failing), and pluggy stops at the first
    implementation that raises: without this, a lab's broken chat notice would cost the run its store entry.
    A listener that does not return from a hook within :data:`LISTENER_TIMEOUT_S` (a chat server that never
    answers) is reported the same way and not called again for the run, which goes on: its call runs in a
    thread of its own, left behind (a daemon: it does not keep farm from exiting). A wrapper implementation
    (pluggy's ``wrapper``/``hookwrapper``) is left as it is: it chose to see the others' outcome."""

    def __init__(self, plugin: object, name: str, marker: str = f"{PROJECT}_impl"):
        self.plugin, self.name = plugin, name
        self.hung: str | None = None  # the hook it did not return from
        for hook in RUN_HOOKS:
            function = getattr(plugin, hook, None)
            opts = getattr(function, marker, None)
            if function is None or not isinstance(opts, dict):
                continue
            if opts.get("wrapper") or opts.get("hookwrapper"):
                setattr(self, hook, function)
                continue
            setattr(self, hook, self._guarded(hook, function))

    def _guarded(self, hook: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)  # its marker and argument names (pluggy reads them through __wrapped__)
        def guarded(*args: Any) -> Any:
            if self.hung is not None:
                return None
            outcome: dict[str, Any] = {}

            def call() -> None:
                try:
                    outcome["result"] = function(*args)
                except BaseException as exc:  # noqa: BLE001 - handed to the run's thread, below
                    outcome["error"] = exc
            worker = threading.Thread(target=call, name=f"farm listener {self.name}: {hook}", daemon=True)
            worker.start()
            worker.join(LISTENER_TIMEOUT_S)
            if worker.is_alive():
                self.hung = hook
                self._warn(f"did not return from {hook} within {LISTENER_TIMEOUT_S:g} s (the run goes on without "
                           "it; it is not called again)")
                return None
            error = outcome.get("error")
            if error is None:
                return outcome.get("result")
            if not isinstance(error, Exception):  # Ctrl-C, SIGTERM, an exit: not the lab's to swallow
                raise error
            reason = " ".join(str(error).split())[:300]
            self._warn(f"failed in {hook}: {type(error).__name__}{': ' + reason if reason else ''} (the run goes "
                       "on: its results, the store and the archive are not touched by it)")
            return None
        return guarded

    def _warn(self, text: str) -> None:
        print(f"farm: warning: the listener {self.name} {text}", file=sys.stderr, flush=True)


def registrations(hook: str) -> list[tuple[str, Any]]:
    """(plugin name, registration) for everything the plugins' ``hook`` returns, farm's first: each plugin's
    implementation called on its own, so that a conflict names both plugins."""
    pm = manager()
    found = []
    for impl in getattr(pm.hook, hook).get_hookimpls():
        try:
            items = list(impl.function() or ())
        except Exception as exc:  # the lab's code: a job error naming it, not farm's traceback
            raise JobError(f"the farm plugin {_named(pm, impl.plugin)}: its {hook}() failed: {type(exc).__name__}: "
                           f"{exc}") from exc
        found += [(impl.plugin_name, item) for item in items]
    return found


def _index(kind: str, build: Callable[[], Mapping[str, Any]]) -> Mapping[str, Any]:
    with _lock:
        if kind not in _indexes:
            _indexes[kind] = build()
        return _indexes[kind]


def _by_name(what: str, found: Iterable[tuple[str, Any]], key: Callable[[Any], str]) -> dict[str, tuple[str, Any]]:
    """name -> (plugin, registration); a name registered twice is a JobError naming both plugins."""
    named: dict[str, tuple[str, Any]] = {}
    for plugin, item in found:
        name = key(item)
        if name in named:
            raise JobError(f"farm plugin {plugin}: {what} {name!r} is registered already, by {named[name][0]}")
        named[name] = (plugin, item)
    return named


def benchmarks() -> Mapping[str, "farm.bench.registry.BenchmarkSpec"]:
    """Every registered benchmark by name (farm's, then the lab's plugins'), imported-only ones too."""
    def build() -> dict[str, "farm.bench.registry.BenchmarkSpec"]:
        return {name: spec for name, (_, spec) in
                _by_name("benchmark", registrations("farm_benchmarks"), lambda s: s.name).items()}
    return _index("benchmarks", build)


def importers() -> Mapping[str, "farm.bench.registry.Importer"]:
    """Every import kind by name; each names a registered benchmark, and an option two importers declare
    is one option of ``farm import`` (one type)."""
    def build() -> dict[str, "farm.bench.registry.Importer"]:
        found = _by_name("import kind", registrations("farm_importers"), lambda i: i.name)
        known = benchmarks()
        options: dict[str, tuple[str, Any]] = {}
        for name, (plugin, imp) in found.items():
            if imp.benchmark not in known:
                raise JobError(f"farm plugin {plugin}: import kind {name!r}: no benchmark {imp.benchmark!r} is "
                               f"registered (known: {', '.join(sorted(known))})")
            for option in imp.options:
                first = options.setdefault(option.name, (name, option))
                if first[1].type is not option.type:
                    raise JobError(f"farm plugin {plugin}: import kind {name!r}: option {option.name!r} is of type "
                                   f"{option.type.__name__}, and kind {first[0]!r} declares it of type "
                                   f"{first[1].type.__name__} (one option of farm import)")
        return {name: imp for name, (_, imp) in found.items()}
    return _index("importers", build)


def flows() -> Mapping[str, "farm.flows.FlowType"]:
    """Every boot flow by name: farm's, the lab's plugins', and the older group's (:data:`OLD_FLOWS_GROUP`);
    a name or settings field registered twice is a JobError."""
    def build() -> dict[str, "farm.flows.FlowType"]:
        found = [*registrations("farm_flows"), *_old_flows()]
        for plugin, item in found:  # farm.flows.FlowType is a floor above: known by what it has
            if not isinstance(getattr(item, "name", None), str) or not callable(getattr(item, "make", None)):
                raise JobError(f"farm plugin {plugin}: {item!r} is not a flow (a farm.flows.FlowType: a name, how "
                               "its flow is made, its settings)")
        named = _by_name("flow", found, lambda t: t.name)
        _by_name("the settings field of flow", [(p, t) for p, t in found if t.key], lambda t: t.key)
        return {name: flow for name, (_, flow) in named.items()}
    return _index("flows", build)


def _old_flows() -> list[tuple[str, "farm.flows.FlowType"]]:
    from importlib.metadata import entry_points

    found = []
    for entry in entry_points(group=OLD_FLOWS_GROUP):
        try:
            loaded = entry.load()
        except Exception as exc:  # the lab's code failed to import: name the entry point, not farm's traceback
            raise JobError(f"the flow {entry.name} = {entry.value} (entry-point group {OLD_FLOWS_GROUP}) failed to "
                           f"load: {type(exc).__name__}: {exc}") from exc
        found.append((f"{entry.name} (entry-point group {OLD_FLOWS_GROUP})", loaded))
        print(f"farm: warning: the flow {entry.value} is registered in the entry-point group {OLD_FLOWS_GROUP}, "
              f"which is deprecated: return it from a farm_flows() hook of a plugin in the group "
              f"{ENTRY_POINT_GROUP} (farm.plugins)", file=sys.stderr)
    return found
