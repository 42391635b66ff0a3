"""reproductions: a run that reproduces another (farm reproduce), with its verdict

One row per reproduction run (its run directory's reproduction.json, read at ingest), keyed by the
run, indexed by the original's run id: a run's page lists its reproductions, farm history shows them
beside the original. No run stored before this revision is a reproduction: nothing to fill.

Revision ID: 0005
Revises: 0004
"""

from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'reproductions',
        sa.Column('run', sa.Integer(), nullable=False),
        sa.Column('original_run_id', sa.String(length=200), nullable=False),
        sa.Column('verdict', sa.String(length=40), nullable=False),
        sa.Column('reproduced', sa.Integer(), nullable=False),
        sa.Column('not_reproduced', sa.Integer(), nullable=False),
        sa.Column('not_measured', sa.Integer(), nullable=False),
        sa.Column('threshold', sa.Float(), nullable=False),
        sa.Column('headline', sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(['run'], ['runs.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('run'),
    )
    op.create_index('ix_reproductions_original', 'reproductions', ['original_run_id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_reproductions_original', table_name='reproductions')
    op.drop_table('reproductions')
