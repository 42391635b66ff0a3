"""One record identity: what a value is a measurement *of*, for compare, qualify, history, the store and
the dashboard alike.

    MetricKey.of(record)   # target, setup, suite, benchmark, identity params, metric, unit

A record's params say what was measured and how long: only the first are its identity. A benchmark's
params class says which of its params are run lengths (farm.bench.params: ``duration``, ``seconds``,
``samples``, ``warmup``, ``cooldown``, ...); those, and the counts and indexes a record may carry
(:data:`MEASURED_COUNTS`: a sweep point's sample count ``n``, the ``run`` of an imported capture),
and a sanity rule's remark on a value (:data:`FLAG`), are never part of it, so runs of other lengths join, and two runs of one pipeline give one history
series per point. What stays is identity: the method, the implementation, the point, and how a
cycles/byte figure was found (``cycles=pmu|cpufreq|cpuinfo|nominal``, and ``clock=twin`` when the
counter or clock was a QEMU twin's: such a figure never joins a board's), and which CPU a CPU figure
is of (``cores=board``: the board's cores; ``cores=vcpus``: a guest's vCPUs; a figure written before
records said it is the board's, :func:`key_params`, unless its run.json says its setup was a guest's,
:func:`cpu_scopes_of_run`): a vCPU figure never joins a board's.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterable

import attrs

from farm.measure.clock import UNIT as CYCLES_PER_BYTE
from farm.measure.cpustat import BOARD, CORES, VCPUS, is_cpu_figure
from farm.measure.params import format_params, parse_params

#: counts and indexes records carried in their params (older ones still do): never identity
MEASURED_COUNTS = frozenset({"n", "run"})
#: a remark on a value, not what it measures: the sanity rules' flags (farm.results.sanity), e.g.
#: ``flag=unsettled`` or ``flag=rtt_above_saturation``; a flagged value joins its series, marked
FLAG = "flag"
#: params that say what a setup is, as its name does (the echo ``responder`` a flow started): identity of a
#: series, like the setup, and like the setup left out of a comparison's row, which joins across setups
SETUP_PARAMS = frozenset({"responder"})
#: the param of a cycles/byte figure saying how its cycles were found (farm.measure.isal, farm.results.cycles)
CYCLES = "cycles"
#: the param saying the cycles were a twin's (QEMU's virtual counter or clock), not a board's
CLOCK, TWIN = "clock", "twin"
#: where a run's frequency came from (farm.run.runner.cpu_frequency) -> the cycle source of its cycles/byte
CYCLE_SOURCE_OF_FREQUENCY = {"cpufreq": "cpufreq", "cpuinfo": "cpuinfo", "pipeline": "nominal", "env": "nominal",
                             "setup": "nominal"}


def identity_params(benchmark: str, text: str) -> str:
    """``params`` text of a ``benchmark``'s record without what is not its identity (run lengths,
    measured counts), canonical (farm.measure.params)."""
    from farm.bench.registry import run_length

    return _without(run_length(benchmark) | MEASURED_COUNTS | {FLAG}, text)


def run_length_params(benchmark: str, text: str) -> str:
    """The run-length params of a ``benchmark``'s record (``samples=800;warmup=1.0``), canonical: what
    its identity leaves out, so that farm compare and qualify can say (and refuse) a join of unlike
    lengths (farm.results.ratio.lengths_apart)."""
    from farm.bench.registry import run_length

    keep = run_length(benchmark)
    return format_params({k: v for k, v in parse_params(text).items() if k in keep})


def key_params(benchmark: str, metric: str, text: str) -> str:
    """A record's identity params (:func:`identity_params`), a CPU figure's saying its CPU: one that does
    not (written before records said it; an import of the lab's files) is the board's, ``cores=board``."""
    return _scoped(metric, identity_params(benchmark, text))


@functools.lru_cache(maxsize=65536)
def _scoped(metric: str, text: str) -> str:
    if not is_cpu_figure(metric):
        return text
    params = parse_params(text)
    if CORES in params:
        return text
    return format_params({**params, CORES: BOARD})


@functools.lru_cache(maxsize=65536)
def _without(drop: frozenset[str], text: str) -> str:
    return format_params({k: v for k, v in parse_params(text).items() if k not in drop})


@attrs.frozen(order=True)
class MetricKey:
    """What is measured: one metric of one benchmark, on one target and setup, with its identity params.

    A comparison joins across targets and setups (its columns are those): it keys rows by
    :attr:`measurement`, the key with target and setup left empty."""

    target: str
    setup: str
    suite: str
    benchmark: str
    params: str
    metric: str
    unit: str

    @classmethod
    def of(cls, record: Any) -> "MetricKey":
        """The key of a record (or a store row with the same fields)."""
        return cls(record.target, record.setup, record.suite, record.benchmark,
                   key_params(record.benchmark, record.metric, record.params), record.metric, record.unit)

    @property
    def key(self) -> tuple[str, str, str, str, str, str, str]:
        return (self.target, self.setup, self.suite, self.benchmark, self.params, self.metric, self.unit)

    @property
    def measurement(self) -> "MetricKey":
        """The key alone (of a figure or a series: a subclass's fields dropped)."""
        return MetricKey(*self.key)

    @property
    def anywhere(self) -> "MetricKey":
        """What was measured, wherever: target and setup left empty (a comparison's row), and the params
        that say what the setup is (:data:`SETUP_PARAMS`: a kernel echo and a DPDK echo are one row)."""
        return MetricKey("", "", self.suite, self.benchmark, _without(SETUP_PARAMS, self.params), self.metric,
                         self.unit)

    def on(self, target: str, setup: str = "") -> "MetricKey":
        return attrs.evolve(self.measurement, target=target, setup=setup)

    def label(self) -> str:
        params = f"[{self.params}]" if self.params else ""
        where = "/".join(p for p in (self.target, self.setup) if p)
        return f"{self.suite}.{self.benchmark} {self.metric}{params}" + (f" {where}" if where else "")


def with_cycle_source(records: Iterable[Any], source: str | None, *, twin: bool = False) -> list[Any]:
    """``records`` with their cycles/byte figures saying how their cycles were found: ``cycles=source``
    where a figure does not say already (it came from the run's clock), and ``clock=twin`` on a twin."""
    out = []
    for r in records:
        if r.unit == CYCLES_PER_BYTE:
            params = parse_params(r.params)
            if source and CYCLES not in params:
                params[CYCLES] = source
            if twin:
                params[CLOCK] = TWIN
            r = attrs.evolve(r, params=format_params(params))
        out.append(r)
    return out


def with_cpu_scope(records: Iterable[Any], scope: str | Callable[[Any], str | None]) -> list[Any]:
    """``records`` with their CPU figures saying which CPU they are of (``cores=``) where they do not say
    already: ``scope`` (``board``, ``vcpus``), or per record ``scope(record)`` (None: left as it is)."""
    out = []
    for r in records:
        if is_cpu_figure(r.metric):
            params = parse_params(r.params)
            found = scope(r) if callable(scope) else scope
            if CORES not in params and found:
                r = attrs.evolve(r, params=format_params({**params, CORES: found}))
        out.append(r)
    return out


#: run.json's flow of a boot whose shell was a guest's (farm.guest.flow), before records said their CPU
GUEST_FLOWS = frozenset({"netboot+guest", "netboot+guest+dpdk"})


def cpu_scopes_of_run(info: Any) -> dict[tuple[str, str], str]:
    """(target, setup) -> the CPU its shell's figures were of, from a run's run.json: ``vcpus`` for a
    boot of a guest flow, ``board`` for any other; for records written before they said it."""
    found: dict[tuple[str, str], str] = {}
    targets = info.get("targets") if isinstance(info, dict) else None
    for target, entry in (targets.items() if isinstance(targets, dict) else ()):
        for boot in ((entry or {}).get("boots") or [] if isinstance(entry, dict) else []):
            if isinstance(boot, dict) and "setup" in boot:
                scope = VCPUS if boot.get("flow") in GUEST_FLOWS else BOARD
                found.setdefault((str(target), str(boot["setup"])), scope)
    return found


def with_cpu_scope_of_run(records: Iterable[Any], info: Any) -> list[Any]:
    """:func:`with_cpu_scope` by run.json (:func:`cpu_scopes_of_run`): what an older run's records meant."""
    scopes = cpu_scopes_of_run(info)
    return with_cpu_scope(records, lambda r: scopes.get((r.target, r.setup)))
