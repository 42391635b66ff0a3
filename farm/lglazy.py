"""labgrid's driver, resource and strategy packages, loaded by name instead of all at once.

``import labgrid`` imports every driver, resource and strategy labgrid has (its package ``__init__`` files
import ~60 modules: USB loaders, Modbus, Docker, SNMP, sigrok...), about 0.15 s of every farm process
on a quiet machine before the first byte reaches the board. :func:`install` puts the three packages in
``sys.modules`` as *lazy* packages first: the same directories, the same modules, but a name
(``labgrid.driver.UBootDriver``, ``from labgrid.resource import TFTPProvider``) imports only the module
that defines it, which registers its classes with labgrid's ``target_factory`` as usual. Nothing of
labgrid is changed or wrapped; only *when* its modules are imported.

labgrid builds a target from an env file by class name, so the classes an env file names must be
registered first: :func:`load_for_env` imports the modules of the drivers and resources it names (farm's
own come in through the env file's ``imports:``). A ``RemotePlace`` gets its resources from the
coordinator by class names the env file does not know: then every resource module is loaded
(:func:`load_all`).

Where labgrid was imported before :func:`install` (labgrid's own pytest plugin, ``labgrid-client``), it
does nothing: everything is loaded already.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import re
import sys
import types
from pathlib import Path
from typing import Iterable

PACKAGES = ("driver", "resource", "strategy")
_CLASS = re.compile(r"^class ([A-Za-z_][A-Za-z0-9_]*)\b", re.M)


class LazyPackage(types.ModuleType):
    """A labgrid package whose ``__init__`` is read, not run: each name it exports is imported on first use."""

    def __init__(self, name: str, directory: Path):
        super().__init__(name)
        self.__path__ = [str(directory)]
        self.__package__ = name
        self.__file__ = str(directory / "__init__.py")
        self.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        self.__spec__.submodule_search_locations = self.__path__
        self._lazy_names, self._star = exported_names((directory / "__init__.py").read_text())
        self._defined: dict[str, str] | None = None

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        module = self._lazy_names.get(attr) or self.defining_module(attr)
        if module is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")
        value = getattr(importlib.import_module(f"{self.__name__}.{module}"), attr)
        setattr(self, attr, value)
        return value

    def defining_module(self, name: str) -> str | None:
        """The module of the package that defines class ``name`` without exporting it (labgrid's
        ``RemoteTFTPProvider``, bound by name): found in the modules' text, not by importing them."""
        if self._defined is None:
            self._defined = {}
            for path in sorted(Path(self.__path__[0]).glob("*.py")):
                for found in _CLASS.finditer(path.read_text(errors="replace")):
                    self._defined.setdefault(found.group(1), path.stem)
        return self._defined.get(name)

    def load_all(self) -> None:
        """What the package's ``__init__`` would have imported."""
        for module in dict.fromkeys([*self._lazy_names.values(), *self._star]):
            importlib.import_module(f"{self.__name__}.{module}")
        for name in self._lazy_names:
            getattr(self, name)

    @property
    def __all__(self) -> list[str]:  # ``from labgrid.driver import *``
        self.load_all()
        return sorted(self._lazy_names)


def exported_names(init_source: str) -> tuple[dict[str, str], list[str]]:
    """``{name: submodule}`` of a package's ``from .module import name`` lines, and the modules it
    star-imports (pure)."""
    names: dict[str, str] = {}
    star: list[str] = []
    for node in ast.parse(init_source).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                if alias.name == "*":
                    star.append(node.module)
                else:
                    names[alias.asname or alias.name] = node.module
    return names, star


def install() -> bool:
    """Make labgrid's driver, resource and strategy packages lazy; False when labgrid is imported already
    (or cannot be found), and so left as it is."""
    if "labgrid" in sys.modules or any(f"labgrid.{p}" in sys.modules for p in PACKAGES):
        return False
    spec = importlib.util.find_spec("labgrid")
    if spec is None or not spec.submodule_search_locations:
        return False
    root = Path(next(iter(spec.submodule_search_locations)))
    for package in PACKAGES:
        sys.modules[f"labgrid.{package}"] = LazyPackage(f"labgrid.{package}", root / package)
    import labgrid

    for package in PACKAGES:  # as the import system would have set them
        setattr(labgrid, package, sys.modules[f"labgrid.{package}"])
    return True


def _package(name: str):
    return importlib.import_module(f"labgrid.{name}")


def load(names: Iterable[str]) -> None:
    """Register the labgrid classes of these names (drivers, resources, strategies); other names (farm's
    own, or unknown ones labgrid will refuse) are left alone."""
    packages = [_package(p) for p in PACKAGES]
    for name in names:
        for package in packages:
            if isinstance(package, LazyPackage) and (name in package._lazy_names or package.defining_module(name)):
                getattr(package, name)
                break


def load_all(package: str) -> None:
    """Every module of one of the packages (``"resource"``), as labgrid's own import would have loaded."""
    module = _package(package)
    if isinstance(module, LazyPackage):
        module.load_all()


def load_everything() -> None:
    """All of labgrid, for the code that meets classes by names no env file gives (the coordinator's)."""
    for package in PACKAGES:
        load_all(package)


def env_class_names(doc: dict) -> list[str]:
    """The driver and resource class names of an env file's targets (pure; labgrid checks the rest: the
    file was read through its declaration, farm.boot.envfile, before a target is made of it)."""
    targets = doc.get("targets")
    bodies = [body for body in (targets.values() if isinstance(targets, dict) else ()) if isinstance(body, dict)]
    return list(dict.fromkeys(name for body in bodies for section in ("resources", "drivers")
                              for name in class_names(body.get(section))))


def class_names(section: object) -> list[str]:
    """The class names of a target's ``resources`` or ``drivers`` in either of labgrid's forms (a mapping
    of class -> attributes, or a list of ``{Class: {...}}`` and ``{cls: Class, ...}`` items)."""
    if isinstance(section, dict):
        return [str(name) for name in section]
    names: list[str] = []
    for item in section if isinstance(section, list) else ():
        if isinstance(item, dict):
            names += [str(item["cls"])] if "cls" in item else [str(name) for name in item]
    return names


def active() -> bool:
    """Whether labgrid's packages are lazy in this process (else labgrid was loaded in full)."""
    return any(isinstance(sys.modules.get(f"labgrid.{p}"), LazyPackage) for p in PACKAGES)


def load_for_env(path: str | Path) -> None:
    """Register everything labgrid needs to make the targets of the env file ``path``: the classes it
    names, the modules of its ``imports:`` (farm's drivers), and what those classes bind to by name."""
    if not active():
        return
    from .config import load_yaml

    doc = load_yaml(path, "env file")
    names = env_class_names(doc)
    if "RemotePlace" in names:
        load_all("resource")  # the coordinator names the place's resources
    load(names)
    for module in doc.get("imports") or ():
        if isinstance(module, str) and not module.endswith(".py") and "/" not in module:
            importlib.import_module(module)
    from labgrid.factory import target_factory

    seen: set[str] = set()
    todo = [n for n in names if n in target_factory.drivers or n in target_factory.resources]
    while todo:  # a driver binds to classes by name ("TFTPProvider", "RemoteTFTPProvider"): register them
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        cls = target_factory.drivers.get(name)
        for requirement in (getattr(cls, "bindings", None) or {}).values():
            requirement = getattr(requirement, "value", requirement)  # Driver.NamedBinding
            for wanted in (requirement if isinstance(requirement, (set, frozenset, tuple, list)) else [requirement]):
                if isinstance(wanted, str) and wanted not in target_factory.all_classes:
                    load([wanted])
                    todo.append(wanted)
