"""metrics.txt: a run's key figures' medians in the OpenMetrics text format that GitLab's metrics report
(``artifacts:reports:metrics``) compares between a merge request and its target branch:
``farm_<suite>_<benchmark>_<metric>{target="…",setup="…",params="…"} <median>``.

GitLab's parser (``Gitlab::Ci::Parsers::Metrics::Generic``) deletes everything from a ``#`` to the
end of the line and then shell-splits what is left, taking the first word as the name and the
second as the value (kept as a string). So ``# TYPE``/``# HELP``/``# EOF`` lines are invisible to
it, label values must never contain ``#`` (the line would lose its closing quote and the whole
report would fail to parse): :func:`label_value` writes ``#`` as ``%23``. Values are written with
``repr`` (shortest round-trip text) so an unchanged median compares equal as a string.
"""

from __future__ import annotations

import math
import re
from typing import Iterable

from farm.results.figures import key_figures
from farm.results.record import Record
from farm.results.stats import median

_NAME_JUNK = re.compile(r"[^a-zA-Z0-9_]+")


def metric_name(suite: str, benchmark: str, metric: str) -> str:
    """``farm_<suite>_<benchmark>_<metric>``, lower case, every run of other characters one ``_``
    (a valid OpenMetrics/Prometheus name, ``[a-zA-Z_][a-zA-Z0-9_]*``, no colons)."""
    parts = [_NAME_JUNK.sub("_", p).strip("_").lower() for p in ("farm", suite, benchmark, metric)]
    return "_".join(p for p in parts if p)


def label_value(text: str) -> str:
    """A label value in double quotes: OpenMetrics escapes (backslash, quote, line feed), and ``#``
    as ``%23`` since GitLab's parser cuts every line at the first ``#``."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("#", "%23")
    return f'"{escaped}"'


def _help_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def metrics_text(records: Iterable[Record]) -> str:
    """The OpenMetrics exposition of the key figures' medians (one gauge family per
    suite/benchmark/metric, one sample per target, setup and params), ending in ``# EOF``.

    A family has one unit, named in its HELP line; should one metric come in two units, each unit
    gets a family of its own, named with the unit as a suffix.
    """
    by_unit: dict[tuple[str, str], dict[tuple[str, str, str], list[float]]] = {}
    descriptions: dict[str, str] = {}
    for f in key_figures(records):
        name = metric_name(f.suite, f.benchmark, f.metric)
        descriptions.setdefault(name, f"{f.suite} {f.benchmark} {f.metric}")
        by_unit.setdefault((name, f.unit), {}).setdefault((f.target, f.setup, f.params), []).extend(f.values)
    units_of: dict[str, int] = {}
    for name, _ in by_unit:
        units_of[name] = units_of.get(name, 0) + 1
    lines = []
    for (base, unit), samples in sorted(by_unit.items(), key=lambda item: item[0]):
        name = base if units_of[base] == 1 else f"{base}_{_NAME_JUNK.sub('_', unit).strip('_').lower() or 'unitless'}"
        lines.append(f"# TYPE {name} gauge")
        in_unit = f"in {_help_text(unit)}" if unit else "no unit"
        lines.append(f"# HELP {name} {_help_text(descriptions[base])}, median over repeats, {in_unit}")
        for (target, setup, params), values in sorted(samples.items()):
            labels = ",".join(f"{k}={label_value(v)}" for k, v in
                              (("target", target), ("setup", setup), ("params", params)))
            lines.append(f"{name}{{{labels}}} {_number(median(values))}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"
