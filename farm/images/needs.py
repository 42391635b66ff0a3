"""What the benchmarks of a run need on the target, which the recipes of its images gain without edits.

    needs = Needs(packages=("iperf3",), files=("/usr/bin/iperf3",))
    recipe = with_needs(load_recipe("images/maaxboard-lean.yaml"), needs)

A benchmark registration declares its needs (farm.bench.registry); the runner adds those of the run's
benchmarks to the image they run on (a boot flow says which: farm.boot.flow). What a recipe has
already stays as it is, in its order, so a recipe that lists everything keeps its image's cache key.
"""

from __future__ import annotations

import attrs

from .programs import Program


@attrs.frozen
class Needs:
    """Debian packages, the files of them the initrd holds, programs of ours (images/src), and kernel
    modules /init loads (a guest's tap network on its host: bridge, tun, vhost_net)."""

    packages: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    programs: tuple[Program, ...] = ()
    modules: tuple[str, ...] = ()

    def __or__(self, other: "Needs") -> "Needs":
        return Needs(_union(self.packages, other.packages), _union(self.files, other.files),
                     _programs(self.programs, other.programs), _union(self.modules, other.modules))

    def __bool__(self) -> bool:
        return bool(self.packages or self.files or self.programs or self.modules)

    def describe(self) -> str:
        return ", ".join([*self.packages, *(p.name for p in self.programs), *self.modules]) or "nothing"


def _union(first: tuple[str, ...], more: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*first, *more]))


def _programs(first: tuple[Program, ...], more: tuple[Program, ...]) -> tuple[Program, ...]:
    """The programs of ``first``, then those of ``more`` of another name."""
    names = {p.name for p in first}
    return (*first, *(p for p in more if p.name not in names))


def with_needs(recipe, needs: Needs):
    """``recipe`` (farm.images.recipe.Recipe) with what ``needs`` adds to it; itself when it has it all."""
    packages, files = _union(recipe.packages, needs.packages), _union(recipe.files, needs.files)
    programs, modules = _programs(recipe.programs, needs.programs), _union(recipe.modules, needs.modules)
    if (packages, files, programs, modules) == (recipe.packages, recipe.files, recipe.programs, recipe.modules):
        return recipe
    return attrs.evolve(recipe, packages=packages, files=files, programs=programs, modules=modules)
