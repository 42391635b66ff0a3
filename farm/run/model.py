"""A pipeline file (``pipelines/*.yaml``): which recipes, targets, setups, benchmarks, repeats.

The file is declared here (:func:`pipeline_file`: its fields, each setup's and each benchmark's, with
every flow's settings and every benchmark's params as registered) and read by farm.schema.read: every
value is checked when the file is read, and an error names file:line: field, before anything is built or
booted; ``farm schema pipeline`` is the JSON Schema of the same declaration. The run that carries a
pipeline out is farm.run.runner.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Literal, Mapping

import attrs

from ..bench import registry as benchmark_registry
from ..boot.target import ShellTarget, lacking, what
from ..config import load_yaml
from ..errors import JobError
from ..flows import FlowType, SetupFlow, flow_types, setup_flow
from ..images.image import LINUX
from ..images.recipe import ARCHES
from ..results.ratio import Rule
from ..schema import Invalid, Unknown, WrongType, between, each, number, setting
from ..values import bootarg_problem, name_problem
from .experiment import INTERLEAVED, MAX_BOOTS, MAX_SEED, ORDERS, SHUFFLED, Experiment, SettleRule

MAX_REPEATS = 1000
MAX_BOOT_ATTEMPTS = 20
MAX_FREQUENCY_HZ = 10e9  # 10 GHz: a CPU frequency beyond that is a typo
MAX_CPUS = 1024


@attrs.frozen
class Benchmark:
    name: str
    #: its typed parameters (the registration's params class, farm.bench.params), checked when the file is read
    params: Any
    #: what the pipeline file gave (for the record of a benchmark that failed)
    given: dict[str, Any] = attrs.field(factory=dict)


def _default_flow() -> SetupFlow:
    return SetupFlow(flow_types()["netboot"])


@attrs.frozen
class Setup:
    """A way of booting the targets: kernel arguments (``maxcpus=1``), another image, a CPU frequency,
    and the boot flow with its settings (farm.flows: the env file's netboot unless the setup says)."""

    name: str
    bootargs: tuple[str, ...] = ()
    image: Path | None = None
    cpu_frequency_khz: int | None = None  # pinned through cpufreq after boot, where the board has it
    flow: SetupFlow = attrs.field(factory=_default_flow)
    boots: int | None = None  # how often it boots; None: the pipeline's ``boots``
    #: the cores the setup runs on: maxcpus= for Linux, -smp on a QEMU twin (farm.boot.flow.FlowSetup)
    cpus: int | None = None

    def describe(self) -> dict[str, Any]:
        """The setup as run.json records it."""
        return {"bootargs": list(self.bootargs), "image": str(self.image) if self.image else None,
                "cpu_frequency_khz": self.cpu_frequency_khz, "cpus": self.cpus, **self.flow.describe(),
                **({"boots": self.boots} if self.boots is not None else {})}


ANY_ARCH = "*"


@attrs.frozen
class Pipeline:
    name: str
    source: Path
    images: dict[str, Path]  # arch -> recipe; ANY_ARCH when one recipe serves every target
    envs: tuple[Path, ...]
    setups: tuple[Setup, ...]
    benchmarks: tuple[Benchmark, ...]
    cpu_frequency_hz: float | None = None
    boot_attempts: int = 2
    repeats_in_boot: int = 1  # each benchmark run this often per boot; record repeat = boot * N + i
    #: boots per setup, their order, settling, the comparison's rule (farm.run.experiment)
    experiment: Experiment = Experiment()

    @property
    def repeats(self) -> int:
        """Boots of a setup that gives none of its own (the older name of ``boots``)."""
        return self.experiment.boots

    def boots_of(self, setup: Setup) -> int:
        return setup.boots if setup.boots is not None else self.experiment.boots

    def recipe_for(self, arch: str, setup: Setup) -> Path:
        if setup.image is not None:
            return setup.image
        if not self.images:
            raise JobError(f"{self.source}: setup {setup.name}: boots a Linux image, and the pipeline names no "
                           "recipe (give 'image' or 'images')")
        if arch in self.images:
            return self.images[arch]
        if ANY_ARCH in self.images:
            return self.images[ANY_ARCH]
        raise JobError(f"{self.source}: images: no image for architecture {arch} (have: {', '.join(self.images)})")



# --- the file as it is written (farm.schema) -----------------------------------------------------------------

def _name(what: str) -> Any:
    """A name that becomes part of paths, job ids and TFTP folders (farm.values.NAME)."""
    return lambda value: name_problem(value, what)


def _not_empty(what: str) -> Any:
    return lambda value: None if value else f"at least one {what} is needed"


@attrs.frozen
class Target:
    """A target the pipeline runs on: its labgrid env file."""

    SHAPE = "a mapping like {env: ../env/x.yaml}"

    env: Path = setting(relative=True, doc="the target's env file (relative to the pipeline file)")


#: ``images:``, a recipe per architecture
PerArch = attrs.make_class("PerArch", {arch: setting(None, relative=True, type=Path | None,
                                                     doc=f"the recipe of the {arch} targets") for arch in ARCHES},
                           frozen=True)
PerArch.__doc__ = "A recipe per architecture (relative to the pipeline file)."


def _setup_class(types: tuple[FlowType, ...]) -> type:
    """A setup of the pipeline file: its own fields, ``flow:`` and each keyed flow's settings field."""
    fields = {
        "name": setting(type=str, check=_name("setup name"), doc="results are keyed by it: unique in the file"),
        "bootargs": setting((), type=tuple[str, ...], check=each(bootarg_problem), doc="kernel arguments added"),
        "image": setting(None, type=Path | None, relative=True, doc="its own recipe (relative to the pipeline file)"),
        "cpu_frequency_khz": setting(None, type=int | None, doc="pinned through cpufreq after boot",
                                     check=number(0, MAX_FREQUENCY_HZ / 1e3, whole=True, low_open=True, unit="kHz")),
        "boots": setting(None, type=int | None, check=between(1, MAX_BOOTS), doc="how often it boots (default: boots)"),
        "cpus": setting(None, type=int | None, check=number(1, MAX_CPUS, whole=True, unit="cores"),
                        doc="the cores it runs on: maxcpus= for Linux, -smp on a QEMU twin"),
        "flow": setting(None, type=str | None, schema={"enum": [t.name for t in types]},
                        doc="its boot flow by name (default: the one whose settings field it gives, else netboot)"),
        **{t.key: setting(None, type=t.settings | None if t.settings else Any,
                          doc=f"the settings of the flow {t.name} (a setup with them uses it)")
           for t in types if t.key}}
    return attrs.make_class("Setup", fields, frozen=True, kw_only=True, bases=(_SetupFields,))


class _SetupFields:
    """A way of booting the targets (farm.run.model.Setup), as the pipeline file gives it."""

    def settings(self) -> dict[str, Any]:
        return {t.key: getattr(self, t.key) for t in flow_types().values() if t.key}

    def validate(self, given: Mapping[str, Any]) -> None:
        flow = setup_flow(self.flow, self.settings())  # type: ignore[attr-defined]
        if self.cpu_frequency_khz is not None and ShellTarget not in flow.type.gives:  # type: ignore[attr-defined]
            # the frequency is set through cpufreq on the target's shell; a system image has none, and its
            # flow would ignore the value, so the run would record a frequency nobody set
            raise Invalid(f"the flow {flow.name} gives no shell ({what(flow.type.gives)}): farm cannot set its CPU "
                          "frequency (cpufreq, on the shell; the lab's system sets its own)", key="cpu_frequency_khz")
        if flow.type.key and (found := flow.type.cores_problem(flow.settings, self.cpus)):  # type: ignore[attr-defined]
            raise Invalid(found[1], key=(flow.type.key, found[0]))
        if self.image is not None and flow.type.image_kind != LINUX:  # type: ignore[attr-defined]
            raise Invalid(f"a setup of the flow {flow.name} names its image in {flow.type.key}.path", key="image")


def _benchmark_class(registry: Mapping[str, type]) -> type:
    """A benchmark of the pipeline file, ``name: {params}``: read as a :class:`Benchmark`."""
    shape = "one 'name: {params}' pair, e.g. 'iperf3: {duration: 3}'"

    class BenchmarkEntry:
        """A benchmark and its parameters (each registered benchmark's params class)."""

        @staticmethod
        def __structure__(value: Any, read_as: Any) -> Benchmark:
            if not isinstance(value, Mapping) or len(value) != 1:
                raise WrongType(shape, value, shape=True)
            (name, params), = value.items()
            if name not in registry:
                raise Unknown(str(name), list(registry), "unknown benchmark (known: {allowed})", key=name)
            if params is not None and not isinstance(params, Mapping):
                raise Invalid("parameters must be a mapping", key=name)
            return Benchmark(name, read_as(params or {}, registry[name], key=name), dict(params or {}))

        @staticmethod
        def __json_schema__(schema_of: Any) -> dict[str, Any]:
            return {"type": "object", "description": "a benchmark and its parameters: " + shape,
                    "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
                    "properties": {name: {"anyOf": [schema_of(params), {"type": "null"}]}
                                   for name, params in sorted(registry.items())}}
    BenchmarkEntry.__qualname__ = "BenchmarkEntry"  # its name in the JSON Schema's $defs
    return BenchmarkEntry


class _PipelineFields:
    """A pipeline file: which recipes, targets, setups, benchmarks, repeats (docs/pipelines.md)."""

    def validate(self, given: Mapping[str, Any]) -> None:
        if self.image is not None and self.images is not None:  # type: ignore[attr-defined]
            raise Invalid("give either 'image' (one recipe) or 'images' (a recipe per architecture)")
        if self.boots is not None and self.repeats is not None:  # type: ignore[attr-defined]
            raise Invalid("give 'boots' (its newer name) or 'repeats', not both", key="repeats")
        if self.seed is not None and self.order != SHUFFLED:  # type: ignore[attr-defined]
            raise Invalid("only a shuffled order has a seed (order: shuffled)", key="seed")
        setups = self.setups or ()  # type: ignore[attr-defined]
        for i, setup in enumerate(setups):
            first = next(j for j, s in enumerate(setups) if s.name == setup.name)
            if first != i:
                raise Invalid(f"{setup.name!r} is already the name of setups[{first}]: results are keyed by setup "
                              "name, two setups of one name would be pooled into one median", key=("setups", i, "name"))
        has_images = self.image is not None or self.images is not None  # type: ignore[attr-defined]
        flows = [setup_flow(s.flow, s.settings()) for s in setups] or [SetupFlow(flow_types()["netboot"])]
        for i, (setup, flow) in enumerate(zip(setups or [None], flows)):
            if not has_images and (setup is None or setup.image is None) and flow.type.image_kind == LINUX:
                raise Invalid(f"setups[{i}] ({setup.name if setup else 'default'}) boots a Linux image: give 'image' "
                              "(one recipe) or 'images' (a recipe per architecture)")
        nodes = given.get("setups") or []
        for i, bench in enumerate(self.benchmarks):  # type: ignore[attr-defined]
            for j, (setup, flow) in enumerate(zip(setups, flows)):
                # the benchmark's needs of the booted target (farm.boot.target) against what the setup's flow
                # gives: a pairing that cannot work is refused now, not after a board was booted
                if (missing := lacking(bench.params.requires(), flow.type.gives)):
                    node = nodes[j] if j < len(nodes) else None
                    where = node.where("name") if hasattr(node, "where") else f"setups[{j}]"
                    raise Invalid(f"needs {what(missing)} on the target, and setup {setup.name} ({where}) has none: "
                                  f"its flow, {flow.name}, gives {what(flow.type.gives)}",
                                  key=("benchmarks", i, bench.name))


@functools.lru_cache(maxsize=8)
def _pipeline_class(registry: tuple[tuple[str, type], ...], types: tuple[FlowType, ...]) -> type:
    setup = _setup_class(types)
    fields = {
        "name": setting(type=str, check=_name("pipeline name"), doc="the pipeline's name (in run ids and reports)"),
        "description": setting("", type=str, doc="what it is for"),
        "image": setting(None, type=Path | None, relative=True, doc="one recipe for every target"),
        "images": setting(None, type=PerArch | None, doc="a recipe per architecture (instead of image)"),
        "targets": setting(type=list[Target], check=_not_empty("target"), doc="the targets, by env file"),
        "setups": setting(None, type=list[setup] | None, doc="ways of booting the targets (default: one, 'default')"),
        "benchmarks": setting(type=list[_benchmark_class(dict(registry))], doc="run on each boot, in this order"),
        "repeats": setting(None, type=int | None, check=between(1, MAX_BOOTS), doc="the older name of boots"),
        "boots": setting(None, type=int | None, check=between(1, MAX_BOOTS), doc="boots per setup (default 1)"),
        "order": setting(INTERLEAVED, type=Literal[ORDERS], doc="the boots' order",  # type: ignore[valid-type]
                         hint="interleaved: A B A B ...; shuffled: a random order per round, from seed"),
        "seed": setting(None, type=int | None, check=between(0, MAX_SEED), doc="shuffled: the order's seed"),
        "settle": setting(True, type=SettleRule | bool, doc="before the first benchmark of a boot (false: no settling)"),
        "compare": setting(None, type=Rule | None, doc="a ratio's rule (farm.results.ratio)"),
        "repeats_in_boot": setting(1, type=int, check=between(1, MAX_REPEATS), doc="each benchmark this often per boot"),
        "cpu_frequency_hz": setting(None, type=float | None, doc="the targets' clock, for cycles/byte",
                                    check=number(0, MAX_FREQUENCY_HZ, low_open=True, unit="Hz")),
        "boot_attempts": setting(2, type=int, check=between(1, MAX_BOOT_ATTEMPTS, "1: never retry a failed boot"),
                                 doc="attempts of a boot that failed for the lab's reasons"),
    }
    return attrs.make_class("Pipeline", fields, frozen=True, kw_only=True, bases=(_PipelineFields,))


def pipeline_file(registry: Mapping[str, Any] | None = None) -> type:
    """The pipeline file's class: its fields, with ``registry``'s benchmarks (default: the registered ones, farm's
    and the lab's plugins') and every registered flow."""
    registry = benchmark_registry.benchmarks() if registry is None else registry
    return _pipeline_class(tuple(sorted((name, spec.params) for name, spec in registry.items())),
                           tuple(flow_types().values()))


def load_pipeline(path: str | Path, registry: Mapping[str, Any] | None = None) -> Pipeline:
    """Read and check a pipeline file; ``registry``: the benchmarks it may name (default: the registered ones,
    farm's and the lab's plugins')."""
    from ..schema.read import structure

    doc = structure(load_yaml(path, "pipeline file"), pipeline_file(registry))
    if doc.image is not None:
        images = {ANY_ARCH: doc.image}
    else:  # none: every setup boots an image of another kind (a system image), checked with the setups
        images = {arch: getattr(doc.images, arch) for arch in ARCHES if doc.images and getattr(doc.images, arch)}
    setups = tuple(Setup(s.name, s.bootargs, s.image, s.cpu_frequency_khz, setup_flow(s.flow, s.settings()),
                         s.boots, s.cpus) for s in doc.setups or ()) or (Setup("default"),)
    experiment = Experiment(doc.boots or doc.repeats or 1, doc.order, doc.seed,
                            None if doc.settle is False else SettleRule() if doc.settle is True else doc.settle,
                            doc.compare or Rule())
    return Pipeline(name=doc.name, source=Path(path), images=images, envs=tuple(t.env for t in doc.targets),
                    setups=setups, benchmarks=tuple(doc.benchmarks), cpu_frequency_hz=doc.cpu_frequency_hz,
                    boot_attempts=doc.boot_attempts, repeats_in_boot=doc.repeats_in_boot, experiment=experiment)
