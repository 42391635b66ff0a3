"""runs.place: the farm place a run ran on (run.json's place.name), indexed with the start time

The runs list filters on it and a place's page lists its runs, newest first, at 10,000 runs and more:
reading every run's run.json text for that would scan the whole table. Filled from the stored run.json
of the runs already in the store.

Revision ID: 0004
Revises: 0002
"""

import json

from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0002'
branch_labels = None
depends_on = None


def _place(info: str) -> str:
    try:
        place = json.loads(info).get("place")
    except (ValueError, AttributeError):
        return ""
    name = place.get("name") if isinstance(place, dict) else None
    return name[:200] if isinstance(name, str) else ""


def upgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('place', sa.String(length=200), server_default='', nullable=False))
        batch_op.create_index('ix_runs_place', ['place', 'started'], unique=False)
    runs = sa.table('runs', sa.column('id', sa.Integer), sa.column('info', sa.Text), sa.column('place', sa.String))
    bind = op.get_bind()
    rows = bind.execute(sa.select(runs.c.id, runs.c.info).where(runs.c.info.like('%"place": {%'))).all()
    for run_id, info in rows:
        if name := _place(info):
            bind.execute(sa.update(runs).where(runs.c.id == run_id).values(place=name))


def downgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_index('ix_runs_place')
        batch_op.drop_column('place')
