"""CPU figures say which CPU they are of: cores=board (the board's cores) or cores=vcpus (a guest's)

Revision ID: 0007
Revises: 0006

A target's CPU figures (a sweep's ``cpu_utilisation``, ``cpu<N>_utilisation``, the CPU target's
``idle_cycles``/``total_cycles``/``counter_frequency``, iperf3's ``remote_cpu``) stored before this
revision do not say which CPU they were of. What they were: a guest setup's (run.json: a boot of the
flow ``netboot+guest``, or ``netboot+guest+dpdk``) its vCPUs' (the guest's /proc/stat, the CPU target in the guest), any other
the board's. This revision writes it into ``records.params`` and ``figures.params`` (the canonical,
escaped text, farm.measure.params), so that a vCPU figure never joins a board's series and the
board's figures of before join the new ones (farm.results.identity.key_params). The rules are the
ones of this revision, written here. Downgrading keeps the params (0006's schema reads them).
"""

from __future__ import annotations

import json
import re

import sqlalchemy as sa
from alembic import op

from farm.measure.params import format_params, parse_params

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

_FIGURES = {"cpu_utilisation", "idle_cycles", "total_cycles", "counter_frequency", "remote_cpu"}
_PER_CORE = re.compile(r"cpu\d+_utilisation")
_GUEST_FLOWS = {"netboot+guest", "netboot+guest+dpdk"}

_runs = sa.table("runs", sa.column("id"), sa.column("info"))
_records = sa.table("records", sa.column("id"), sa.column("run"), sa.column("target"), sa.column("setup"),
                    sa.column("params"), sa.column("metric"))
_figures = sa.table("figures", sa.column("id"), sa.column("run"), sa.column("target"), sa.column("setup"),
                    sa.column("params"), sa.column("metric"))


def _scopes(info_text: str) -> dict[tuple[str, str], str]:
    """(target, setup) -> the CPU its shell's figures were of, from run.json's boots."""
    try:
        info = json.loads(info_text)
    except ValueError:
        return {}
    found: dict[tuple[str, str], str] = {}
    targets = info.get("targets") if isinstance(info, dict) else None
    for target, entry in (targets.items() if isinstance(targets, dict) else ()):
        for boot in ((entry or {}).get("boots") or [] if isinstance(entry, dict) else []):
            if isinstance(boot, dict) and "setup" in boot:
                found.setdefault((str(target), str(boot["setup"])),
                                 "vcpus" if boot.get("flow") in _GUEST_FLOWS else "board")
    return found


def _scoped(row, scopes: dict[tuple[str, str], str]) -> str | None:
    """The row's params saying its CPU, or None when it is no CPU figure or says it already."""
    if row.metric not in _FIGURES and not _PER_CORE.fullmatch(row.metric):
        return None
    params = parse_params(row.params)
    if "cores" in params:
        return None
    params["cores"] = scopes.get((row.target, row.setup), "board")
    return format_params(params)


def upgrade() -> None:
    connection = op.get_bind()
    for run in connection.execute(sa.select(_runs.c.id, _runs.c.info)).all():
        scopes = _scopes(run.info)
        for table in (_records, _figures):
            rows = connection.execute(sa.select(table.c.id, table.c.target, table.c.setup, table.c.params,
                                                table.c.metric).where(table.c.run == run.id)).all()
            for row in rows:
                if (text := _scoped(row, scopes)) is not None:
                    connection.execute(sa.update(table).where(table.c.id == row.id).values(params=text))


def downgrade() -> None:
    pass
