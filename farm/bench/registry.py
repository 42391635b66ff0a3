"""The benchmarks farm knows: one registration each, from which everything that lists them derives.

A :class:`BenchmarkSpec` says all farm needs to know of a benchmark: its name and suite, how it runs
on a booted target (``run``), its parameters (a typed class, farm.bench.params: defaults, checks,
which are identity and which run length, what the benchmark needs on the target's image and of the
booted target for them), its pure parsers, which way each of its units is better (for ``farm
qualify``), whether its throughputs get cycles/byte, and the ports it needs on the target. An
:class:`Importer` says how ``farm import KIND`` reads a captured output of a benchmark, and the options
it takes (:class:`ImportOption`: ``farm import``'s parser is made of them).

Registrations come from plugins (farm.plugins: the hooks ``farm_benchmarks`` and ``farm_importers``,
farm.hookspecs): farm's own are this module's (:data:`REGISTRATIONS`, :data:`IMPORTS`), a lab's come
from its package by entry point. The pipeline file's benchmark names and parameters (:func:`benchmarks`),
``farm import``'s kinds and options (:func:`importers`, :func:`import_options`), qualify's directions
(:func:`direction`), ``--frequency``'s cycles/byte, a record's key (:func:`run_length`), what the images
gain and docs/benchmarks.md's list (:func:`markdown_table`) all read them; no other module lists
benchmarks or suites.

Adding a benchmark: a parser (in :mod:`farm.measure`), a run function and its params class (in a
suite module here), one :class:`BenchmarkSpec` (in :data:`REGISTRATIONS`, or a lab's plugin's
``farm_benchmarks``), and their tests (docs/benchmarks.md).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Mapping, Sequence

import attrs

from .. import plugins
from ..boot.target import what
from ..errors import JobError
from ..hookspecs import hookimpl
from ..images.needs import Needs
from ..measure import (HIGHER_IS_BETTER, LOWER_IS_BETTER, UNKNOWN_DIRECTION, Measurement, check_measurements,
                       exitcost, farmload, ipbench, iperf3, iperf3_notebook, isal, lukem, openssl, sockperf, vmexit)
from . import echo
from .console import ConsoleParams, parse_standin, run_console
from .exitcost import ExitcostParams, run_exitcost
from .context import BenchContext
from .crypto import IsalParams, OpensslParams, import_openssl, run_isal, run_openssl_speed
from .network import IPERF3_PORT, SOCKPERF_PORT, Iperf3Params, SweepParams, run_iperf3, run_sweep
from .params import NoParams, Params

RunFunction = Callable[[BenchContext, Params], list[Measurement]]
Parser = Callable[[str], list[Measurement]]

# the suites: the first part of a benchmark's testcase name (crypto.openssl-speed) and of its metrics
NETWORK, CRYPTO, STORAGE, VIRT, SYSTEM = "network", "crypto", "storage", "virt", "system"


def _checked(spec: "BenchmarkSpec", run: RunFunction | None) -> RunFunction | None:
    """``run``, whose measurements are all checked: an impossible value (NaN, infinite, negative)
    is an :class:`~farm.measure.ImpossibleValue`, so the runner records a failed benchmark, not the value.
    It takes the typed params, or a mapping of them (checked into the benchmark's params class)."""
    if run is None:
        return None

    def checked(ctx: BenchContext, params: Params | Mapping[str, Any]) -> list[Measurement]:
        if not isinstance(params, Params):
            params = spec.params.of(params)
        return check_measurements(spec.name, run(ctx, params))
    checked.__doc__ = run.__doc__
    checked.__wrapped__ = run  # type: ignore[attr-defined]
    return checked


def _warn_stderr(text: str) -> None:
    print(f"farm: warning: {text}", file=sys.stderr)


@attrs.frozen
class ImportOption:
    """An option of ``farm import`` an importer reads: ``--cpu-fraction`` of ``cpu_fraction``. Declared once,
    here; ``farm import``'s parser and help and the import's checks derive from it."""

    name: str  # a Python name: the option is --name-with-dashes
    help: str  # what it says of the capture, for --help
    #: bool: a flag (given or not); else what turns its command-line text into a value (int, float, str)
    type: Callable[[str], Any] = bool

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def default(self) -> Any:
        """Its value when not given: a flag's False, another's None."""
        return False if self.type is bool else None


@attrs.frozen
class ImportOptions:
    """What ``farm import`` passes an importer besides the text: the values of the options it declares
    (each its default unless given: ``options["cpu_fraction"]``) and where its warnings go."""

    values: Mapping[str, Any] = attrs.field(factory=dict)
    warn: Callable[[str], None] = _warn_stderr

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


Captured = Sequence[tuple[int, Measurement]]  # (repeat, measurement): a capture can hold repeats


@attrs.frozen
class Importer:
    """How ``farm import NAME FILE`` reads a captured output of a benchmark (pure: text in, the
    repeat and measurement of each value out; the import path reads the file and names it in errors)."""

    name: str
    benchmark: str  # the registered benchmark whose records it makes (its suite, units, cycles/byte)
    what: str  # what the file is, for --help: "the lab's wide CSV"
    read: Callable[[str, ImportOptions], Captured]
    options: tuple[ImportOption, ...] = ()  # the options it reads (ImportOptions' values)


def once(parse: Parser) -> Callable[[str, ImportOptions], Captured]:
    """An importer's ``read`` for a capture of one run: every measurement repeat 0."""
    return lambda text, options: [(0, m) for m in parse(text)]


def by_param(parse: Parser, name: str) -> Callable[[str, ImportOptions], Captured]:
    """An importer's ``read`` for a capture of several runs whose parser numbers them in param ``name``."""
    return lambda text, options: [(int(m.params.get(name, 0)), m) for m in parse(text)]


@attrs.frozen
class BenchmarkSpec:
    """One benchmark (see the module docstring)."""

    name: str
    suite: str
    #: runs it on a booted target with its typed params; None for a benchmark farm only imports (vmexit)
    run: RunFunction | None = attrs.field(
        default=None, converter=attrs.Converter(lambda run, self_: _checked(self_, run), takes_self=True))  # type: ignore[misc]
    #: its parameters: a farm.bench.params.Params class (defaults, checks, identity and run lengths, needs)
    params: type[Params] = NoParams
    parsers: tuple[Parser, ...] = ()  # the pure parsers of its tools' outputs (text -> measurements)
    #: unit -> which way is better (farm.measure.HIGHER_IS_BETTER, LOWER_IS_BETTER, UNKNOWN_DIRECTION:
    #: compared, never a regression); every unit its measurements can have
    units: Mapping[str, int] = attrs.field(factory=dict)
    #: metric -> direction, where a metric's differs from its unit's (a figure of the lab host's, not the
    #: target's: compared, never a regression of the target)
    metric_directions: Mapping[str, int] = attrs.field(factory=dict)
    cycles_per_byte: bool = False  # its throughputs also get cycles/byte at the target's clock
    ports: tuple[int, ...] = ()  # the target's ports it needs reached from the lab host (forwarded into a guest)

    def ports_for(self, params: Params) -> tuple[int, ...]:
        """The target's ports it reaches with ``params``: its fixed ones and those the params chose (a sweep's
        ``echo_port``); what a flow forwards into a guest."""
        return tuple(dict.fromkeys([*self.ports, *params.ports()]))

    def target_needs(self, params: Params) -> Needs:
        """What it needs on the target (packages, files, programs) with ``params``: the image it runs on gains it."""
        return params.needs()

    def requires(self, params: Params) -> tuple[type, ...]:
        """What it asks of the booted target with ``params`` (farm.boot.target's protocols: a shell, a served
        network, a system's console): a setup whose flow does not give it is refused it when the pipeline
        file is read (farm.flows.FlowType.gives)."""
        return params.requires()

    def direction(self, unit: str, metric: str = "") -> int | None:
        """Which way ``metric`` in ``unit`` of this benchmark is better; None when the registration does not say."""
        if metric in self.metric_directions:
            return self.metric_directions[metric]
        return self.units.get(unit)


#: iperf3's units: goodput, TCP retransmits (a count: no direction), UDP loss and both CPUs in
#: percent, jitter in ms
_IPERF3_UNITS = {"bit/s": HIGHER_IS_BETTER, "count": UNKNOWN_DIRECTION, "percent": LOWER_IS_BETTER,
                 "ms": LOWER_IS_BETTER}

REGISTRATIONS: tuple[BenchmarkSpec, ...] = (
    BenchmarkSpec(
        ipbench.BENCHMARK, NETWORK, run_sweep, SweepParams,
        parsers=(lambda text: farmload.parse_load(text).measurements(),
                 lambda text: sockperf.parse_sockperf(text).measurements(),
                 lambda text: [m for _, m in ipbench.parse_csv(text)]),
        # throughputs, RTTs, CPU utilisation (whole and per core); lost packets: a count, no direction
        units={"bit/s": HIGHER_IS_BETTER, "us": LOWER_IS_BETTER, "percent": LOWER_IS_BETTER,
               "count": UNKNOWN_DIRECTION,
               lukem.UNIT: UNKNOWN_DIRECTION, "Hz": UNKNOWN_DIRECTION},  # the CPU target's counts, its counter
        # the echo's and the CPU target's defaults (ipbench, ipbench-echo: SweepParams.ports, the chosen
        # ones); iperf3-sockperf's
        ports=(echo.ECHO_PORT, lukem.PORT, IPERF3_PORT, SOCKPERF_PORT)),
    BenchmarkSpec(
        iperf3.BENCHMARK, NETWORK, run_iperf3, Iperf3Params,
        parsers=(iperf3.parse_json, iperf3.parse_text),
        units=_IPERF3_UNITS, ports=(IPERF3_PORT,),
        # host_cpu is the lab host's CPU (iperf3's client), not the target's: a loaded lab host (or the
        # twin's machine running other tests) moves it, the target does not; remote_cpu is the target's
        metric_directions={"host_cpu": UNKNOWN_DIRECTION}),
    BenchmarkSpec(
        openssl.BENCHMARK, CRYPTO, run_openssl_speed, OpensslParams,
        parsers=(openssl.parse_speed_mr,),
        units={"bytes/s": HIGHER_IS_BETTER, "cycles/byte": LOWER_IS_BETTER}, cycles_per_byte=True),
    BenchmarkSpec(
        isal.BENCHMARK, STORAGE, run_isal, IsalParams,
        parsers=(isal.isal_measurements,),
        units={"bytes/s": HIGHER_IS_BETTER, "ticks/byte": LOWER_IS_BETTER, "cycles/byte": LOWER_IS_BETTER},
        cycles_per_byte=True),
    BenchmarkSpec(
        vmexit.BENCHMARK, VIRT,
        parsers=(vmexit.parse_vmexit,),
        units={"cycles": LOWER_IS_BETTER}),
    # farm's arm64 exit-cost program as a KVM guest on the target (farm.bench.exitcost): per-exit counter ticks
    BenchmarkSpec(
        exitcost.BENCHMARK, VIRT, run_exitcost, ExitcostParams, parsers=(exitcost.parse_exitcost,),
        units={"ticks": LOWER_IS_BETTER, "ns": LOWER_IS_BETTER}),
    # a system image's console lines (farm.bench.console): their units are the pipeline's, of no
    # direction unless listed here; the parser is the stand-in's patterns (a pipeline gives its own)
    BenchmarkSpec(
        "console", SYSTEM, run_console, ConsoleParams, parsers=(parse_standin,),
        units={"count": UNKNOWN_DIRECTION, "ticks": UNKNOWN_DIRECTION, "percent": UNKNOWN_DIRECTION}),
)

#: farm's import kinds (``farm import KIND FILE``), in the order --help lists them
IMPORTS: tuple[Importer, ...] = (
    Importer("ipbench", ipbench.BENCHMARK, "the lab's wide CSV",
             lambda text, o: ipbench.parse_csv(text, cpu_fraction=o["cpu_fraction"], warn=o.warn),
             (ImportOption("cpu_fraction", "CPU_Utilisation is a 0-1 fraction, not percent"),)),
    Importer("iperf3", iperf3.BENCHMARK, "-J JSON, or the text of one or more runs, a lab notebook's too "
             "(each run's load on its separator)",
             lambda text, o: iperf3_notebook.repeats(iperf3.parse_output(text, direction=True))),
    Importer("openssl", openssl.BENCHMARK, "speed -mr, of -decrypt with --decrypt",
             lambda text, o: [(0, m) for m in import_openssl(text, o["decrypt"])],
             (ImportOption("decrypt", "the capture is of `openssl speed -decrypt` (ciphers' direction=decrypt; "
                                      "encrypt otherwise, openssl's default)"),)),
    Importer("isal", isal.BENCHMARK, "ISA-L perf lines: isal_bench's output or a perf_report",
             once(isal.isal_measurements)),
    Importer("vmexit", vmexit.BENCHMARK, "a kvm-unit-tests vmexit console", once(vmexit.parse_vmexit)),
)


@hookimpl
def farm_benchmarks() -> Sequence[BenchmarkSpec]:
    """farm's benchmarks (a builtin plugin, farm.plugins.BUILTIN)."""
    return REGISTRATIONS


@hookimpl
def farm_importers() -> Sequence[Importer]:
    """farm's import kinds."""
    return IMPORTS


# --- what the plugins registered (farm.plugins: farm's and the lab's, found once per process) ------------

def registered() -> Mapping[str, BenchmarkSpec]:
    """Every registered benchmark by name, imported-only ones (vmexit) too."""
    return plugins.benchmarks()


def benchmarks() -> Mapping[str, BenchmarkSpec]:
    """The benchmarks a pipeline can name: those that run on a target."""
    return {name: spec for name, spec in registered().items() if spec.run is not None}


def importers() -> Mapping[str, Importer]:
    """``farm import``'s kinds by name."""
    return plugins.importers()


def import_options() -> dict[str, tuple[ImportOption, tuple[str, ...]]]:
    """Every option of ``farm import``: name -> (the option, the kinds that read it)."""
    found: dict[str, tuple[ImportOption, tuple[str, ...]]] = {}
    for kind, imp in importers().items():
        for option in imp.options:
            first, kinds = found.get(option.name, (option, ()))
            found[option.name] = (first, (*kinds, kind))
    return found


def suites() -> tuple[str, ...]:
    """The suites of the registered benchmarks, in registration order."""
    return tuple(dict.fromkeys(spec.suite for spec in registered().values()))


def importer(name: str) -> tuple[BenchmarkSpec, Importer]:
    """The benchmark and importer of ``farm import NAME``; an unknown name is a JobError listing the known ones."""
    kinds = importers()
    if name not in kinds:
        raise JobError(f"import {name!r}: unknown kind (known: {', '.join(kinds)})")
    return registered()[kinds[name].benchmark], kinds[name]


#: how long or how much was measured, for benchmarks farm does not register (a pytest test's
#: ``farm_record``): never part of a record's key
RUN_LENGTH = frozenset({"duration", "seconds", "samples", "warmup", "cooldown", "timeout"})


def run_length(benchmark: str) -> frozenset[str]:
    """The params of ``benchmark``'s records that say how long or how much was measured (its params
    class's ``run_length`` fields; :data:`RUN_LENGTH` for a benchmark farm does not register)."""
    spec = registered().get(benchmark)
    return spec.params.run_length() if spec is not None and spec.params is not NoParams else RUN_LENGTH


def direction(benchmark: str, unit: str, metric: str = "") -> int | None:
    """Which way ``metric`` in ``unit`` of ``benchmark`` is better, as its registration says; None for a
    benchmark farm does not register (a pytest test's ``farm_record``) or a unit its registration does not name."""
    spec = registered().get(benchmark)
    return spec.direction(unit, metric) if spec else None


_ARROWS = {HIGHER_IS_BETTER: "↑", LOWER_IS_BETTER: "↓", UNKNOWN_DIRECTION: "·"}


def markdown_table(specs: Sequence[BenchmarkSpec] | None = None, kinds: Sequence[Importer] | None = None) -> str:
    """The benchmarks as docs/benchmarks.md lists them (default: every registered one, a lab's too): name,
    suite, what it needs of the booted target (with its default params), its params, its import kinds
    and its units (↑ higher is better, ↓ lower, · compared, never a regression)."""
    specs = list(registered().values()) if specs is None else list(specs)
    kinds = list(importers().values()) if kinds is None else list(kinds)
    rows = ["| benchmark | suite | runs on a target with | params | `farm import` | units |",
            "|---|---|---|---|---|---|"]
    for spec in specs:
        runs = what(spec.requires(spec.params.of({}))) if spec.run is not None else "(imported only)"
        params = ", ".join(f"`{name}`" for name in spec.params.info()) or "none"
        imported = ", ".join(f"`{i.name}`" for i in kinds if i.benchmark == spec.name) or "-"
        units = ", ".join(f"{unit} {_ARROWS.get(d, '?')}" for unit, d in spec.units.items())
        rows.append(f"| `{spec.name}` | {spec.suite} | {runs} | {params} | {imported} | {units} |")
    return "\n".join(rows) + "\n"
