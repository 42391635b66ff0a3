"""The store's tables (SQLAlchemy Core): one schema for SQLite and PostgreSQL.

A run is keyed by its ``run_id`` (unique): ingesting a run again replaces it, so the same run twice
is one run. Records carry the kernel, the image key and the git sha of their boot and run
(denormalised at ingest). ``figures`` holds, per run and measurement, what a history point needs
(n, median, interval and the values), made once at ingest: a trend of 10,000 runs reads 10,000
rows through one index instead of every record. Times are ISO
8601 UTC text (``2026-12-01T08:42:32.395+00:00``), which sorts chronologically in both databases.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

#: how long a console log the store keeps, per target (the tail: where a run ends is where it failed)
CONSOLE_KEEP_CHARS = 256 * 1024

runs = sa.Table(
    "runs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(200), nullable=False, unique=True),
    sa.Column("kind", sa.String(20), nullable=False),          # live | import
    sa.Column("status", sa.String(40), nullable=False),        # passed | failed | ... | imported
    sa.Column("who", sa.String(200), nullable=False, server_default=""),
    sa.Column("started", sa.String(40), nullable=False),
    sa.Column("finished", sa.String(40), nullable=True),
    sa.Column("duration_s", sa.Float, nullable=True),
    sa.Column("pipeline", sa.String(500), nullable=False, server_default=""),
    sa.Column("targets", sa.String(1000), nullable=False, server_default=""),
    sa.Column("setups", sa.String(1000), nullable=False, server_default=""),
    sa.Column("images", sa.String(1000), nullable=False, server_default=""),
    sa.Column("kernels", sa.String(1000), nullable=False, server_default=""),
    sa.Column("git_sha", sa.String(64), nullable=False, server_default=""),
    sa.Column("farm_version", sa.String(40), nullable=False, server_default=""),
    sa.Column("ci_job", sa.String(500), nullable=False, server_default=""),
    sa.Column("stopped_at", sa.String(500), nullable=False, server_default=""),
    sa.Column("junit", sa.String(40), nullable=False, server_default=""),  # pass | failure | error | none
    sa.Column("path", sa.String(2000), nullable=False),
    sa.Column("info", sa.Text, nullable=False),                # run.json as it was, JSON text
    sa.Column("ingested", sa.String(40), nullable=False),
    # the farm place it ran on (run.json's place.name; "" off the farm): the runs list's filter, a place's page
    sa.Column("place", sa.String(200), nullable=False, server_default=""),
)
sa.Index("ix_runs_started", runs.c.started)
sa.Index("ix_runs_place", runs.c.place, runs.c.started)

stages = sa.Table(
    "stages", metadata,
    sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("name", sa.String(500), nullable=False),
    sa.Column("classname", sa.String(200), nullable=False),
    sa.Column("seconds", sa.Float, nullable=True),
    sa.Column("kind", sa.String(20), nullable=False),
    sa.Column("message", sa.Text, nullable=False),
    sa.PrimaryKeyConstraint("run", "position"),
)

records = sa.Table(
    "records", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("timestamp", sa.String(40), nullable=False),
    sa.Column("target", sa.String(200), nullable=False),
    sa.Column("arch", sa.String(40), nullable=False),
    sa.Column("setup", sa.String(200), nullable=False),
    sa.Column("image", sa.String(200), nullable=False),
    sa.Column("suite", sa.String(100), nullable=False),
    sa.Column("benchmark", sa.String(100), nullable=False),
    sa.Column("params", sa.String(1000), nullable=False),
    sa.Column("repeat", sa.Integer, nullable=False),
    sa.Column("metric", sa.String(200), nullable=False),
    sa.Column("value", sa.Float, nullable=False),
    sa.Column("unit", sa.String(40), nullable=False),
    sa.Column("kernel", sa.String(200), nullable=False, server_default=""),
    sa.Column("image_key", sa.String(64), nullable=False, server_default=""),
    sa.Column("git_sha", sa.String(64), nullable=False, server_default=""),
    sa.Column("started", sa.String(40), nullable=False),       # the run's, for ordering a trend by time
)
sa.Index("ix_records_run", records.c.run)
sa.Index("ix_records_metric", records.c.metric, records.c.benchmark)

figures = sa.Table(
    "figures", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("run_id", sa.String(200), nullable=False),
    sa.Column("started", sa.String(40), nullable=False),
    sa.Column("target", sa.String(200), nullable=False),
    sa.Column("setup", sa.String(200), nullable=False),
    sa.Column("suite", sa.String(100), nullable=False),
    sa.Column("benchmark", sa.String(100), nullable=False),
    sa.Column("params", sa.String(1000), nullable=False),
    sa.Column("metric", sa.String(200), nullable=False),
    sa.Column("unit", sa.String(40), nullable=False),
    sa.Column("kernel", sa.String(200), nullable=False),
    sa.Column("image_key", sa.String(64), nullable=False),
    sa.Column("git_sha", sa.String(64), nullable=False),
    sa.Column("n", sa.Integer, nullable=False),
    sa.Column("median", sa.Float, nullable=False),
    sa.Column("lo", sa.Float, nullable=False),
    sa.Column("hi", sa.Float, nullable=False),
    sa.Column("interval", sa.String(10), nullable=False),
    sa.Column("values", sa.Text, nullable=False),              # JSON list: pooled when points join runs
)
# the history query: one metric (of a benchmark), narrowed by target/setup, ordered by time; it holds
# every column the query reads but the values, so the query reads the index alone (4x faster)
sa.Index("ix_figures_metric", figures.c.metric, figures.c.benchmark, figures.c.target, figures.c.setup,
         figures.c.started, figures.c.suite, figures.c.params, figures.c.unit, figures.c.run_id, figures.c.kernel,
         figures.c.image_key, figures.c.git_sha, figures.c.n, figures.c.median, figures.c.lo, figures.c.hi,
         figures.c.interval, figures.c.id)
sa.Index("ix_figures_run", figures.c.run)

boots = sa.Table(
    "boots", metadata,
    sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("target", sa.String(200), nullable=False),
    sa.Column("setup", sa.String(200), nullable=False),
    sa.Column("repeat", sa.Integer, nullable=False),
    sa.Column("kernel", sa.String(200), nullable=False),
    sa.Column("image", sa.String(200), nullable=False),
    sa.Column("image_key", sa.String(64), nullable=False),
    sa.Column("cpus", sa.Integer, nullable=True),
    sa.Column("frequency_hz", sa.Float, nullable=True),
    sa.Column("boot_seconds", sa.Float, nullable=True),
    sa.PrimaryKeyConstraint("run", "position"),
)

artifacts = sa.Table(
    "artifacts", metadata,
    sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("path", sa.String(2000), nullable=False),        # relative to the run directory
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.PrimaryKeyConstraint("run", "path"),
)

images = sa.Table(
    "images", metadata,
    sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("image", sa.String(200), nullable=False),
    sa.Column("artifact", sa.String(200), nullable=False),
    sa.Column("sha256", sa.String(64), nullable=False),
    sa.Column("image_key", sa.String(64), nullable=False),
    sa.Column("kernel", sa.String(200), nullable=False),
    sa.PrimaryKeyConstraint("run", "image", "artifact"),
)
sa.Index("ix_images_sha256", images.c.sha256)

consoles = sa.Table(
    "consoles", metadata,
    sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("target", sa.String(200), nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("truncated", sa.Boolean, nullable=False),
    sa.PrimaryKeyConstraint("run", "target"),
)

qualifications = sa.Table(
    "qualifications", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("path", sa.String(2000), nullable=False, unique=True),  # the qualify --out directory
    sa.Column("baseline", sa.String(2000), nullable=False),
    sa.Column("candidate_run_id", sa.String(200), nullable=False),
    sa.Column("passed", sa.Boolean, nullable=False),
    sa.Column("headline", sa.Text, nullable=False),
    sa.Column("created", sa.String(40), nullable=False),
)

#: a run that reproduces another (``farm reproduce``: its run directory's reproduction.json), with the verdict
reproductions = sa.Table(
    "reproductions", metadata,
    sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("original_run_id", sa.String(200), nullable=False),
    sa.Column("verdict", sa.String(40), nullable=False),       # reproduced | not reproduced
    sa.Column("reproduced", sa.Integer, nullable=False),       # figures
    sa.Column("not_reproduced", sa.Integer, nullable=False),
    sa.Column("not_measured", sa.Integer, nullable=False),
    sa.Column("threshold", sa.Float, nullable=False),
    sa.Column("headline", sa.Text, nullable=False),
)
sa.Index("ix_reproductions_original", reproductions.c.original_run_id)
