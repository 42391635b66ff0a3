"""Kernel modules: find a module by name in ``modules.dep`` and list it with its dependencies in load order."""

from __future__ import annotations

from typing import Iterable


def parse_modules_dep(text: str) -> dict[str, tuple[str, ...]]:
    """``kernel/a.ko: kernel/b.ko kernel/c.ko`` lines -> {module path: dependency paths}."""
    deps: dict[str, tuple[str, ...]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if ":" not in line:
            raise ValueError(f"modules.dep line {number}: no ':' in {line!r}")
        module, rest = line.split(":", 1)
        deps[module.strip()] = tuple(rest.split())
    return deps


def module_name(path: str) -> str:
    """``kernel/drivers/net/virtio_net.ko[.xz]`` -> ``virtio_net`` (dashes and underscores are the same to the kernel)."""
    base = path.rsplit("/", 1)[-1]
    base = base.split(".ko", 1)[0]
    return base.replace("-", "_")


def load_order(deps: dict[str, tuple[str, ...]], names: Iterable[str]) -> list[str]:
    """Paths of the named modules and everything they need, dependencies first, each once.

    Raises KeyError naming the first module that is not in modules.dep.
    """
    by_name = {module_name(path): path for path in deps}
    order: list[str] = []
    seen: set[str] = set()

    def visit(path: str) -> None:
        if path in seen:
            return
        seen.add(path)
        for dep in deps.get(path, ()):
            visit(dep)
        order.append(path)

    for name in names:
        key = name.replace("-", "_")
        if key not in by_name:
            raise KeyError(name)
        visit(by_name[key])
    return order
