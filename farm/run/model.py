"""A pipeline file (``pipelines/*.yaml``): which recipes, targets, setups, benchmarks, repeats.

Every value is checked when the file is read, and an error names file:line: field, before anything is
built or booted (farm.config). The run that carries a pipeline out is farm.run.runner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import attrs

from ..bench import registry as benchmark_registry
from ..boot.target import ShellTarget, lacking, what
from ..config import Node, field, load_yaml, reject_unknown, require, string_list
from ..errors import JobError
from ..flows import SetupFlow, flow_types, setup_fields, setup_flow
from ..images.image import LINUX
from ..images.recipe import ARCHES
from ..values import bootarg_problem, name_problem, number_problem
from .experiment import Experiment, load_experiment, read_boots

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


def _relative(node: Node, key: str, value: str) -> Path:
    path = Path(value)
    return path if path.is_absolute() else Path(node.file).parent / path


def _name(node: Node, key: str, value: str, what: str) -> str:
    """A name that becomes part of paths, job ids and TFTP folders (farm.values.NAME)."""
    if (problem := name_problem(value, what)):
        raise node.error(key, problem)
    return value


def load_pipeline(path: str | Path, registry: Mapping[str, Any] | None = None) -> Pipeline:
    """Read and check a pipeline file; ``registry``: the benchmarks it may name (default: the registered ones,
    farm's and the lab's plugins')."""
    registry = benchmark_registry.benchmarks() if registry is None else registry
    doc = load_yaml(path, "pipeline file")
    reject_unknown(doc, {"name", "description", "image", "images", "targets", "setups", "benchmarks", "repeats",
                         "boots", "order", "seed", "settle", "compare", "repeats_in_boot", "cpu_frequency_hz",
                         "boot_attempts"})
    name = _name(doc, "name", require(doc, "name", str), "pipeline name")
    field(doc, "description", str, "")
    if "image" in doc and "images" in doc:
        raise doc.error(None, "give either 'image' (one recipe) or 'images' (a recipe per architecture)")
    if "image" in doc:
        images = {ANY_ARCH: _relative(doc, "image", require(doc, "image", str))}
    elif "images" not in doc:
        images = {}  # every setup boots an image of another kind (a system image): checked with the setups
    else:
        per_arch = require(doc, "images", Node)
        reject_unknown(per_arch, ARCHES)
        images = {arch: _relative(per_arch, arch, require(per_arch, arch, str)) for arch in per_arch}
    targets = require(doc, "targets", list)
    envs = []
    for i, item in enumerate(targets):
        if not isinstance(item, Node):
            raise doc.error("targets", f"item {i} must be a mapping like {{env: ../env/x.yaml}}")
        reject_unknown(item, {"env"})
        envs.append(_relative(item, "env", require(item, "env", str)))
    if not envs:
        raise doc.error("targets", "at least one target is needed")
    setups, setup_nodes = [], []
    for i, item in enumerate(field(doc, "setups", list, None) or [Node(name="default")]):
        if not isinstance(item, Node):
            raise doc.error("setups", f"item {i} must be a mapping with a name")
        if not hasattr(item, "key_lines"):
            item.key_lines, item.file, item.path = {}, str(path), f"setups[{i}]"
        reject_unknown(item, {"name", "bootargs", "image", "cpu_frequency_khz", "boots", "cpus", *setup_fields()})
        setup_image = field(item, "image", str, None)
        khz = field(item, "cpu_frequency_khz", int, None)
        if khz is not None and (problem := number_problem(khz, 0, MAX_FREQUENCY_HZ / 1e3, whole=True, low_open=True,
                                                          unit="kHz")):
            raise item.error("cpu_frequency_khz", problem)
        cpus = field(item, "cpus", int, None)
        if cpus is not None and (problem := number_problem(cpus, 1, MAX_CPUS, whole=True, unit="cores")):
            raise item.error("cpus", problem)
        setup_name = _name(item, "name", require(item, "name", str), "setup name")
        if (first := next((j for j, s in enumerate(setups) if s.name == setup_name), None)) is not None:
            raise item.error("name", f"{setup_name!r} is already the name of setups[{first}]: results are "
                             "keyed by setup name, two setups of one name would be pooled into one median")
        flow = setup_flow(item, Path(path).parent)
        if khz is not None and ShellTarget not in flow.type.gives:
            # the frequency is set through cpufreq on the target's shell; a system image has none, and its
            # flow would ignore the value, so the run would record a frequency nobody set
            raise item.error("cpu_frequency_khz", f"the flow {flow.name} gives no shell ({what(flow.type.gives)}): "
                             "farm cannot set its CPU frequency (cpufreq, on the shell; the lab's system sets its own)")
        if not images and setup_image is None and flow.type.image_kind == LINUX:
            raise doc.error(None, f"setups[{i}] ({setup_name}) boots a Linux image: give 'image' (one recipe) or "
                                  "'images' (a recipe per architecture)")
        setups.append(Setup(setup_name, tuple(string_list(item, "bootargs", check=bootarg_problem)),
                            _relative(item, "image", setup_image) if setup_image else None, khz, flow,
                            read_boots(item, "boots", 1) if item.get("boots") is not None else None, cpus))
        setup_nodes.append(item)
    benchmarks = []
    for i, item in enumerate(require(doc, "benchmarks", list)):
        if not isinstance(item, Node) or len(item) != 1:
            raise doc.error("benchmarks", f"item {i} must be one 'name: {{params}}' pair, e.g. 'iperf3: {{duration: 3}}'")
        bench_name, params = next(iter(item.items()))
        if bench_name not in registry:
            raise item.error(bench_name, f"unknown benchmark (known: {', '.join(sorted(registry))})")
        params = params or Node()
        if not isinstance(params, Node):
            raise item.error(bench_name, "parameters must be a mapping")
        if not hasattr(params, "key_lines"):
            params.key_lines, params.file, params.path = {}, str(path), f"benchmarks[{i}].{bench_name}"
        spec = registry[bench_name]
        kinds = spec.params.kinds()
        reject_unknown(params, kinds)
        for key, kind in kinds.items():
            field(params, key, kind, None)
        try:
            typed = spec.params.of(dict(params))  # every value checked now, not after a board was booted
        except JobError as exc:
            raise item.error(bench_name, str(exc)) from None
        for setup, node in zip(setups, setup_nodes):
            if (missing := lacking(spec.requires(typed), setup.flow.type.gives)):
                raise item.error(bench_name, f"needs {what(missing)} on the target, and setup {setup.name} "
                                 f"({node.where('name')}) has none: its flow, {setup.flow.name}, gives "
                                 f"{what(setup.flow.type.gives)}")
        benchmarks.append(Benchmark(bench_name, typed, dict(params)))
    experiment = load_experiment(doc)
    repeats_in_boot = field(doc, "repeats_in_boot", int, 1)
    if not 1 <= repeats_in_boot <= MAX_REPEATS:
        raise doc.error("repeats_in_boot", f"must be 1-{MAX_REPEATS}")
    frequency = field(doc, "cpu_frequency_hz", float, None)
    if frequency is not None and (problem := number_problem(frequency, 0, MAX_FREQUENCY_HZ, low_open=True, unit="Hz")):
        raise doc.error("cpu_frequency_hz", problem)
    boot_attempts = field(doc, "boot_attempts", int, 2)
    if not 1 <= boot_attempts <= MAX_BOOT_ATTEMPTS:
        raise doc.error("boot_attempts", f"must be 1-{MAX_BOOT_ATTEMPTS} (1: never retry a failed boot)")
    return Pipeline(name=name, source=Path(path), images=images, envs=tuple(envs), setups=tuple(setups),
                    benchmarks=tuple(benchmarks), cpu_frequency_hz=frequency,
                    boot_attempts=boot_attempts, repeats_in_boot=repeats_in_boot, experiment=experiment)

