"""records.value may be NULL: a record whose value is NaN (not measured)

SQLite stores a NaN as NULL, which the NOT NULL column refused (exit 3 "NOT NULL constraint"), while
PostgreSQL kept it as 'NaN': the two stores disagreed. Now both store NaN as NULL, and farm reads
NULL back as NaN (farm.store.ingest); infinities are stored as they are by both.

Revision ID: 0006
Revises: 0005
"""

from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('records', schema=None) as batch_op:
        batch_op.alter_column('value', existing_type=sa.Float(), nullable=True)


def downgrade() -> None:
    op.execute("DELETE FROM records WHERE value IS NULL")
    with op.batch_alter_table('records', schema=None) as batch_op:
        batch_op.alter_column('value', existing_type=sa.Float(), nullable=False)
