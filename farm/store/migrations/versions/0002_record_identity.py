"""one record identity: params text escaped and canonical, cycle sources recorded, figures keyed by identity

Revision ID: 0002
Revises: 0001

What the store held before this revision, made what a new ingest would make of it:

* ``records.params``: the canonical, escaped text (farm.measure.params): an older value holding ``;``
  (``cpus=0;1`` from the pytest plugin) is one value again; a cycles/byte record of the run's clock
  (no ``cycles=``) says its source (``cycles=cpufreq|cpuinfo|nominal``), from the boot record of its
  target and setup in the run's run.json (an import's ``--frequency``: nominal);
* ``figures``: made again from the records, keyed by their identity params: without run lengths
  (``duration``, ``seconds``, ``samples``, ``warmup``, ``cooldown``, iperf3's ``omit``) and measured
  counts (a sweep point's ``n``, a capture's ``run``), so two runs of one pipeline are one history
  series per point.

The rules are the ones of this revision, written here (a later farm's registry may declare more).
Downgrading keeps the records' new text and the figures (0001's schema reads them).
"""

from __future__ import annotations

import json
import math

import sqlalchemy as sa
from alembic import op

from farm.measure.params import format_params, parse_params

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

#: run lengths by benchmark, as registered when this revision was written; others: _RUN_LENGTH
_RUN_LENGTHS = {"sweep": {"duration", "samples", "warmup", "cooldown"}, "iperf3": {"duration", "omit"},
                "openssl-speed": {"seconds"}, "isal": {"seconds"}}
_RUN_LENGTH = {"duration", "seconds", "samples", "warmup", "cooldown"}
_COUNTS = {"n", "run"}
_SOURCE = {"cpufreq": "cpufreq", "cpuinfo": "cpuinfo", "pipeline": "nominal", "env": "nominal", "given": "nominal"}
_FIGURE_KEY = ("target", "setup", "suite", "benchmark", "params", "metric", "unit", "kernel", "image_key", "git_sha")

_runs = sa.table("runs", sa.column("id"), sa.column("run_id"), sa.column("started"), sa.column("info"))
_records = sa.table("records", *(sa.column(c) for c in (
    "id", "run", "target", "setup", "suite", "benchmark", "params", "metric", "value", "unit", "kernel", "image_key",
    "git_sha", "started")))
_figures = sa.table("figures", *(sa.column(c) for c in (
    "run", "run_id", "started", *_FIGURE_KEY, "n", "median", "lo", "hi", "interval", "values")))


def _sources(info_text: str) -> dict[tuple[str, str], str]:
    """(target, setup) -> the cycle source of its run's clock, from run.json."""
    try:
        info = json.loads(info_text)
    except ValueError:
        return {}
    found: dict[tuple[str, str], str] = {}
    if isinstance(info, dict) and info.get("frequency_source") in _SOURCE:  # an import's --frequency
        found[("*", "*")] = _SOURCE[info["frequency_source"]]
    targets = info.get("targets") if isinstance(info, dict) else None
    for target, entry in (targets.items() if isinstance(targets, dict) else ()):
        for boot in (entry or {}).get("boots") or [] if isinstance(entry, dict) else []:
            if isinstance(boot, dict) and boot.get("frequency_source") in _SOURCE:
                found.setdefault((str(target), str(boot.get("setup", ""))), _SOURCE[boot["frequency_source"]])
    return found


def _params(row, sources: dict[tuple[str, str], str]) -> str:
    params = parse_params(row.params)
    if row.unit == "cycles/byte" and "cycles" not in params:
        source = sources.get((row.target, row.setup)) or sources.get(("*", "*"))
        if source:
            params["cycles"] = source
    return format_params(params)


def _identity(benchmark: str, text: str) -> str:
    drop = _RUN_LENGTHS.get(benchmark, _RUN_LENGTH) | _COUNTS
    return format_params({k: v for k, v in parse_params(text).items() if k not in drop})


def upgrade() -> None:
    from farm.results.stats import median
    from farm.store.history import median_interval

    connection = op.get_bind()
    runs = connection.execute(sa.select(_runs.c.id, _runs.c.run_id, _runs.c.started, _runs.c.info)).all()
    for run in runs:
        sources = _sources(run.info)
        rows = connection.execute(sa.select(_records).where(_records.c.run == run.id).order_by(_records.c.id)).all()
        groups: dict[tuple, list[float]] = {}
        for row in rows:
            text = _params(row, sources)
            if text != row.params:
                connection.execute(sa.update(_records).where(_records.c.id == row.id).values(params=text))
            if row.metric == "failed" or not math.isfinite(row.value):
                continue
            values = {**row._mapping, "params": _identity(row.benchmark, text)}
            groups.setdefault(tuple(values[k] for k in _FIGURE_KEY), []).append(row.value)
        connection.execute(sa.delete(_figures).where(_figures.c.run == run.id))
        figures = []
        for key, values in groups.items():
            lo, hi, interval = median_interval(values)
            figures.append({**dict(zip(_FIGURE_KEY, key)), "run": run.id, "run_id": run.run_id, "started": run.started,
                            "n": len(values), "median": median(values), "lo": lo, "hi": hi, "interval": interval,
                            "values": json.dumps(values)})
        if figures:
            connection.execute(sa.insert(_figures), figures)


def downgrade() -> None:
    pass
