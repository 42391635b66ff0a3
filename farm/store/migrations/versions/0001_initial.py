"""initial schema: runs, stages, records, figures, boots, artifacts, images, consoles, qualifications

Revision ID: 0001
Revises: 
"""

from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('qualifications',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('path', sa.String(length=2000), nullable=False),
    sa.Column('baseline', sa.String(length=2000), nullable=False),
    sa.Column('candidate_run_id', sa.String(length=200), nullable=False),
    sa.Column('passed', sa.Boolean(), nullable=False),
    sa.Column('headline', sa.Text(), nullable=False),
    sa.Column('created', sa.String(length=40), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('path')
    )
    op.create_table('runs',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('run_id', sa.String(length=200), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('status', sa.String(length=40), nullable=False),
    sa.Column('who', sa.String(length=200), server_default='', nullable=False),
    sa.Column('started', sa.String(length=40), nullable=False),
    sa.Column('finished', sa.String(length=40), nullable=True),
    sa.Column('duration_s', sa.Float(), nullable=True),
    sa.Column('pipeline', sa.String(length=500), server_default='', nullable=False),
    sa.Column('targets', sa.String(length=1000), server_default='', nullable=False),
    sa.Column('setups', sa.String(length=1000), server_default='', nullable=False),
    sa.Column('images', sa.String(length=1000), server_default='', nullable=False),
    sa.Column('kernels', sa.String(length=1000), server_default='', nullable=False),
    sa.Column('git_sha', sa.String(length=64), server_default='', nullable=False),
    sa.Column('farm_version', sa.String(length=40), server_default='', nullable=False),
    sa.Column('ci_job', sa.String(length=500), server_default='', nullable=False),
    sa.Column('stopped_at', sa.String(length=500), server_default='', nullable=False),
    sa.Column('junit', sa.String(length=40), server_default='', nullable=False),
    sa.Column('path', sa.String(length=2000), nullable=False),
    sa.Column('info', sa.Text(), nullable=False),
    sa.Column('ingested', sa.String(length=40), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id')
    )
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.create_index('ix_runs_started', ['started'], unique=False)

    op.create_table('artifacts',
    sa.Column('run', sa.Integer(), nullable=False),
    sa.Column('path', sa.String(length=2000), nullable=False),
    sa.Column('size', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['run'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run', 'path')
    )
    op.create_table('boots',
    sa.Column('run', sa.Integer(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('target', sa.String(length=200), nullable=False),
    sa.Column('setup', sa.String(length=200), nullable=False),
    sa.Column('repeat', sa.Integer(), nullable=False),
    sa.Column('kernel', sa.String(length=200), nullable=False),
    sa.Column('image', sa.String(length=200), nullable=False),
    sa.Column('image_key', sa.String(length=64), nullable=False),
    sa.Column('cpus', sa.Integer(), nullable=True),
    sa.Column('frequency_hz', sa.Float(), nullable=True),
    sa.Column('boot_seconds', sa.Float(), nullable=True),
    sa.ForeignKeyConstraint(['run'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run', 'position')
    )
    op.create_table('consoles',
    sa.Column('run', sa.Integer(), nullable=False),
    sa.Column('target', sa.String(length=200), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('truncated', sa.Boolean(), nullable=False),
    sa.ForeignKeyConstraint(['run'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run', 'target')
    )
    op.create_table('figures',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('run', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.String(length=200), nullable=False),
    sa.Column('started', sa.String(length=40), nullable=False),
    sa.Column('target', sa.String(length=200), nullable=False),
    sa.Column('setup', sa.String(length=200), nullable=False),
    sa.Column('suite', sa.String(length=100), nullable=False),
    sa.Column('benchmark', sa.String(length=100), nullable=False),
    sa.Column('params', sa.String(length=1000), nullable=False),
    sa.Column('metric', sa.String(length=200), nullable=False),
    sa.Column('unit', sa.String(length=40), nullable=False),
    sa.Column('kernel', sa.String(length=200), nullable=False),
    sa.Column('image_key', sa.String(length=64), nullable=False),
    sa.Column('git_sha', sa.String(length=64), nullable=False),
    sa.Column('n', sa.Integer(), nullable=False),
    sa.Column('median', sa.Float(), nullable=False),
    sa.Column('lo', sa.Float(), nullable=False),
    sa.Column('hi', sa.Float(), nullable=False),
    sa.Column('interval', sa.String(length=10), nullable=False),
    sa.Column('values', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['run'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('figures', schema=None) as batch_op:
        batch_op.create_index('ix_figures_metric', ['metric', 'benchmark', 'target', 'setup', 'started', 'suite',
                                                     'params', 'unit', 'run_id', 'kernel', 'image_key', 'git_sha',
                                                     'n', 'median', 'lo', 'hi', 'interval', 'id'], unique=False)
        batch_op.create_index('ix_figures_run', ['run'], unique=False)

    op.create_table('images',
    sa.Column('run', sa.Integer(), nullable=False),
    sa.Column('image', sa.String(length=200), nullable=False),
    sa.Column('artifact', sa.String(length=200), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('image_key', sa.String(length=64), nullable=False),
    sa.Column('kernel', sa.String(length=200), nullable=False),
    sa.ForeignKeyConstraint(['run'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run', 'image', 'artifact')
    )
    with op.batch_alter_table('images', schema=None) as batch_op:
        batch_op.create_index('ix_images_sha256', ['sha256'], unique=False)

    op.create_table('records',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('run', sa.Integer(), nullable=False),
    sa.Column('timestamp', sa.String(length=40), nullable=False),
    sa.Column('target', sa.String(length=200), nullable=False),
    sa.Column('arch', sa.String(length=40), nullable=False),
    sa.Column('setup', sa.String(length=200), nullable=False),
    sa.Column('image', sa.String(length=200), nullable=False),
    sa.Column('suite', sa.String(length=100), nullable=False),
    sa.Column('benchmark', sa.String(length=100), nullable=False),
    sa.Column('params', sa.String(length=1000), nullable=False),
    sa.Column('repeat', sa.Integer(), nullable=False),
    sa.Column('metric', sa.String(length=200), nullable=False),
    sa.Column('value', sa.Float(), nullable=False),
    sa.Column('unit', sa.String(length=40), nullable=False),
    sa.Column('kernel', sa.String(length=200), server_default='', nullable=False),
    sa.Column('image_key', sa.String(length=64), server_default='', nullable=False),
    sa.Column('git_sha', sa.String(length=64), server_default='', nullable=False),
    sa.Column('started', sa.String(length=40), nullable=False),
    sa.ForeignKeyConstraint(['run'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('records', schema=None) as batch_op:
        batch_op.create_index('ix_records_metric', ['metric', 'benchmark'], unique=False)
        batch_op.create_index('ix_records_run', ['run'], unique=False)

    op.create_table('stages',
    sa.Column('run', sa.Integer(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=500), nullable=False),
    sa.Column('classname', sa.String(length=200), nullable=False),
    sa.Column('seconds', sa.Float(), nullable=True),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['run'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run', 'position')
    )


def downgrade() -> None:
    op.drop_table('stages')
    with op.batch_alter_table('records', schema=None) as batch_op:
        batch_op.drop_index('ix_records_run')
        batch_op.drop_index('ix_records_metric')

    op.drop_table('records')
    with op.batch_alter_table('images', schema=None) as batch_op:
        batch_op.drop_index('ix_images_sha256')

    op.drop_table('images')
    with op.batch_alter_table('figures', schema=None) as batch_op:
        batch_op.drop_index('ix_figures_run')
        batch_op.drop_index('ix_figures_metric')

    op.drop_table('figures')
    op.drop_table('consoles')
    op.drop_table('boots')
    op.drop_table('artifacts')
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_index('ix_runs_started')

    op.drop_table('runs')
    op.drop_table('qualifications')
