"""A labgrid env file as farm reads it, before labgrid does: what farm takes from it, declared (farm.schema).

labgrid reads the whole file when it makes the target; farm reads it first, for what it takes itself and
for what would fail late or silently: the file's keys (labgrid ignores one it does not know, so a misspelt
``imports`` or ``drivers`` only shows as a missing driver later), the target's name (part of job ids, TFTP
folders and file names), its ``options`` farm uses (``arch``, ``board``, ``cpu_frequency_hz``), and the
attributes of farm's netboot strategies (kernel arguments typed at the bootloader, a DTB name, what moved
to a driver, the farm drivers they bind). labgrid's own drivers and resources, their attributes, and the
file's ``images``, ``tools``, ``paths`` and top-level ``options`` stay labgrid's: declared here as free
values, which labgrid checks when it makes the target. ``farm schema env`` prints the JSON Schema of the
same declarations.

Nothing of labgrid is imported to declare this; reading a file's drivers imports labgrid's registry and
farm's drivers (which strategy a driver's name is).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, ClassVar, Mapping

import attrs

from ..lglazy import class_names
from ..schema import Invalid, WrongType, number, setting

#: the description of what labgrid reads and farm does not
LABGRIDS = "labgrid's: farm does not read it; labgrid checks it when it makes the target"


def attribute(default: Any, kind: type, doc: str, *, optional: bool = False, check: Any = None,
              choices: tuple[Any, ...] | None = None) -> Any:
    """An env-file attribute of a farm strategy (labgrid's ``attr.ib``, in a farm.schema ``setting``): labgrid
    checks its type (and ``choices``) when it makes the strategy (plain ``labgrid-client`` too), farm when it
    reads the file (:class:`Drivers`), with its ``doc`` and ``check``."""
    validator = attrs.validators.instance_of(kind)
    if choices is not None:
        validator = attrs.validators.and_(validator, attrs.validators.in_(choices))
    if optional:
        validator = attrs.validators.optional(validator)
    return setting(default, type=kind | None if optional else kind, doc=doc, check=check, choices=choices,
                   validator=validator)


class StrategyEntry:
    """An env file's entry of a farm strategy: made per strategy by :func:`strategy_entry`."""

    #: the strategy's attributes of an older farm that are refused, and why (``interrupt: ...``)
    RETIRED: ClassVar[tuple[str, ...]] = ()
    RETIRED_WHY: ClassVar[str] = ""

    def validate(self, given: Mapping[str, Any]) -> None:
        found = [key for key in self.RETIRED if key in given]
        if found:
            raise Invalid(f"{', '.join(found)}: {self.RETIRED_WHY}", key=found[0])


@functools.cache
def strategy_entry(strategy: type) -> type:
    """The class an env file's entry of ``strategy`` is read as: the strategy's attributes declared with
    :func:`attribute` (labgrid's style: documented where they are declared), labgrid's ``name`` and
    ``bindings`` of any driver, and the attributes it refuses (``RETIRED``)."""
    fields: dict[str, Any] = {
        "name": setting(None, type=str | None, doc="labgrid's: the driver's name (several of one class)"),
        "bindings": setting(None, type=dict[str, Any] | None, doc="labgrid's: which supplier each binding takes"),
    }
    for field in attrs.fields(strategy):
        if field.metadata.get("farm.schema") is not None:
            fields[field.name] = attrs.field(default=field.default, type=field.type, metadata=field.metadata)
    retired = getattr(strategy, "RETIRED", ())
    for key in retired:
        fields[key] = setting(None, type=Any, schema={"not": {}}, doc=f"refused: {strategy.RETIRED_WHY}")
    entry = attrs.make_class(strategy.__name__, fields, bases=(StrategyEntry,), frozen=True)
    entry.__doc__ = f"{strategy.__name__}: {(strategy.__doc__ or '').strip()}"
    entry.RETIRED, entry.RETIRED_WHY = retired, getattr(strategy, "RETIRED_WHY", "")
    return entry


def farm_strategies() -> dict[str, type]:
    """farm's netboot strategies by the name an env file gives them (labgrid's registry)."""
    from labgrid.factory import target_factory

    from . import drivers as _registered  # noqa: F401  (farm's strategies and drivers, by name)
    from .netboot import NetbootStrategy

    return {name: cls for name, cls in target_factory.drivers.items()
            if isinstance(cls, type) and issubclass(cls, NetbootStrategy)}


class Drivers:
    """A target's drivers: labgrid's mapping of class name -> attributes (or its list of them, which labgrid
    reads alone). farm reads the entry of its netboot strategy (every attribute, as the strategy declares
    it) and checks that the drivers it binds are farm's; every other driver's attributes are labgrid's."""

    def __init__(self, names: list[str]) -> None:
        #: the drivers' class names, in the file's order
        self.names = names

    @classmethod
    def __structure__(cls, value: Any, read_as: Any) -> "Drivers":
        if isinstance(value, list):  # labgrid's list form ([{Class: {...}}, {cls: Class, ...}]): labgrid reads it
            return cls(class_names(value))
        if not isinstance(value, Mapping):
            raise WrongType("a mapping of driver classes to their attributes", value)
        strategies = farm_strategies()
        for name, entry in value.items():
            if name in strategies:
                read_as({} if entry is None else entry, strategy_entry(strategies[name]), key=name)
        for name in value:
            if name in strategies and (found := strategies[name].binding_problem(value)) is not None:
                key, problem = found
                raise Invalid(problem, key=key)
        return cls(class_names(value))

    @classmethod
    def __json_schema__(cls, schema_of: Any) -> dict[str, Any]:
        strategies = {name: schema_of(strategy_entry(s)) for name, s in sorted(farm_strategies().items())}
        return {"description": " ".join(cls.__doc__.split()), "anyOf": [
            {"type": "object", "properties": strategies,
             "additionalProperties": {"description": f"a driver and its attributes: {LABGRIDS}"}},
            {"type": "array", "description": f"labgrid's list form: {LABGRIDS}"}]}


@attrs.frozen
class TargetOptions:
    """A target's options: farm reads ``arch``, ``board`` and ``cpu_frequency_hz``; any other is the lab's own,
    for its tests (labgrid's ``get_target_option``)."""

    OPEN = "an option of the lab's own, for its tests (labgrid's get_target_option): farm does not read it"

    arch: str | None = setting(None, doc="the target's Debian architecture (arm64, amd64): run.json's arch, what "
                                         "a reproduction must match; unknown without it")
    board: str | None = setting(None, doc="the board type (maaxboard, x86-pc): what farm reproduce compares with "
                                          "the original's board")
    cpu_frequency_hz: float | None = setting(
        None, check=number(0, 10e9, low_open=True, unit="Hz"),
        doc="the target's nominal clock, for cycles/byte when the target reports none (cpufreq, cpuinfo) and "
            "the pipeline gives none")


@attrs.frozen
class EnvTarget:
    """A target: labgrid makes it from its resources and drivers; farm reads its options and its netboot
    strategy's attributes."""

    resources: Any = setting(None, schema={"type": ["object", "array"]},
                             doc=f"the target's resources (RemotePlace: a farm place, whose resources the coordinator "
                                 f"has): {LABGRIDS}")
    drivers: Drivers | None = setting(None, doc="the target's drivers and strategy (farm's: imports farm.boot.drivers)")
    options: TargetOptions | None = setting(None, doc="the target's options")
    features: Any = setting(None, doc=f"the target's features, for tests' lg_feature marks: {LABGRIDS}")

    def resource_classes(self) -> list[str]:
        return class_names(self.resources)


def _names_problem(targets: Mapping[Any, Any]) -> str | None:
    return None if targets else "an env file needs at least one target"


@attrs.frozen
class EnvDocument:
    """A labgrid env file (docs/architecture.md): its targets, and labgrid's other keys (imports: farm's drivers
    are farm.boot.drivers)."""

    targets: dict[str, EnvTarget | None] = setting(check=_names_problem,
                                                   doc="the targets by name (a name is part of job ids and file "
                                                       "names: letters, digits, . _ -)")
    imports: list[str] | None = setting(None, doc="modules or .py files labgrid imports first (farm's drivers and "
                                                  "strategies: farm.boot.drivers)")
    images: dict[str, Any] | None = setting(None, doc="image files or directories by name (farm's strategies boot "
                                                      f"'farm-image' when no job staged one: a recipe or an image "
                                                      f"directory): {LABGRIDS}")
    tools: dict[str, Any] | None = setting(None, doc=f"paths of tools by name (qemu-system-aarch64): {LABGRIDS}")
    paths: dict[str, Any] | None = setting(None, doc=f"paths by name: {LABGRIDS}")
    options: dict[str, Any] | None = setting(None, doc=f"the file's options, for its tests: {LABGRIDS}")
    features: Any = setting(None, doc=f"the file's features, for tests' lg_feature marks: {LABGRIDS}")

    def validate(self, given: Mapping[str, Any]) -> None:
        from ..values import name_problem

        for name in self.targets:
            if (problem := name_problem(name, "target name")):
                raise Invalid(problem, key=("targets", name))


@attrs.define
class EnvFile:
    """A labgrid env file, checked for what farm needs before labgrid reads it, and its target."""

    path: Path
    target_name: str
    options: TargetOptions
    #: the target is a farm place (a RemotePlace resource): its resources come from the coordinator
    remote_place: bool = False

    @classmethod
    def load(cls, path: str | Path, target: str | None = None) -> "EnvFile":
        from ..config import load_yaml
        from ..schema.read import structure

        node = load_yaml(path, "env file", labgrid_reads_it=True)
        doc = structure(node, EnvDocument)
        if target is None:
            if len(doc.targets) != 1:
                raise node.error("targets", f"several targets ({', '.join(doc.targets)}): name one")
            target = next(iter(doc.targets))
        elif target not in doc.targets:
            raise node.error("targets", f"no target '{target}' (have: {', '.join(doc.targets)})")
        body = doc.targets[target] or EnvTarget()
        return cls(Path(path), target, body.options or TargetOptions(), "RemotePlace" in body.resource_classes())

    @property
    def arch(self) -> str:
        return self.options.arch or "unknown"
